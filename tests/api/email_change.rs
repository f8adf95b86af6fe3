//! Changing the account's email address needs a recent sign-in or the password again,
//! through the same `/account/confirm` step as adding a credential; whoever's
//! confirmation lapsed comes back to the profile form with what they typed.

use tessera::db;

use crate::helpers::*;

const NEW: &str = "ada@new.example";

async fn ada(app: &TestApp) -> db::users::User {
    app.user("ada").await.unwrap()
}

async fn save_profile(app: &TestApp, b: &reqwest::Client, csrf: &str, name: &str, email: &str) -> reqwest::Response {
    b.post(app.url("/account/profile"))
        .form(&[("csrf", csrf), ("name", name), ("email", email)])
        .send()
        .await
        .unwrap()
}

async fn rows(app: &TestApp, table: &'static str) -> i64 {
    app.state
        .db
        .read(move |c| db::testing::count_rows(c, table))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_stale_session_is_sent_to_confirm_and_comes_back_to_finish_the_change() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    app.clock.advance(301);
    let (outbox, tokens) = (rows(&app, "mail_outbox").await, rows(&app, "email_tokens").await);

    let resp = save_profile(&app, &b, &csrf, "Ada L", NEW).await;
    assert_eq!(resp.status(), 302);
    let confirm = location(&resp);
    assert!(confirm.starts_with("/account/confirm?next=email&"), "{confirm}");
    // Nothing happened yet: no pending change, no mail, the address as it was.
    assert_eq!(ada(&app).await.email.as_deref(), Some("ada@example.com"));
    assert_eq!(rows(&app, "mail_outbox").await, outbox);
    assert_eq!(rows(&app, "email_tokens").await, tokens);
    assert!(!app.audit().await.iter().any(|e| e.0 == "account.profile_changed"));

    let page = b.get(app.url(&confirm)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(text_of(&html, "confirm-new-email").unwrap().contains(NEW), "{html}");
    let fields = form_fields(&html);
    assert_eq!((fields["next"].as_str(), fields["email"].as_str()), ("email", NEW));

    let mut wrong = fields.clone();
    wrong.insert("password".into(), "not it".into());
    let resp = b.post(app.url("/account/confirm")).form(&wrong).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let html = resp.text().await.unwrap();
    assert_eq!(input_value(&html, "email").as_deref(), Some(NEW), "still carried");

    let mut right = fields;
    right.insert("password".into(), PASSWORD.into());
    let resp = b.post(app.url("/account/confirm")).form(&right).send().await.unwrap();
    assert_eq!(resp.status(), 302);
    let back = location(&resp);
    assert!(back.starts_with("/account?done=confirmed-email&"), "{back}");
    let html = b.get(app.url(&back)).send().await.unwrap().text().await.unwrap();
    assert!(
        html.contains("Save your profile to change your email address"),
        "{html}"
    );
    assert_eq!(
        input_value(&html, "email").as_deref(),
        Some(NEW),
        "nothing typed is lost"
    );
    assert_eq!(input_value(&html, "name").as_deref(), Some("Ada L"));

    let resp = save_profile(&app, &b, &csrf, "Ada L", NEW).await;
    assert_eq!(location(&resp), "/account?done=profile-verify");
    sink.nth(NEW, 1).await.link("/email/verify");
    let notice = sink.nth("ada@example.com", 1).await;
    assert!(notice
        .subject()
        .contains("A change of your email address was requested"));
}

#[tokio::test]
async fn a_stolen_session_cannot_change_or_remove_the_address_but_may_change_the_name() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    app.clock.advance(600);
    for email in [NEW, ""] {
        let resp = save_profile(&app, &b, &csrf, "Mallory", email).await;
        assert_eq!(resp.status(), 302);
        assert!(location(&resp).starts_with("/account/confirm?next=email"));
    }
    // Following the confirmation without the password changes nothing either.
    let resp = b
        .post(app.url("/account/confirm"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("next", "email"),
            ("email", NEW),
            ("password", "guess"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let stored = ada(&app).await;
    assert_eq!(stored.email.as_deref(), Some("ada@example.com"));
    assert_eq!(stored.name.as_deref(), Some("Test User"));
    assert_eq!(rows(&app, "email_tokens").await, 0);

    let resp = save_profile(&app, &b, &csrf, "Ada Lovelace", "ada@example.com").await;
    assert_eq!(location(&resp), "/account?done=profile");
    assert_eq!(ada(&app).await.name.as_deref(), Some("Ada Lovelace"));
}
