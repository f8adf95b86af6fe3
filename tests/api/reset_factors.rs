//! A reset link proves the mailbox and nothing more: an account with an authenticator
//! app gives one of its codes before a reset stores a new password or passkey, on every
//! reset path (a password; a passkey under `--passkey-mode passkey-only`; a passkey for
//! an account with passkeys and no password).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;
use tessera::auth::totp;
use tessera::config::{PasskeyMode, Signup};
use tessera::crypto::webauthn_testing::Authenticator;
use tessera::db;

use crate::helpers::*;
use crate::invite::{admin_token, api, token_of};
use crate::smtp::SmtpSink;

/// Turns on an authenticator app for `user_id` directly; returns its key.
async fn seed_totp(app: &TestApp, user_id: i64) -> String {
    let key = totp::new_secret();
    let stored = tessera::crypto::sealed::seal_text(app.state.settings.master_key.as_ref(), &key).unwrap();
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            assert!(db::mfa::begin(c, user_id, &stored, now)?);
            assert!(db::mfa::confirm(c, user_id, 0, &[], now)?);
            Ok(())
        })
        .await
        .unwrap();
    key
}

/// Asks a reset for `who`; the token of the `n`-th mail to `to` with a reset link.
async fn reset_token(app: &TestApp, sink: &SmtpSink, who: &str, to: &str, n: usize) -> String {
    let asked = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", who)])
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 200);
    token_of(&sink.nth(to, n).await.link("/password/reset"))
}

/// Asks the reset passkey's options, makes it with `a`, and posts it with `code`.
async fn reset_with_passkey(app: &TestApp, token: &str, a: &mut Authenticator, code: &str) -> reqwest::Response {
    let b = browser();
    let form = [("token", token), ("code", code)];
    let o: Value = b
        .post(app.url("/password/reset/passkey/options"))
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (cdj, att) = a.create(o["challenge"].as_str().unwrap());
    let (cd, at) = (URL_SAFE_NO_PAD.encode(cdj), URL_SAFE_NO_PAD.encode(att));
    let mut fields = form.to_vec();
    fields.extend([("client_data", cd.as_str()), ("attestation_object", at.as_str())]);
    b.post(app.url("/password/reset/passkey"))
        .form(&fields)
        .send()
        .await
        .unwrap()
}

async fn code_error(resp: reqwest::Response) -> String {
    assert_eq!(resp.status(), 400);
    let html = resp.text().await.unwrap();
    text_of(&html, "code-error").unwrap_or_else(|| panic!("{html}"))
}

/// The passkey paths: no code, a wrong code, a replayed code store nothing; the
/// right code stores the passkey.
async fn passkey_reset_asks_the_app(app: &TestApp, token: &str, key: &str, user_id: i64) {
    let html = browser()
        .get(app.url(&format!("/password/reset?token={token}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("id=\"reset-passkey\"") && html.contains("id=\"reset-code-lead\""),
        "{html}"
    );
    let before = app.passkey_count(user_id).await;
    let mut a = app.authenticator();
    assert!(code_error(reset_with_passkey(app, token, &mut a, "").await)
        .await
        .contains("authenticator"));
    assert!(code_error(reset_with_passkey(app, token, &mut a, "000000").await)
        .await
        .contains("not valid"));
    assert_eq!(
        app.passkey_count(user_id).await,
        before,
        "nothing stored without the code"
    );
    let code = totp::code_at(key, app.clock.now()).unwrap();
    let done = reset_with_passkey(app, token, &mut a, &code).await;
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "reset-done").is_some());
    assert_eq!(app.passkey_count(user_id).await, before + 1);
    let events: Vec<String> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"mfa.failed".to_string()) && events.contains(&"mfa.ok".to_string()));
}

#[tokio::test]
async fn under_passkey_only_a_reset_asks_the_authenticator_app_before_the_passkey_is_stored() {
    let (app, sink) = spawn_mail(|s| s.passkey_mode = PasskeyMode::PasskeyOnly).await;
    let ada = app.add_user("ada").await;
    let key = seed_totp(&app, ada.id).await;
    let token = reset_token(&app, &sink, "ada", "ada@example.com", 1).await;
    passkey_reset_asks_the_app(&app, &token, &key, ada.id).await;
}

#[tokio::test]
async fn a_reset_of_an_account_with_passkeys_and_no_password_asks_its_authenticator_app() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let admin = admin_token(&app).await;
    let (status, created) = api(
        &app,
        &admin,
        reqwest::Method::POST,
        "/invitations",
        Some(serde_json::json!({"email": "grace@example.org"})),
    )
    .await;
    assert_eq!(status, 201);
    let invitation = token_of(created["link"].as_str().unwrap());
    let b = browser();
    let form = [("token", invitation.as_str()), ("username", "grace")];
    let o: Value = b
        .post(app.url("/invite/passkey/options"))
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (cdj, att) = app.authenticator().create(o["challenge"].as_str().unwrap());
    let (cd, at) = (URL_SAFE_NO_PAD.encode(cdj), URL_SAFE_NO_PAD.encode(att));
    let mut fields = form.to_vec();
    fields.extend([("client_data", cd.as_str()), ("attestation_object", at.as_str())]);
    let made = b.post(app.url("/invite/passkey")).form(&fields).send().await.unwrap();
    assert_eq!(made.status(), 200);
    let grace = app.user("grace").await.unwrap();
    let key = seed_totp(&app, grace.id).await;
    let token = reset_token(&app, &sink, "grace", "grace@example.org", 2).await;
    passkey_reset_asks_the_app(&app, &token, &key, grace.id).await;
}

#[tokio::test]
async fn a_password_reset_asks_the_authenticator_app_and_the_sign_in_still_does() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let ada = app.add_user("ada").await;
    let key = seed_totp(&app, ada.id).await;
    let token = reset_token(&app, &sink, "ada", "ada@example.com", 1).await;
    let html = browser()
        .get(app.url(&format!("/password/reset?token={token}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("name=\"code\""), "{html}");
    let post = |code: String| {
        let (app, token) = (&app, &token);
        async move {
            browser()
                .post(app.url("/password/reset"))
                .form(&[
                    ("token", token.as_str()),
                    ("password", "a brand new secret"),
                    ("confirm", "a brand new secret"),
                    ("code", code.as_str()),
                ])
                .send()
                .await
                .unwrap()
        }
    };
    assert!(code_error(post("123".into()).await).await.contains("not valid"));
    let unchanged = app
        .state
        .db
        .read(move |c| db::users::find_by_id(c, ada.id))
        .await
        .unwrap()
        .unwrap();
    assert!(
        bcrypt::verify(PASSWORD, &unchanged.password_hash).unwrap(),
        "the password is unchanged"
    );
    let done = post(totp::code_at(&key, app.clock.now()).unwrap()).await;
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "reset-done").is_some());

    // The next sign-in still asks the app.
    app.clock.advance(30);
    let b = browser();
    let fields = app.open_login(&b, &app.url("/account")).await;
    let resp = app.submit_login(&b, fields, "ada", "a brand new secret").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("action=\"/login/mfa\""));
}

#[tokio::test]
async fn a_password_reset_without_an_authenticator_app_asks_no_code() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let token = reset_token(&app, &sink, "ada", "ada@example.com", 1).await;
    let html = browser()
        .get(app.url(&format!("/password/reset?token={token}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("name=\"code\""), "{html}");
    let done = browser()
        .post(app.url("/password/reset"))
        .form(&[
            ("token", token.as_str()),
            ("password", "a brand new secret"),
            ("confirm", "a brand new secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
}
