//! What sign-up refuses: expired, reused and forged links, too many sign-ups from one
//! address, a forged request; and a sign-in that expired meanwhile.

use super::*;

#[tokio::test]
async fn expired_reused_and_forged_links_are_refused_with_a_readable_page() {
    let (app, sink) = open_signup().await;
    let b = browser();
    sign_up(&app, &b, &HashMap::new(), "max", "max@example.org").await;
    let link = sink.nth("max@example.org", 1).await.link("/email/verify");

    let refused = |resp: reqwest::Response| async move {
        assert_eq!(resp.status(), 410);
        let page = resp.text().await.unwrap();
        assert!(page.contains("new link"), "says how to get a new one: {page}");
    };
    for token in ["forged", "", &"x".repeat(500)] {
        refused(
            b.get(app.url(&format!("/email/verify?token={token}")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let posted = b
            .post(app.url("/email/verify"))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        refused(posted).await;
    }

    // Expired: a day later the link is refused, and the account is still held.
    let token = link.split("token=").nth(1).unwrap().to_string();
    app.clock.advance(LINK_TTL + 1);
    refused(b.get(&link).send().await.unwrap()).await;
    let posted = b
        .post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    refused(posted).await;
    let max = app.user("max").await.unwrap();
    assert!(!max.email_verified && must_verify(&app, max.id).await);

    // A fresh link (from signing in) works once; used again it is refused.
    let fields = app.open_login(&b, &app.url("/account")).await;
    assert_eq!(app.submit_login(&b, fields, "max", SECRET).await.status(), 403);
    let fresh = sink.nth("max@example.org", 2).await.link("/email/verify");
    let token = fresh.split("token=").nth(1).unwrap().to_string();
    let (status, _) = confirm(&app, &b, &fresh).await;
    assert_eq!(status, 200);
    refused(b.get(&fresh).send().await.unwrap()).await;
    let again = b
        .post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    refused(again).await;
    let verified = events(&app)
        .await
        .into_iter()
        .filter(|e| e == "account.email_verified")
        .count();
    assert_eq!(verified, 1, "verified once");
}

#[tokio::test]
async fn sign_ups_from_one_address_are_rate_limited() {
    let (app, _sink) = spawn_mail(|s| {
        s.signup = Signup::Open;
        s.rate_limit = true;
    })
    .await;
    let b = browser();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let resp = b
            .post(app.url("/signup"))
            .form(&[("username", "")])
            .send()
            .await
            .unwrap();
        if resp.status() == 429 {
            assert!(resp.headers().get("retry-after").is_some());
        }
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(&statuses[..5], &[400; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
}

#[tokio::test]
async fn a_sign_up_form_with_a_forged_request_is_refused() {
    let (app, _sink) = open_signup().await;
    app.add_client("app", false).await;
    let b = browser();
    let mut parked = app.open_login(&b, &app.authorize_url("app", &[])).await;
    parked.insert("csrf".into(), "forged".into());
    let start = b.post(app.url("/signup/start")).form(&parked).send().await.unwrap();
    assert_eq!(start.status(), 403);
    let (status, _) = sign_up(&app, &b, &parked, "mallory", "mallory@example.org").await;
    assert_eq!(status, 403);
    assert!(app.user("mallory").await.is_none());
}

#[tokio::test]
async fn a_sign_in_that_expired_meanwhile_still_makes_the_account_and_ends_on_a_plain_page() {
    let (app, sink) = open_signup().await;
    app.add_client("app", false).await;
    let login_request = app.state.settings.lifetimes.login_request;
    let b = browser();
    let create = |b: reqwest::Client| {
        let app = &app;
        async move {
            let html = b
                .get(app.authorize_url("app", &[("prompt", "create")]))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            form_fields(&html)
        }
    };
    // Expired before the form was sent: the account is made all the same.
    let parked = create(b.clone()).await;
    app.clock.advance(login_request + 1);
    let (status, page) = sign_up(&app, &b, &parked, "late", "late@example.org").await;
    assert_eq!(status, 200, "{page}");
    assert!(app.user("late").await.is_some());

    // Expired before the link was followed: verified, then a plain "Sign in".
    let parked = create(b.clone()).await;
    sign_up(&app, &b, &parked, "later", "later@example.org").await;
    let link = sink.nth("later@example.org", 1).await.link("/email/verify");
    app.clock.advance(login_request + 1);
    let (status, confirmed) = confirm(&app, &b, &link).await;
    assert_eq!(status, 200);
    assert!(!confirmed.contains("Continue to sign in"), "{confirmed}");
    assert_eq!(text_of(&confirmed, "continue").as_deref(), Some("Sign in"));
    assert!(app.user("later").await.unwrap().email_verified);
}
