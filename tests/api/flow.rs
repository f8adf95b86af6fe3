//! The whole code flow as a relying party built on the `openidconnect` crate sees it.

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreUserInfoClaims};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, RedirectUrl, RefreshToken, Scope,
    TokenResponse,
};

use crate::helpers::*;

fn rp_http() -> openidconnect::reqwest::Client {
    openidconnect::reqwest::Client::builder()
        .redirect(openidconnect::reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A client as discovery configures it: authorization endpoint set, token and
/// userinfo endpoints as the document says.
type Rp = CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// grafana's client, configured from the discovery document.
async fn discovered_client(app: &TestApp, secret: &str, http: &openidconnect::reqwest::Client) -> Rp {
    let metadata = CoreProviderMetadata::discover_async(IssuerUrl::new(app.address.clone()).unwrap(), http)
        .await
        .unwrap();
    CoreClient::from_provider_metadata(
        metadata,
        ClientId::new("grafana".into()),
        Some(ClientSecret::new(secret.to_string())),
    )
    .set_redirect_uri(RedirectUrl::new(REDIRECT.into()).unwrap())
}

#[tokio::test]
async fn a_relying_party_signs_a_user_in_and_uses_every_token() {
    let app = spawn_app().await;
    let user = app.add_user("alice").await;
    let secret = app.add_client("grafana", false).await.unwrap();
    let http = rp_http();

    let client = discovered_client(&app, &secret, &http).await;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (auth_url, csrf, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("email".into()))
        .set_pkce_challenge(challenge)
        .url();

    let params = app.login(&browser(), auth_url.as_str(), "alice").await;
    assert_eq!(&params["state"], csrf.secret(), "state must round-trip");
    assert_eq!(params["iss"], app.address, "RFC 9207 iss");

    let tokens = client
        .exchange_code(AuthorizationCode::new(params["code"].clone()))
        .unwrap()
        .set_pkce_verifier(verifier)
        .request_async(&http)
        .await
        .unwrap();
    let id_token = tokens.id_token().expect("an ID token");
    let verifier = client.id_token_verifier();
    let claims = id_token.claims(&verifier, &nonce).unwrap();
    assert_eq!(claims.subject().as_str(), user.sub);
    assert_eq!(claims.preferred_username().unwrap().as_str(), "alice");
    assert_eq!(claims.email().unwrap().as_str(), "alice@example.com");
    assert!(claims.auth_time().is_some());
    let at_hash = AccessTokenHash::from_token(
        tokens.access_token(),
        id_token.signing_alg().unwrap(),
        id_token.signing_key(&verifier).unwrap(),
    )
    .unwrap();
    assert_eq!(claims.access_token_hash(), Some(&at_hash));

    let info: CoreUserInfoClaims = client
        .user_info(tokens.access_token().clone(), Some(claims.subject().clone()))
        .unwrap()
        .request_async(&http)
        .await
        .unwrap();
    assert_eq!(info.email().unwrap().as_str(), "alice@example.com");

    let access = tokens.access_token().secret().clone();
    the_access_token_is_active(&app, &secret, &access, &user.sub).await;

    let refresh = tokens.refresh_token().expect("a refresh token").clone();
    let refreshed = client
        .exchange_refresh_token(&refresh)
        .unwrap()
        .request_async(&http)
        .await
        .unwrap();
    let new_refresh = refreshed.refresh_token().expect("a rotated refresh token");
    assert_ne!(new_refresh.secret(), refresh.secret(), "refresh tokens rotate");
    let refreshed_claims = refreshed
        .id_token()
        .unwrap()
        .claims(&verifier, |_: Option<&Nonce>| Ok(()))
        .unwrap();
    assert_eq!(refreshed_claims.subject(), claims.subject(), "same sub across tokens");

    revoking_the_refresh_token_revokes_its_grant(
        &app,
        &secret,
        new_refresh.secret(),
        refreshed.access_token().secret(),
    )
    .await;
    let again = client
        .exchange_refresh_token(&RefreshToken::new(new_refresh.secret().clone()))
        .unwrap()
        .request_async(&http)
        .await;
    assert!(again.is_err());
}

/// Introspection says `access` is grafana's, for `sub`, and active.
async fn the_access_token_is_active(app: &TestApp, secret: &str, access: &str, sub: &str) {
    let active = app.introspect(("grafana", secret), access).await;
    assert_eq!(active["active"], true);
    assert_eq!(active["client_id"], "grafana");
    assert_eq!(active["sub"], sub);
}

/// Revoking the rotated refresh token ends the access token issued with it.
async fn revoking_the_refresh_token_revokes_its_grant(app: &TestApp, secret: &str, refresh: &str, access: &str) {
    let revoked = app
        .post_form(
            "/revoke",
            Some(("grafana", secret)),
            &[("token", refresh), ("token_type_hint", "refresh_token")],
        )
        .await;
    assert_eq!(revoked.status(), 200);
    let gone = app.introspect(("grafana", secret), access).await;
    assert_eq!(gone["active"], false, "revoking the refresh token revokes its grant");
}

#[tokio::test]
async fn id_and_access_tokens_carry_the_required_claims() {
    let app = spawn_app().await;
    let user = app.add_user("bob").await;
    let secret = app.add_client("wiki", false).await.unwrap();
    let tokens = app.tokens("wiki", &secret, "bob").await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert!(tokens["expires_in"].as_i64().unwrap() > 0);

    let (header, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(header["alg"], "RS256");
    assert!(header["kid"].is_string());
    for claim in [
        "iss",
        "sub",
        "aud",
        "exp",
        "iat",
        "auth_time",
        "nonce",
        "at_hash",
        "azp",
        "sid",
    ] {
        assert!(id.get(claim).is_some(), "ID token lacks {claim}");
    }
    assert_eq!(id["iss"], app.address);
    assert_eq!(id["aud"], "wiki");
    assert_eq!(id["nonce"], "n0nce");
    assert_eq!(id["sub"], user.sub.as_str());

    let (header, at) = jwt_parts(tokens["access_token"].as_str().unwrap());
    assert_eq!(header["typ"], "at+jwt", "RFC 9068 §2.1");
    for claim in ["iss", "sub", "aud", "exp", "iat", "jti", "client_id", "scope"] {
        assert!(at.get(claim).is_some(), "access token lacks {claim}");
    }
    assert_eq!(at["client_id"], "wiki");
    assert_eq!(at["scope"], "openid profile email");
}

#[tokio::test]
async fn a_returning_user_gets_a_code_without_the_password_form() {
    let app = spawn_app().await;
    app.add_user("carol").await;
    app.add_client("app", false).await;
    let b = browser();
    app.login(&b, &app.authorize_url("app", &[]), "carol").await;

    let resp = b
        .get(app.authorize_url("app", &[]).replace("st4te", "second"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302, "SSO session should skip the form");
    let params = redirect_params(&resp);
    assert!(params.contains_key("code"));
    assert_eq!(params["state"], "second");
}

#[tokio::test]
async fn a_public_client_uses_pkce_and_no_secret() {
    let app = spawn_app().await;
    app.add_user("dave").await;
    app.add_client("spa", true).await;
    let resp = app.public_tokens("spa", "dave").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    assert_eq!(resp.headers()["pragma"], "no-cache");
    let body: serde_json::Value = resp.json().await.unwrap();
    let refresh = body["refresh_token"].as_str().unwrap();
    let resp = app
        .token(
            None,
            &[
                ("grant_type", "refresh_token"),
                ("client_id", "spa"),
                ("refresh_token", refresh),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn discovery_lists_what_is_implemented_and_the_jwks_publishes_the_key() {
    let app = spawn_app().await;
    let doc: serde_json::Value = plain_client()
        .get(app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["issuer"], app.address);
    assert_eq!(doc["code_challenge_methods_supported"], serde_json::json!(["S256"]));
    assert_eq!(doc["response_types_supported"], serde_json::json!(["code"]));
    assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
    for endpoint in [
        "authorization_endpoint",
        "token_endpoint",
        "userinfo_endpoint",
        "jwks_uri",
        "introspection_endpoint",
        "revocation_endpoint",
    ] {
        let url = doc[endpoint].as_str().unwrap();
        assert!(url.starts_with(&app.address), "{endpoint}");
    }
    let jwks: serde_json::Value = plain_client()
        .get(app.url("/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = &jwks["keys"][0];
    assert_eq!(key["kty"], "RSA");
    assert_eq!(key["use"], "sig");
    assert!(key.get("d").is_none(), "no private key material");
    let health = plain_client().get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}
