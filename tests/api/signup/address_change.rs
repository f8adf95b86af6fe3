//! Address changes on the account page: the link waits in the signed-in browser, the old
//! address is told, and a link opened signed out or as another account changes nothing.

use super::*;

async fn mark_verified(app: &TestApp, user_id: i64) {
    app.state
        .db
        .write(move |c| db::users::set_email_verified(c, user_id, true))
        .await
        .unwrap();
}

async fn change_email(app: &TestApp, b: &reqwest::Client, csrf: &str, email: &str) -> String {
    let resp = b
        .post(app.url("/account/profile"))
        .form(&[("csrf", csrf), ("name", "Ada"), ("email", email)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    location(&resp)
}

#[tokio::test]
async fn a_changed_address_waits_for_its_link_in_the_signed_in_browser_and_the_old_one_is_told() {
    let (app, sink) = spawn_mail(|_| {}).await;
    let ada = app.add_user("ada").await;
    mark_verified(&app, ada.id).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;

    assert_eq!(
        change_email(&app, &b, &csrf, "ada@first.example").await,
        "/account?done=profile-verify"
    );
    // Only pending: the account keeps its confirmed address.
    let ada = app.user("ada").await.unwrap();
    assert_eq!(ada.email.as_deref(), Some("ada@example.com"));
    assert!(ada.email_verified, "the current address stays confirmed");
    let page = b.get(app.url("/account?done=profile-verify")).send().await.unwrap();
    let html = page.text().await.unwrap();
    assert!(html.contains("We sent a link to your new address"), "{html}");
    assert_eq!(input_value(&html, "email").as_deref(), Some("ada@example.com"));
    assert!(text_of(&html, "email-pending").unwrap().contains("ada@first.example"));
    let notice = sink.nth("ada@example.com", 1).await;
    assert!(
        notice
            .subject()
            .contains("A change of your email address was requested"),
        "{}",
        notice.subject()
    );
    assert!(
        !notice.text().contains("ada@first.example"),
        "the new address is not told to the old one"
    );
    let first = sink.nth("ada@first.example", 1).await.link("/email/verify");

    // A second change replaces the first: its link may not confirm anything.
    change_email(&app, &b, &csrf, "ada@second.example").await;
    sink.nth("ada@example.com", 2).await;
    let second = sink.nth("ada@second.example", 1).await.link("/email/verify");
    assert_eq!(b.get(&first).send().await.unwrap().status(), 410);
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(text_of(&html, "email-pending").unwrap().contains("ada@second.example"));
    assert!(!html.contains("ada@first.example"));

    let (status, confirmed) = confirm(&app, &b, &second).await;
    assert_eq!(status, 200);
    assert!(text_of(&confirmed, "continue")
        .unwrap()
        .contains("Return to your account"));
    let ada = app.user("ada").await.unwrap();
    assert_eq!(ada.email.as_deref(), Some("ada@second.example"));
    assert!(ada.email_verified);
    let events = events(&app).await;
    assert!(events.contains(&"account.email_changed".to_string()));
    assert!(events.contains(&"account.email_verified".to_string()));
    // The old address is told the change took effect, still without the new address.
    let changed = sink.nth("ada@example.com", 3).await;
    assert!(
        changed.subject().contains("Your email address was changed"),
        "{}",
        changed.subject()
    );
    assert!(!changed.text().contains("ada@second.example"));
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(text_of(&html, "email-pending").is_none(), "nothing is pending any more");
    assert_eq!(
        b.get(&second).send().await.unwrap().status(),
        410,
        "the link works once"
    );

    // Saving the same address again changes and mails nothing.
    let rows = outbox_rows(&app).await;
    assert_eq!(
        change_email(&app, &b, &csrf, "ada@second.example").await,
        "/account?done=profile"
    );
    assert!(app.user("ada").await.unwrap().email_verified);
    assert_eq!(outbox_rows(&app).await, rows);
}

#[tokio::test]
async fn a_change_link_opened_signed_out_asks_for_sign_in_and_comes_back_to_confirm() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    change_email(&app, &b, &csrf, "ada@new.example").await;
    let link = sink.nth("ada@new.example", 1).await.link("/email/verify");

    // Another browser of ada's, signed out: the page asks for sign-in first.
    let other = browser();
    let html = other.get(&link).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Sign in to confirm the new address"), "{html}");
    let href = html
        .split("id=\"sign-in\"")
        .next()
        .and_then(|h| h.rsplit("href=\"").next())
        .and_then(|h| h.split('"').next())
        .unwrap()
        .replace("&amp;", "&")
        .replace("&#38;", "&");
    assert!(href.starts_with("/email/verify?token="), "{href}");
    let login = other.get(app.url(&href)).send().await.unwrap().text().await.unwrap();
    let signed_in = app.submit_login(&other, form_fields(&login), "ada", PASSWORD).await;
    assert_eq!(signed_in.status(), 302, "{login}");
    let back = location(&signed_in);
    assert_eq!(back, href, "back to the same page, token and all");
    let (status, _) = confirm(&app, &other, &app.url(&back)).await;
    assert_eq!(status, 200);
    assert_eq!(app.user("ada").await.unwrap().email.as_deref(), Some("ada@new.example"));
}

#[tokio::test]
async fn a_change_link_opened_as_another_account_is_forbidden_and_changes_nothing() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_user("ada").await;
    app.add_user("bob").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    change_email(&app, &b, &csrf, "ada@new.example").await;
    let link = sink.nth("ada@new.example", 1).await.link("/email/verify");

    let bob = browser();
    app.portal_login(&bob, "bob", PASSWORD).await;
    let page = bob.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 403);
    assert!(page.text().await.unwrap().contains("Signed in as another account"));
    let token = link.split("token=").nth(1).unwrap();
    let pressed = bob
        .post(app.url("/email/verify"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(pressed.status(), 403);
    assert_eq!(app.user("ada").await.unwrap().email.as_deref(), Some("ada@example.com"));
    // The link still works for ada herself.
    let (status, _) = confirm(&app, &b, &link).await;
    assert_eq!(status, 200);
    assert_eq!(app.user("ada").await.unwrap().email.as_deref(), Some("ada@new.example"));
}

#[tokio::test]
async fn without_mail_a_changed_address_stays_unverified_and_nothing_is_queued() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    mark_verified(&app, ada.id).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    assert_eq!(
        change_email(&app, &b, &csrf, "ada@new.example").await,
        "/account?done=profile"
    );
    let ada = app.user("ada").await.unwrap();
    assert_eq!(
        ada.email.as_deref(),
        Some("ada@new.example"),
        "without mail the change is direct"
    );
    assert!(!ada.email_verified);
    assert_eq!(outbox_rows(&app).await, 0);
}
