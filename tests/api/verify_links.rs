//! Verification links after an open sign-up: every live link to the same address works
//! until one is used (then the others are spent), a sign-in within a minute of the last
//! link mails no other, and a link to an address the account no longer has is dead.

use std::collections::HashMap;

use tessera::config::Signup;
use tessera::db;

use crate::helpers::*;
use crate::smtp::SmtpSink;

const SECRET: &str = "a long sign-up secret";
const LIN: &str = "lin@example.org";

async fn open_signup() -> (TestApp, SmtpSink) {
    spawn_mail(|s| s.signup = Signup::Open).await
}

async fn sign_up(app: &TestApp, b: &reqwest::Client) {
    let resp = b
        .post(app.url("/signup"))
        .form(&HashMap::from([
            ("username", "lin"),
            ("email", LIN),
            ("name", "Lin"),
            ("password", SECRET),
            ("confirm", SECRET),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// A sign-in before the address is confirmed: held (403); the page.
async fn held_sign_in(app: &TestApp, b: &reqwest::Client) -> String {
    let fields = app.open_login(b, &app.url("/account")).await;
    let resp = app.submit_login(b, fields, "lin", SECRET).await;
    assert_eq!(resp.status(), 403);
    resp.text().await.unwrap()
}

async fn outbox_rows(app: &TestApp) -> i64 {
    app.state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap()
}

/// Presses "Confirm" on a link's page: the status.
async fn confirm(app: &TestApp, b: &reqwest::Client, link: &str) -> u16 {
    let page = b.get(link).send().await.unwrap();
    if page.status() != 200 {
        return page.status().as_u16();
    }
    let token = input_value(&page.text().await.unwrap(), "token").unwrap();
    let resp = b
        .post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    resp.status().as_u16()
}

async fn verified(app: &TestApp) -> bool {
    app.user("lin").await.unwrap().email_verified
}

#[tokio::test]
async fn the_link_in_the_inbox_still_works_after_a_sign_in_mails_another_and_using_one_spends_both() {
    let (app, sink) = open_signup().await;
    let b = browser();
    sign_up(&app, &b).await;
    let first = sink.nth(LIN, 1).await.link("/email/verify");

    app.clock.advance(61);
    assert!(held_sign_in(&app, &b).await.contains("sent a new link"));
    let second = sink.nth(LIN, 2).await.link("/email/verify");
    assert_ne!(first, second);
    assert_eq!(b.get(&second).send().await.unwrap().status(), 200);

    assert_eq!(confirm(&app, &b, &first).await, 200, "the first link is still valid");
    assert!(verified(&app).await);
    assert_eq!(
        b.get(&second).send().await.unwrap().status(),
        410,
        "one used spends the others"
    );
    assert_eq!(b.get(&first).send().await.unwrap().status(), 410);
}

#[tokio::test]
async fn a_sign_in_within_a_minute_of_the_last_link_mails_no_other() {
    let (app, sink) = open_signup().await;
    let b = browser();
    sign_up(&app, &b).await;
    let first = sink.nth(LIN, 1).await.link("/email/verify");
    let rows = outbox_rows(&app).await;

    // Well inside the minute: the test clock runs on real time too, and a loaded
    // machine may take seconds between the link and the sign-in.
    app.clock.advance(30);
    let page = held_sign_in(&app, &b).await;
    assert!(!page.contains("sent a new link"), "{page}");
    assert!(page.contains("Follow the link we sent"), "{page}");
    assert_eq!(outbox_rows(&app).await, rows, "nothing queued");
    let tokens = app
        .state
        .db
        .read(|c| db::testing::count_rows(c, "email_tokens"))
        .await
        .unwrap();
    assert_eq!(tokens, 1, "no second link stored");

    // A minute on, a sign-in mails a new one, and the first still works.
    app.clock.advance(31);
    assert!(held_sign_in(&app, &b).await.contains("sent a new link"));
    sink.nth(LIN, 2).await;
    assert_eq!(confirm(&app, &b, &first).await, 200);
}

#[tokio::test]
async fn links_to_an_address_the_account_no_longer_has_are_dead() {
    let (app, sink) = open_signup().await;
    let b = browser();
    sign_up(&app, &b).await;
    let first = sink.nth(LIN, 1).await.link("/email/verify");
    app.clock.advance(61);
    held_sign_in(&app, &b).await;
    let second = sink.nth(LIN, 2).await.link("/email/verify");

    let lin = app.user("lin").await.unwrap();
    let (id, now) = (lin.id, app.clock.now());
    app.state
        .db
        .write(move |c| {
            db::users::set_email(c, id, "lin@elsewhere.example", now)?;
            db::users::set_email_verified(c, id, false)
        })
        .await
        .unwrap();
    for link in [&first, &second] {
        assert_eq!(confirm(&app, &b, link).await, 410);
    }
    assert!(!verified(&app).await);
}
