//! The password grant (RFC 6749 §4.3): off unless the client opts in, the login
//! form's lockout, limits and audit, and refused past a second factor.

use crate::helpers::*;
use serde_json::Value;
use tessera::db;

/// A confidential client registered for the password grant (and refresh tokens).
async fn ropc_client(app: &TestApp) -> String {
    app.add_client_with("legacy", false, |c| {
        c.grant_types = vec!["password".into(), "refresh_token".into()];
    })
    .await
    .unwrap()
}

async fn password(app: &TestApp, secret: &str, username: &str, pw: &str, scope: &str) -> reqwest::Response {
    app.token(
        Some(("legacy", secret)),
        &[
            ("grant_type", "password"),
            ("username", username),
            ("password", pw),
            ("scope", scope),
        ],
    )
    .await
}

async fn error_of(resp: reqwest::Response, status: u16) -> Value {
    assert_eq!(resp.status().as_u16(), status);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: Value = resp.json().await.unwrap();
    assert!(body.get("access_token").is_none(), "{body}");
    body
}

async fn failures(app: &TestApp, uid: i64) -> (i64, bool) {
    let s = app.state.db.read(move |c| db::users::lock_state(c, uid)).await.unwrap();
    (s.failed_logins, s.locked_until.is_some())
}

#[tokio::test]
async fn a_client_that_did_not_opt_in_is_unauthorized_and_no_password_is_checked() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let resp = app
        .token(
            Some(("app", &secret)),
            &[("grant_type", "password"), ("username", "alice"), ("password", "wrong")],
        )
        .await;
    let body = error_of(resp, 400).await;
    assert_eq!(body["error"], "unauthorized_client");
    assert_eq!(failures(&app, alice.id).await, (0, false), "no attempt was counted");
}

#[tokio::test]
async fn the_right_password_gets_tokens_like_a_code_exchange_without_a_session() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let resp = password(&app, &secret, "alice", PASSWORD, "openid profile").await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "openid profile");
    assert!(
        body.get("refresh_token").is_none(),
        "no session to bind it to: a refresh token only with offline_access"
    );
    let (_, id) = jwt_parts(body["id_token"].as_str().unwrap());
    assert_eq!(id["aud"], "legacy");
    assert_eq!(id["amr"], serde_json::json!(["pwd"]));
    assert!(id.get("sid").is_none(), "no SSO session was opened");
    assert!(id.get("nonce").is_none());
    let access = body["access_token"].as_str().unwrap();
    let seen = app.introspect(("legacy", &secret), access).await;
    assert_eq!(seen["active"], true);
    assert_eq!(seen["client_id"], "legacy");
    let events: Vec<String> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"login.ok".to_string()), "{events:?}");
    assert!(events.contains(&"token.issued".to_string()), "{events:?}");

    // With offline_access the grant outlives any session: a refresh token, which works.
    let body: Value = password(&app, &secret, "alice", PASSWORD, "openid offline_access")
        .await
        .json()
        .await
        .unwrap();
    let refresh = body["refresh_token"]
        .as_str()
        .expect("a refresh token with offline_access");
    let resp = app.refresh(("legacy", &secret), refresh, &[]).await;
    assert_eq!(resp.status(), 200);
    // No openid: an access token only.
    let body: Value = password(&app, &secret, "alice", PASSWORD, "profile")
        .await
        .json()
        .await
        .unwrap();
    assert!(body.get("id_token").is_none());
    assert!(body["access_token"].is_string());
}

#[tokio::test]
async fn wrong_passwords_count_toward_the_lockout_and_look_like_unknown_accounts() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let wrong = error_of(password(&app, &secret, "alice", "wrong", "openid").await, 400).await;
    assert_eq!(wrong["error"], "invalid_grant");
    assert_eq!(failures(&app, alice.id).await, (1, false));
    let unknown = error_of(password(&app, &secret, "ghost", "wrong", "openid").await, 400).await;
    assert_eq!(unknown, wrong, "an unknown account gets the same answer");
    for _ in 0..4 {
        password(&app, &secret, "alice", "wrong", "openid").await;
    }
    assert_eq!(
        failures(&app, alice.id).await,
        (5, true),
        "the fifth wrong password locks"
    );
    let locked = error_of(password(&app, &secret, "alice", PASSWORD, "openid").await, 400).await;
    assert_eq!(
        locked, wrong,
        "locked: the right password is refused, and it looks the same"
    );
    let events: Vec<(String, Option<String>)> = app.audit().await.into_iter().map(|e| (e.0, e.1)).collect();
    assert!(
        events.contains(&("login.failed".into(), Some("alice".into()))),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e.0 == "login.locked"), "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e.0 == "login.failed" && e.1.as_deref().is_some_and(|a| a.starts_with("unknown:"))),
        "an unknown name is logged as a pseudonym: {events:?}"
    );
    assert!(!events.iter().any(|e| e.0 == "token.issued"));
}

#[tokio::test]
async fn an_account_with_a_second_factor_is_refused_with_a_clear_reason() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let (uid, now) = (alice.id, app.clock.now());
    app.state
        .db
        .write(move |c| {
            db::mfa::begin(c, uid, "JBSWY3DPEHPK3PXP", now)?;
            db::mfa::confirm(c, uid, now / 30, &[], now)
        })
        .await
        .unwrap();
    let body = error_of(password(&app, &secret, "alice", PASSWORD, "openid").await, 400).await;
    assert_eq!(body["error"], "invalid_grant");
    assert!(
        body["error_description"].as_str().unwrap().contains("second factor"),
        "{body}"
    );
    // The password itself was right: it does not count toward the lockout.
    assert_eq!(failures(&app, alice.id).await, (0, false));
    let events: Vec<String> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(
        events.contains(&"login.password_grant_refused".to_string()),
        "{events:?}"
    );
    assert!(!events.contains(&"token.issued".to_string()));
}

#[tokio::test]
async fn a_disabled_account_looks_like_a_wrong_password() {
    let app = spawn_app().await;
    let alice = app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let wrong = error_of(password(&app, &secret, "alice", "wrong", "openid").await, 400).await;
    assert_eq!(failures(&app, alice.id).await, (1, false));
    app.state
        .db
        .write(|c| db::users::set_disabled(c, "alice", true, 0))
        .await
        .unwrap();
    let disabled = error_of(password(&app, &secret, "alice", PASSWORD, "openid").await, 400).await;
    assert_eq!(disabled, wrong);
}

#[tokio::test]
async fn the_login_forms_per_account_limit_applies_before_any_password_is_hashed() {
    let app = spawn_with(|s| s.rate_limit = true).await;
    app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(
            password(&app, &secret, "alice", "wrong", "openid")
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(&statuses[..5], &[400; 5], "{statuses:?}");
    assert_eq!(&statuses[5..], &[429; 2], "{statuses:?}");
    let resp = password(&app, &secret, "alice", "wrong", "openid").await;
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "temporarily_unavailable");
}

#[tokio::test]
async fn missing_parameters_are_invalid_requests() {
    let app = spawn_app().await;
    let secret = ropc_client(&app).await;
    let resp = app
        .token(
            Some(("legacy", &secret)),
            &[("grant_type", "password"), ("password", "x")],
        )
        .await;
    assert_eq!(error_of(resp, 400).await["error"], "invalid_request");
}

/// A DPoP proof (RFC 9449 §4.2) for POST /token of `app`, signed with a fresh key.
fn dpop_proof(app: &TestApp) -> String {
    use josekit::jws::{JwsHeader, ES256};
    let kp = ES256.generate_key_pair().unwrap();
    let mut header = JwsHeader::new();
    header.set_token_type("dpop+jwt");
    header.set_jwk(kp.to_jwk_public_key());
    let claims = serde_json::json!({
        "jti": tessera::crypto::random::random_id(),
        "htm": "POST",
        "htu": app.url("/token"),
        "iat": app.clock.now(),
    });
    let payload = josekit::jwt::JwtPayload::from_map(claims.as_object().unwrap().clone()).unwrap();
    let signer = ES256.signer_from_jwk(&kp.to_jwk_private_key()).unwrap();
    josekit::jwt::encode_with_signer(&payload, &header, &signer).unwrap()
}

#[tokio::test]
async fn with_a_dpop_proof_the_access_token_is_bound_and_the_proof_is_single_use() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = ropc_client(&app).await;
    let proof = dpop_proof(&app);
    let send = |proof: String| {
        plain_client()
            .post(app.url("/token"))
            .basic_auth("legacy", Some(&secret))
            .header("DPoP", proof)
            .form(&[
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", PASSWORD),
                ("scope", "openid"),
            ])
            .send()
    };
    let resp = send(proof.clone()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    let access = body["access_token"].as_str().unwrap();
    let (_, claims) = jwt_parts(access);
    let jkt = claims["cnf"]["jkt"].as_str().expect("cnf.jkt in the access token");
    assert_eq!(app.introspect(("legacy", &secret), access).await["cnf"]["jkt"], jkt);
    let replayed = error_of(send(proof).await.unwrap(), 400).await;
    assert_eq!(replayed["error"], "invalid_dpop_proof", "{replayed}");
}
