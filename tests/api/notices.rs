//! Security notices by mail: the owner of an account is told when a passkey or an
//! authenticator app is added and when the password changes on the account page, and
//! nothing is sent when mail is off.

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

    app.enrol_totp(&b, &csrf).await;
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

/// Reset requests by a stranger spend the budget of what anyone can ask for; the
/// owner's notices have their own, so the authenticator added next is still told.
#[tokio::test]
async fn requests_by_strangers_cannot_silence_the_notices() {
    let (app, sink) = spawn_mail(|s| s.mail_per_hour = 2).await;
    app.add_user("ada").await;
    for _ in 0..3 {
        let resp = plain_client()
            .post(app.url("/password/forgot"))
            .form(&[("who", "ada")])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    sink.wait_for("ada@example.com", 2).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    app.enrol_totp(&b, &csrf).await;
    let mail = sink.nth("ada@example.com", 3).await;
    assert!(
        mail.subject().contains("An authenticator app was added"),
        "{}",
        mail.subject()
    );
}

#[tokio::test]
async fn an_administrators_new_password_is_told_and_ends_earlier_links() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let ada = app.add_user("ada").await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    let asked = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 200);
    let link = sink.nth("ada@example.com", 1).await.link("/password/reset");
    let b = browser();
    let csrf = app.portal_login(&b, "root", PASSWORD).await;
    let set = b
        .post(app.url(&format!("/admin/api/users/{}/password", ada.id)))
        .header("X-CSRF-Token", &csrf)
        .json(&serde_json::json!({"password": "another long pw"}))
        .send()
        .await
        .unwrap();
    assert!(set.status().is_success(), "{}", set.status());
    let notice = sink.nth("ada@example.com", 2).await;
    assert!(
        notice.text().contains("An administrator set a new password"),
        "{}",
        notice.text()
    );
    assert_eq!(
        browser().get(&link).send().await.unwrap().status(),
        410,
        "the earlier reset link died"
    );
}

#[tokio::test]
async fn without_mail_nothing_is_queued() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    app.enrol_totp(&b, &csrf).await;
    let queued = app
        .state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap();
    assert_eq!(queued, 0);
}
