//! Security notices by mail: the owner of an account is told when a passkey or an
//! authenticator app is added and when the password changes on the account page, and
//! nothing is sent when mail is off.

use tessera::auth::totp;
use tessera::crypto::webauthn::RelyingParty;
use tessera::crypto::webauthn_testing::Authenticator;
use tessera::db;

use crate::helpers::*;

#[tokio::test]
async fn adding_a_passkey_or_an_authenticator_app_is_told_to_the_owner() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;

    let rp = RelyingParty::of_issuer(&app.address).unwrap();
    let mut a = Authenticator::new(&rp).unwrap();
    let added = crate::passkeys::register(&app, &b, &csrf, &mut a, "Laptop").await;
    assert_eq!(added.status(), 201);
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(mail.subject().contains("A passkey was added"), "{}", mail.subject());
    assert!(mail.text().contains("Laptop"), "{}", mail.text());

    let html = b
        .get(app.url("/account/totp"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let key = text_of(&html, "totp-secret").unwrap();
    let code = totp::code_at(&key, app.clock.now()).unwrap();
    let enrolled = b
        .post(app.url("/account/totp"))
        .form(&[("csrf", csrf.as_str()), ("code", code.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(enrolled.status(), 200);
    let mail = sink.nth("ada@example.com", 2).await;
    assert!(
        mail.subject().contains("An authenticator app was added"),
        "{}",
        mail.subject()
    );
}

#[tokio::test]
async fn a_password_changed_on_the_account_page_is_told_to_the_owner() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let changed = b
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current", PASSWORD),
            ("password", "a new long secret"),
            ("confirm", "a new long secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 302);
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(
        mail.subject().contains("Your password was changed"),
        "{}",
        mail.subject()
    );
    assert!(mail.text().contains("account page"), "{}", mail.text());
}

#[tokio::test]
async fn without_mail_nothing_is_queued() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let html = b
        .get(app.url("/account/totp"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let key = text_of(&html, "totp-secret").unwrap();
    let code = totp::code_at(&key, app.clock.now()).unwrap();
    let enrolled = b
        .post(app.url("/account/totp"))
        .form(&[("csrf", csrf.as_str()), ("code", code.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(enrolled.status(), 200);
    let queued = app
        .state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap();
    assert_eq!(queued, 0);
}
