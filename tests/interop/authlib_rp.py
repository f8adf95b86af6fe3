"""A relying party built on Python's authlib, run against a live Tessera.

Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD, REDIRECT_URI,
POST_LOGOUT_URI. Exits non-zero with a message on the first step that fails.
"""

import os
from urllib.parse import parse_qs, urlparse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from rp_common import browser_login, checker

env = os.environ
ISSUER, REDIRECT = env["ISSUER"], env["REDIRECT_URI"]


check = checker("authlib interop")


meta = requests.get(f"{ISSUER}/.well-known/openid-configuration").json()
check(meta["issuer"] == ISSUER, "discovery issuer")
keys = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"]).json())

rp = OAuth2Session(
    env["CLIENT_ID"],
    env["CLIENT_SECRET"],
    scope="openid profile email offline_access",
    redirect_uri=REDIRECT,
    code_challenge_method="S256",
    token_endpoint_auth_method="client_secret_basic",
)
verifier, nonce = generate_token(48), generate_token(20)
url, state = rp.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
browser, callback = browser_login(ISSUER, url, env["USERNAME"], env["PASSWORD"], check)
check(parse_qs(urlparse(callback).query).get("iss") == [ISSUER], "RFC 9207 iss in the response")

token = rp.fetch_token(meta["token_endpoint"], authorization_response=callback, code_verifier=verifier)
claims = jwt.decode(token["id_token"], keys, claims_options={
    "iss": {"essential": True, "value": ISSUER},
    "aud": {"essential": True, "value": env["CLIENT_ID"]},
    "nonce": {"essential": True, "value": nonce},
})
claims.validate()
check(claims["preferred_username"] == env["USERNAME"], "preferred_username in the ID token")

info = rp.get(meta["userinfo_endpoint"]).json()
check(info["sub"] == claims["sub"], "userinfo sub matches the ID token")

refreshed = rp.refresh_token(meta["token_endpoint"])
check(refreshed["refresh_token"] != token["refresh_token"], "refresh token rotated")

introspected = rp.introspect_token(meta["introspection_endpoint"], token=refreshed["access_token"]).json()
check(introspected["active"] is True and introspected["sub"] == claims["sub"], f"introspection {introspected}")

logout = browser.get(meta["end_session_endpoint"], params={
    "id_token_hint": refreshed["id_token"],
    "post_logout_redirect_uri": env["POST_LOGOUT_URI"],
    "state": "bye",
}, allow_redirects=False)
check(logout.status_code == 302, f"logout status {logout.status_code}")
check(logout.headers["Location"] == env["POST_LOGOUT_URI"] + "?state=bye", "logout redirect")
after = rp.introspect_token(meta["introspection_endpoint"], token=refreshed["access_token"]).json()
check(after["active"] is True, "an offline_access grant outlives the browser session")

revoked = rp.revoke_token(meta["revocation_endpoint"], token=refreshed["refresh_token"])
check(revoked.status_code == 200, "revocation")
print("authlib interop: ok")
