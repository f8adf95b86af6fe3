//! Text with an `@` is an email address: sign-in links and resets asked for such text
//! go to the account with that address, never to a username that merely looks like it,
//! and a username holds an `@` only when it is the account's own verified address.

use serde_json::json;
use tessera::config::Signup;
use tessera::db;

use crate::helpers::*;
use crate::signin_link::ask_by_mail;

const ERIN: &str = "erin@example.com";
const MALLORY: &str = "mallory@example.net";

/// An account named like erin's address, made before such names were refused, whose
/// own address is mallory's.
async fn add_lookalike(app: &TestApp) {
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            db::users::insert(
                c,
                &db::users::NewUser {
                    sub: "lookalike-sub",
                    username: ERIN,
                    email: Some(MALLORY),
                    name: None,
                    password_hash: &hash,
                    is_admin: false,
                    now,
                },
            )
            .map(|_| ())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_sign_in_link_for_an_address_goes_to_its_owner_not_to_a_username_that_looks_like_it() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    app.add_user("erin").await;
    add_lookalike(&app).await;

    let (status, _) = ask_by_mail(&app, &browser(), ERIN).await;
    assert_eq!(status, 200);
    let mail = sink.nth(ERIN, 1).await;
    assert!(mail.subject().contains("Your sign-in link"), "{}", mail.subject());
    assert!(mail.text().contains("erin"), "{}", mail.text());

    // A reset asked by address goes by address too.
    let reset = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", ERIN)])
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    sink.nth(ERIN, 2).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(sink.to(MALLORY).is_empty(), "nothing for the look-alike username");

    // The look-alike account still signs in with its password, by its name.
    let b = browser();
    app.portal_login(&b, ERIN, PASSWORD).await;
    assert_eq!(b.get(app.url("/account")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn sign_up_refuses_a_username_with_an_at_sign_and_creates_nothing() {
    let (app, _sink) = spawn_mail(|s| s.signup = Signup::Open).await;
    let resp = browser()
        .post(app.url("/signup"))
        .form(&[
            ("username", ERIN),
            ("email", ERIN),
            ("name", "Erin"),
            ("password", "a long sign-up secret"),
            ("confirm", "a long sign-up secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let page = resp.text().await.unwrap();
    assert!(page.contains("may contain @ only when"), "{page}");
    let found = app.user(ERIN).await;
    assert!(found.is_none());
}

#[tokio::test]
async fn the_admin_api_takes_an_at_sign_only_for_the_accounts_own_verified_address() {
    let app = spawn_app().await;
    let token = crate::admin_api::admin_token(&app).await;
    let call = |body: serde_json::Value| {
        let (app, token) = (&app, &token);
        async move {
            let resp = plain_client()
                .post(app.url("/admin/api/users"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    for body in [
        json!({"username": ERIN, "password": "long enough pw"}),
        json!({"username": ERIN, "password": "long enough pw", "email": MALLORY, "email_verified": true}),
        json!({"username": ERIN, "password": "long enough pw", "email": ERIN}),
    ] {
        let (status, answer) = call(body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let why = answer["fields"]["username"].as_str().unwrap_or_default();
        assert!(why.contains("may contain @ only when"), "{answer}");
    }
    let (status, made) = call(json!({"username": ERIN, "password": "long enough pw",
                                     "email": ERIN, "email_verified": true}))
    .await;
    assert_eq!(status, 201, "{made}");
}

#[tokio::test]
async fn an_invitee_may_take_the_invited_address_as_username_but_no_other() {
    let (app, sink) = spawn_mail(|s| s.signup = Signup::Invite).await;
    let token = crate::admin_api::admin_token(&app).await;
    let resp = plain_client()
        .post(app.url("/admin/api/invitations"))
        .bearer_auth(&token)
        .json(&json!({"email": ERIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let link = sink.nth(ERIN, 1).await.link("/invite");
    let link_token = crate::invite::token_of(&link);
    let accept = |username: &'static str| {
        let (app, link_token) = (&app, &link_token);
        async move {
            browser()
                .post(app.url("/invite"))
                .form(&[
                    ("token", link_token.as_str()),
                    ("username", username),
                    ("password", "a brand new secret"),
                    ("confirm", "a brand new secret"),
                ])
                .send()
                .await
                .unwrap()
        }
    };
    let refused = accept(MALLORY).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("may contain @ only when"));
    assert_eq!(accept(ERIN).await.status(), 200, "the link stays usable");
    let erin = app.user(ERIN).await.unwrap();
    assert!(erin.email_verified);
}
