//! JWT client authentication (RFC 7523): private_key_jwt and client_secret_jwt.

use josekit::jws::{JwsHeader, JwsSigner, ES256, HS256};
use josekit::jwt::{self, JwtPayload};
use serde_json::json;

use crate::helpers::*;

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

fn assertion(signer: &dyn JwsSigner, kid: Option<&str>, claims: serde_json::Value) -> String {
    let mut header = JwsHeader::new();
    if let Some(kid) = kid {
        header.set_key_id(kid);
    }
    let payload = JwtPayload::from_map(claims.as_object().unwrap().clone()).unwrap();
    jwt::encode_with_signer(&payload, &header, signer).unwrap()
}

fn claims(app: &TestApp, client: &str, aud: &str, exp_in: i64) -> serde_json::Value {
    let now = app.clock.now();
    json!({
        "iss": client, "sub": client, "aud": aud, "exp": now + exp_in, "iat": now,
        "jti": tessera::crypto::random::random_id(),
    })
}

async fn client_credentials(app: &TestApp, assertion: &str) -> reqwest::Response {
    app.token(
        None,
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", assertion),
        ],
    )
    .await
}

async fn error_of(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let body: serde_json::Value = resp.json().await.unwrap();
    (status, body["error"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn private_key_jwt_accepts_each_fresh_assertion_once() {
    let app = spawn_app().await;
    let keys = ES256.generate_key_pair().unwrap();
    let mut jwk = keys.to_jwk_public_key();
    jwk.set_key_id("rp-key");
    let jwks = format!(r#"{{"keys":[{jwk}]}}"#);
    app.add_client_with("signer", true, |c| {
        c.auth_method = "private_key_jwt".into();
        c.jwks = Some(jwks);
        c.grant_types = vec!["client_credentials".into()];
    })
    .await;
    let signer = ES256.signer_from_pem(keys.to_pem_private_key()).unwrap();
    let token_url = app.url("/token");

    let good = assertion(&signer, Some("rp-key"), claims(&app, "signer", &token_url, 60));
    let resp = client_credentials(&app, &good).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        error_of(client_credentials(&app, &good).await).await,
        (401, "invalid_client".into()),
        "replay"
    );

    let by_issuer = assertion(&signer, Some("rp-key"), claims(&app, "signer", &app.address, 60));
    assert_eq!(
        client_credentials(&app, &by_issuer).await.status(),
        200,
        "the issuer is an accepted audience"
    );

    let other = ES256
        .signer_from_pem(ES256.generate_key_pair().unwrap().to_pem_private_key())
        .unwrap();
    for (name, bad) in [
        (
            "wrong audience",
            assertion(&signer, Some("rp-key"), claims(&app, "signer", "https://elsewhere", 60)),
        ),
        (
            "expired",
            assertion(&signer, Some("rp-key"), claims(&app, "signer", &token_url, -120)),
        ),
        (
            "too long-lived",
            assertion(&signer, Some("rp-key"), claims(&app, "signer", &token_url, 7200)),
        ),
        (
            "foreign key",
            assertion(&other, Some("rp-key"), claims(&app, "signer", &token_url, 60)),
        ),
        ("garbage", "not-a-jwt".to_string()),
    ] {
        let (status, code) = error_of(client_credentials(&app, &bad).await).await;
        assert_eq!((status, code.as_str()), (401, "invalid_client"), "{name}");
    }
    let mut no_jti = claims(&app, "signer", &token_url, 60);
    no_jti.as_object_mut().unwrap().remove("jti");
    let (status, _) = error_of(client_credentials(&app, &assertion(&signer, Some("rp-key"), no_jti)).await).await;
    assert_eq!(status, 401, "jti is required");
    let resp = app
        .token(Some(("signer", "guess")), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(resp.status(), 401, "a JWT client cannot fall back to a secret");
}

#[tokio::test]
async fn client_secret_jwt_is_an_hmac_with_the_secret() {
    let app = spawn_app().await;
    let secret = tessera::domain::Secret::generate();
    let raw = secret.expose().to_string();
    let hash = secret.hash();
    app.add_client_with("hmac", true, |c| {
        c.auth_method = "client_secret_jwt".into();
        c.secret_hash = Some(hash);
        c.secret_for_hmac = Some(raw.clone());
        c.grant_types = vec!["client_credentials".into()];
    })
    .await;
    let signer = HS256.signer_from_bytes(raw.as_bytes()).unwrap();
    let good = assertion(&signer, None, claims(&app, "hmac", &app.url("/token"), 60));
    assert_eq!(client_credentials(&app, &good).await.status(), 200);
    let wrong = HS256
        .signer_from_bytes(b"some-other-secret-that-is-long-enough")
        .unwrap();
    let bad = assertion(&wrong, None, claims(&app, "hmac", &app.url("/token"), 60));
    assert_eq!(client_credentials(&app, &bad).await.status(), 401);
    let resp = app
        .token(Some(("hmac", &raw)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(
        resp.status(),
        401,
        "the secret itself is not accepted from a JWT client"
    );
}

#[tokio::test]
async fn client_secret_jwt_keys_are_sealed_and_long_enough_for_hs512() {
    use josekit::jws::{HS384, HS512};
    let key = tessera::crypto::sealed::MasterKey::parse(&format!("{}E", "B".repeat(42))).unwrap();
    let app = spawn_with(move |s| s.master_key = Some(key)).await;
    let actor = tessera::admin::Actor {
        name: "root".into(),
        ip: None,
        user_id: None,
    };
    let spec = tessera::admin::clients::ClientSpec {
        client_id: "hmac".into(),
        token_endpoint_auth_method: Some("client_secret_jwt".into()),
        grant_types: vec!["client_credentials".into()],
        ..Default::default()
    };
    let (_, secret) = tessera::admin::clients::create(&app.state.ctx(), &actor, &spec)
        .await
        .unwrap();
    let raw = secret.unwrap().expose().to_string();
    assert!(raw.len() >= 64, "an HS512 key needs 64 bytes: {}", raw.len());
    let stored = app.client("hmac").await.unwrap().secret_for_hmac.unwrap();
    assert!(stored.starts_with("sealed:"), "stored sealed, not in clear");
    assert!(!stored.contains(&raw));
    for signer in [
        Box::new(HS256.signer_from_bytes(raw.as_bytes()).unwrap()) as Box<dyn JwsSigner>,
        Box::new(HS384.signer_from_bytes(raw.as_bytes()).unwrap()),
        Box::new(HS512.signer_from_bytes(raw.as_bytes()).unwrap()),
    ] {
        let a = assertion(signer.as_ref(), None, claims(&app, "hmac", &app.url("/token"), 60));
        assert_eq!(
            client_credentials(&app, &a).await.status(),
            200,
            "{}",
            signer.algorithm().name()
        );
    }
}
