//! Password reset by mail through a real SMTP server: the link from the mail sets a
//! new password once, ends every session and grant, and keeps the second factor; the
//! request answers the same for accounts that do not exist, and links are built from
//! the issuer.

use crate::helpers::*;
use tessera::db;

const NEW_PASSWORD: &str = "a brand new passphrase";

async fn ask_reset(app: &TestApp, who: &str) -> (u16, String) {
    let resp = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", who)])
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Opens a mailed reset link and sets `password` through its form.
async fn follow_reset(link: &str, password: &str) -> reqwest::Response {
    let b = browser();
    let page = b.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link opens the form");
    let fields = form_fields(&page.text().await.unwrap());
    let base = link.split("/password/reset").next().unwrap();
    b.post(format!("{base}/password/reset"))
        .form(&[
            ("token", fields["token"].as_str()),
            ("password", password),
            ("confirm", password),
        ])
        .send()
        .await
        .unwrap()
}

async fn outbox_rows(app: &TestApp) -> i64 {
    app.state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_mailed_link_sets_a_new_password_once_and_ends_every_session_and_grant() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let secret = app.add_client("rp", false).await.unwrap();
    app.add_user("ada").await;
    let tokens = app.tokens("rp", &secret, "ada").await;
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();

    let (status, page) = ask_reset(&app, "ada").await;
    assert_eq!(status, 200);
    assert!(text_of(&page, "forgot-sent").is_some(), "{page}");
    let mail = sink.nth("ada@example.com", 1).await;
    assert!(mail.subject().contains("Reset your password"), "{}", mail.subject());
    assert!(
        mail.part("text/html").contains("Choose a new password"),
        "an HTML body too"
    );
    let link = mail.link("/password/reset");
    assert!(link.starts_with(&app.address), "built from the issuer: {link}");

    let done = follow_reset(&link, NEW_PASSWORD).await;
    assert_eq!(done.status(), 200);
    assert!(text_of(&done.text().await.unwrap(), "reset-done").is_some());

    // Whoever held the old password's session or tokens is out.
    let refreshed = app.refresh(("rp", &secret), &refresh, &[]).await;
    assert_eq!(refreshed.status(), 400, "the refresh token was revoked");
    let introspected = app
        .introspect(("rp", &secret), tokens["access_token"].as_str().unwrap())
        .await;
    assert_eq!(introspected["active"], false);

    // The old password no longer signs in; the new one does.
    let url = app.authorize_url("rp", &[]);
    let b = browser();
    let fields = app.open_login(&b, &url).await;
    assert_eq!(app.submit_login(&b, fields, "ada", PASSWORD).await.status(), 401);
    let b = browser();
    let fields = app.open_login(&b, &url).await;
    assert_eq!(app.submit_login(&b, fields, "ada", NEW_PASSWORD).await.status(), 303);

    // The owner is told, and the link works once.
    let notice = sink.nth("ada@example.com", 2).await;
    assert!(
        notice.subject().contains("Your password was changed"),
        "{}",
        notice.subject()
    );
    assert_eq!(browser().get(&link).send().await.unwrap().status(), 410, "used");
    let events: Vec<String> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"password.reset_requested".to_string()), "{events:?}");
    assert!(events.contains(&"password.reset".to_string()), "{events:?}");
}

#[tokio::test]
async fn an_unknown_account_gets_the_same_answer_and_no_mail() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let known = ask_reset(&app, "ada@example.com").await;
    let unknown = ask_reset(&app, "nobody@example.com").await;
    let unknown_name = ask_reset(&app, "nobody").await;
    assert_eq!(known, unknown, "the same status and page");
    assert_eq!(known, unknown_name);
    sink.wait_for("ada@example.com", 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(sink.messages().len(), 1, "only the existing account was mailed");
    assert_eq!(outbox_rows(&app).await, 1);
}

#[tokio::test]
async fn expired_superseded_and_forged_links_are_refused() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    ask_reset(&app, "ada").await;
    let first = sink.nth("ada@example.com", 1).await.link("/password/reset");
    ask_reset(&app, "ada").await;
    let second = sink.nth("ada@example.com", 2).await.link("/password/reset");
    assert_ne!(first, second);
    assert_eq!(
        browser().get(&first).send().await.unwrap().status(),
        410,
        "voided by the newer link"
    );
    let forged = format!(
        "{}/password/reset?token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        app.address
    );
    assert_eq!(browser().get(&forged).send().await.unwrap().status(), 410);
    assert_eq!(follow_reset_status(&app, "forged", NEW_PASSWORD).await, 410);

    // A short or easy password is refused on the form and leaves the link usable.
    assert_eq!(follow_reset(&second, "short").await.status(), 400);
    assert_eq!(follow_reset(&second, "password1").await.status(), 400);
    assert_eq!(
        follow_reset(&second, "ada is my password").await.status(),
        400,
        "holds the username"
    );
    // An hour later the link is dead.
    app.state
        .db
        .write(|c| db::testing::age_email_tokens(c, 3601))
        .await
        .unwrap();
    assert_eq!(browser().get(&second).send().await.unwrap().status(), 410, "expired");
}

async fn follow_reset_status(app: &TestApp, token: &str, password: &str) -> u16 {
    plain_client()
        .post(app.url("/password/reset"))
        .form(&[("token", token), ("password", password), ("confirm", password)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn the_second_factor_is_still_asked_after_a_reset() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let key = app.enrol_totp(&b, &csrf).await;

    ask_reset(&app, "ada").await;
    // The first mail told ada of the authenticator app.
    let link = sink.nth("ada@example.com", 2).await.link("/password/reset");
    assert_eq!(
        follow_reset(&link, NEW_PASSWORD).await.status(),
        400,
        "the reset asks the app"
    );
    app.clock.advance(30);
    let code = tessera::auth::totp::code_at(&key, app.clock.now()).unwrap();
    let token = link.split("token=").nth(1).unwrap();
    let done = plain_client()
        .post(app.url("/password/reset"))
        .form(&[
            ("token", token),
            ("password", NEW_PASSWORD),
            ("confirm", NEW_PASSWORD),
            ("code", code.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let resp = app.submit_login(&b, fields, "ada", NEW_PASSWORD).await;
    assert_eq!(resp.status(), 200, "the code is asked, not a redirect with a code");
    let html = resp.text().await.unwrap();
    assert!(form_fields(&html).contains_key("code"), "{html}");
}

#[tokio::test]
async fn a_link_to_an_address_the_account_no_longer_has_is_dead() {
    use crate::signin_link::change_address;
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    ask_reset(&app, "ada").await;
    let link = sink.nth("ada@example.com", 1).await.link("/password/reset");
    let b = browser();
    app.portal_login(&b, "ada", PASSWORD).await;
    change_address(&app, &b, &sink, "ada@elsewhere.example").await;
    assert_eq!(browser().get(&link).send().await.unwrap().status(), 410);
}

#[tokio::test]
async fn a_stranger_with_the_change_link_but_not_the_session_cannot_confirm_it() {
    use crate::signin_link::{change_link, request_address};
    const TYPO: &str = "ada@exmaple.com";
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let owner = browser();
    app.portal_login(&owner, "ada", PASSWORD).await;
    request_address(&app, &owner, TYPO).await;
    let link = change_link(&sink, TYPO, 1).await;

    // The mistyped mailbox's owner opens the link: asked to sign in, no Confirm button.
    let stranger = browser();
    let page = stranger.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Sign in to confirm the new address"), "{html}");
    assert!(!html.contains("id=\"confirm\""), "{html}");
    let token = link.split("token=").nth(1).unwrap();
    // Pressing Confirm anyway changes nothing.
    let pressed = stranger
        .post(app.url("/email/verify"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(pressed.status(), 401);
    assert!(pressed
        .text()
        .await
        .unwrap()
        .contains("Sign in to confirm the new address"));
    let ada = app.user("ada").await.unwrap();
    assert_eq!(ada.email.as_deref(), Some("ada@example.com"));
    assert!(app.audit().await.iter().all(|e| e.0 != "account.email_changed"));

    // "Forgot your password?" still mails the old address only.
    ask_reset(&app, TYPO).await;
    ask_reset(&app, "ada").await;
    let reset = crate::signin_link::mail_about(&sink, "ada@example.com", "Reset your password", 1).await;
    assert!(reset.link("/password/reset").contains("token="));
    assert!(sink.to(TYPO).iter().all(|m| !m.text().contains("/password/reset")));
}

#[tokio::test]
async fn an_unknown_name_is_audited_only_as_a_pseudonym() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    ask_reset(&app, "my secret password").await;
    let audit = app.audit().await;
    let entry = audit
        .iter()
        .find(|e| e.0 == "password.reset_requested")
        .expect("the request is audited");
    let actor = entry.1.clone().unwrap_or_default();
    assert!(!actor.contains("secret"), "{actor}");
    assert!(actor.starts_with("unknown:"), "{actor}");
}

#[tokio::test]
async fn links_come_from_the_issuer_whatever_host_the_request_names() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let resp = plain_client()
        .post(app.url("/password/forgot"))
        .header("Host", "evil.example")
        .header("X-Forwarded-Host", "evil.example")
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let link = sink.nth("ada@example.com", 1).await.link("/password/reset");
    assert!(link.starts_with(&app.address), "{link}");
    assert!(!link.contains("evil"), "{link}");
}

#[tokio::test]
async fn an_account_gets_at_most_the_hourly_number_of_mails() {
    let (app, sink) = spawn_mail(|s| s.mail_per_hour = 3).await;
    app.add_user("ada").await;
    let mut answers = Vec::new();
    for _ in 0..5 {
        answers.push(ask_reset(&app, "ada").await);
    }
    assert!(
        answers.windows(2).all(|w| w[0] == w[1]),
        "limited requests answer the same"
    );
    sink.wait_for("ada@example.com", 3).await;
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    assert_eq!(sink.to("ada@example.com").len(), 3);
    assert_eq!(outbox_rows(&app).await, 3);
}

#[tokio::test]
async fn without_mail_the_reset_pages_and_links_are_absent() {
    let app = spawn_app().await;
    app.add_client("rp", false).await;
    assert_eq!(
        plain_client()
            .get(app.url("/password/forgot"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let html = browser()
        .get(app.authorize_url("rp", &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("forgot-link"), "no reset link on the login page");
    assert!(!html.contains("email-link"));
}
