"""authlib with the second protocol wave against a live Tessera: a request object
(RFC 9101) signed with authlib's JOSE, pushed to the PAR endpoint (RFC 9126) with
authlib's client authentication, then the code flow on the returned request_uri.
authlib has no DPoP client; DPoP interop is openid-client's script.

Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD, REDIRECT_URI,
SIGNING_JWK (the client's private RSA key as a JWK with its kid).
"""

import json
import os
import time
from urllib.parse import urlencode

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from rp_common import browser_login, checker

check = checker("authlib wave-2 interop")
env = os.environ
ISSUER, REDIRECT, CLIENT_ID = env["ISSUER"], env["REDIRECT_URI"], env["CLIENT_ID"]

meta = requests.get(f"{ISSUER}/.well-known/oauth-authorization-server").json()
check(meta["issuer"] == ISSUER, "RFC 8414 metadata issuer")
check(meta["request_parameter_supported"] is True, "request objects advertised")
keys = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"]).json())

rp = OAuth2Session(
    CLIENT_ID,
    env["CLIENT_SECRET"],
    scope="openid profile email",
    redirect_uri=REDIRECT,
    token_endpoint_auth_method="client_secret_basic",
)
signing = json.loads(env["SIGNING_JWK"])
verifier, nonce, state = generate_token(48), generate_token(20), generate_token(20)
now = int(time.time())
request_object = jwt.encode(
    {"alg": "RS256", "kid": signing["kid"], "typ": "oauth-authz-req+jwt"},
    {
        "iss": CLIENT_ID,
        "aud": ISSUER,
        "client_id": CLIENT_ID,
        "iat": now,
        "nbf": now,
        "exp": now + 60,
        "jti": generate_token(16),
        "response_type": "code",
        "redirect_uri": REDIRECT,
        "scope": "openid profile email",
        "state": state,
        "nonce": nonce,
        "code_challenge": create_s256_code_challenge(verifier),
        "code_challenge_method": "S256",
    },
    JsonWebKey.import_key(signing),
).decode()

pushed = rp.post(
    meta["pushed_authorization_request_endpoint"],
    data={"client_id": CLIENT_ID, "request": request_object},
    auth=rp.client_auth("client_secret_basic"),
    withhold_token=True,
)
check(pushed.status_code == 201, f"PAR status {pushed.status_code}: {pushed.text}")
body = pushed.json()
check(body["expires_in"] == 60, "a pushed request lives 60 s")
url = meta["authorization_endpoint"] + "?" + urlencode({"client_id": CLIENT_ID, "request_uri": body["request_uri"]})
browser, callback = browser_login(ISSUER, url, env["USERNAME"], env["PASSWORD"], check)
check(f"state={state}" in callback, "state from the request object")

token = rp.fetch_token(meta["token_endpoint"], authorization_response=callback, code_verifier=verifier)
claims = jwt.decode(token["id_token"], keys, claims_options={
    "iss": {"essential": True, "value": ISSUER},
    "aud": {"essential": True, "value": CLIENT_ID},
    "nonce": {"essential": True, "value": nonce},
})
claims.validate()
check(claims["preferred_username"] == env["USERNAME"], "preferred_username in the ID token")

# Used once: without its parameters there is no redirect URI to trust, so a page says so.
again = browser.get(url, allow_redirects=False)
check(again.status_code == 400 and "Location" not in again.headers, f"replayed request_uri: {again.status_code}")
print("authlib wave-2 interop: ok")
