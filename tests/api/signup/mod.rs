//! Open sign-up and email verification, through a real SMTP server: the form (from the
//! login page, from `prompt=create`, on its own), the mailed link followed as a person
//! would, sign-in held until the address is confirmed, the domain limit, no
//! enumeration through a taken address, address changes on the account page, and the
//! refusals (expired, reused, forged links; sign-up off).

use std::collections::HashMap;

use tessera::config::Signup;
use tessera::db;
use tessera::lifecycle::verify::LINK_TTL;

use crate::helpers::{
    browser, form_fields, input_value, location, redirect_params, spawn_app, spawn_mail, spawn_with, text_of, TestApp,
    PASSWORD, REDIRECT,
};
use crate::smtp::SmtpSink;

mod address_change;
mod refusals;

/// A password the sign-up rules accept.
const SECRET: &str = "a long sign-up secret";

async fn open_signup() -> (TestApp, SmtpSink) {
    spawn_mail(|s| s.signup = Signup::Open).await
}

async fn must_verify(app: &TestApp, user_id: i64) -> bool {
    app.state
        .db
        .read(move |c| db::users::lifecycle(c, user_id))
        .await
        .unwrap()
        .must_verify
}

async fn outbox_rows(app: &TestApp) -> i64 {
    app.state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap()
}

async fn events(app: &TestApp) -> Vec<String> {
    app.audit().await.into_iter().map(|e| e.0).collect()
}

/// Posts the sign-up form with `parked` (request_id and csrf, or nothing).
async fn sign_up(
    app: &TestApp,
    b: &reqwest::Client,
    parked: &HashMap<String, String>,
    username: &str,
    email: &str,
) -> (u16, String) {
    let mut form: HashMap<&str, &str> = HashMap::from([
        ("username", username),
        ("email", email),
        ("name", "New Person"),
        ("password", SECRET),
        ("confirm", SECRET),
    ]);
    for key in ["request_id", "csrf"] {
        if let Some(v) = parked.get(key) {
            form.insert(key, v);
        }
    }
    let resp = b.post(app.url("/signup")).form(&form).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Opens a mailed link, checks that the page only asks, and presses "Confirm".
async fn confirm(app: &TestApp, b: &reqwest::Client, link: &str) -> (u16, String) {
    let page = b.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link's page");
    let html = page.text().await.unwrap();
    assert!(html.contains("action=\"/email/verify\""), "{html}");
    let token = input_value(&html, "token").unwrap();
    let resp = b
        .post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Presses "Continue to sign in" on the confirmed page: the login form for the request.
async fn continue_to_login(app: &TestApp, b: &reqwest::Client, confirmed: &str) -> HashMap<String, String> {
    assert!(confirmed.contains("Continue to sign in"), "{confirmed}");
    let resp = b
        .post(app.url("/signup/continue"))
        .form(&form_fields(confirmed))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    assert!(html.contains("action=\"/login\""), "{html}");
    form_fields(&html)
}

async fn userinfo(app: &TestApp, access_token: &str) -> serde_json::Value {
    browser()
        .get(app.url("/userinfo"))
        .bearer_auth(access_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn open_sign_up_from_the_login_page_mails_a_link_and_then_signs_in_to_the_client() {
    let (app, sink) = open_signup().await;
    let secret = app.add_client("app", false).await.unwrap();
    let b = browser();
    let login = b
        .get(app.authorize_url("app", &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(login.contains("id=\"signup-link\""), "the login page offers sign-up");
    let parked = form_fields(&login);
    let start = b.post(app.url("/signup/start")).form(&parked).send().await.unwrap();
    assert_eq!(start.status(), 200);
    let form = start.text().await.unwrap();
    assert!(
        form.contains("action=\"/signup\"") && form.contains("app app"),
        "{form}"
    );
    let parked = form_fields(&form);

    let (status, page) = sign_up(&app, &b, &parked, "grace", "grace@example.org").await;
    assert_eq!(status, 200, "{page}");
    assert!(text_of(&page, "signup-sent").unwrap().contains("grace@example.org"));
    let grace = app.user("grace").await.expect("the account exists");
    assert!(!grace.email_verified && must_verify(&app, grace.id).await);
    assert_eq!(grace.name.as_deref(), Some("New Person"));
    assert!(events(&app).await.contains(&"account.signup".to_string()));

    let mail = sink.nth("grace@example.org", 1).await;
    assert!(
        mail.subject().contains("Confirm your email address"),
        "{}",
        mail.subject()
    );
    let link = mail.link("/email/verify?token=");
    assert!(
        link.starts_with(&app.url("/email/verify")),
        "built from the issuer: {link}"
    );
    let (status, confirmed) = confirm(&app, &b, &link).await;
    assert_eq!(status, 200, "{confirmed}");
    let grace = app.user("grace").await.unwrap();
    assert!(grace.email_verified && !must_verify(&app, grace.id).await);
    assert!(events(&app).await.contains(&"account.email_verified".to_string()));

    let fields = continue_to_login(&app, &b, &confirmed).await;
    assert_eq!(fields["username"], "grace", "the username is filled in");
    let resp = app.submit_login(&b, fields, "grace", SECRET).await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let params = redirect_params(&resp);
    assert_eq!(params["state"], "st4te");
    let tokens = app.exchange("app", &secret, &params["code"]).await;
    let info = userinfo(&app, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(info["email"], "grace@example.org");
    assert_eq!(info["email_verified"], true);
}

#[tokio::test]
async fn prompt_create_opens_the_sign_up_form_and_the_client_gets_its_code() {
    let (app, sink) = open_signup().await;
    let secret = app.add_client("app", false).await.unwrap();
    let discovery: serde_json::Value = browser()
        .get(app.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let prompts = discovery["prompt_values_supported"].as_array().unwrap();
    assert!(prompts.iter().any(|p| p == "create"), "{prompts:?}");
    assert!(prompts.iter().any(|p| p == "login"), "{prompts:?}");

    let b = browser();
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "create")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let form = resp.text().await.unwrap();
    assert!(
        form.contains("action=\"/signup\"") && !form.contains("action=\"/login\""),
        "{form}"
    );
    let parked = form_fields(&form);
    assert!(!parked["request_id"].is_empty(), "the request is parked");
    let (status, _) = sign_up(&app, &b, &parked, "hopper", "hopper@example.org").await;
    assert_eq!(status, 200);
    let link = sink.nth("hopper@example.org", 1).await.link("/email/verify");
    let (_, confirmed) = confirm(&app, &b, &link).await;
    let fields = continue_to_login(&app, &b, &confirmed).await;
    let resp = app.submit_login(&b, fields, "hopper", SECRET).await;
    assert_eq!(resp.status(), 303);
    assert!(location(&resp).starts_with(REDIRECT));
    let tokens = app.exchange("app", &secret, &redirect_params(&resp)["code"]).await;
    assert!(tokens["id_token"].is_string());
}

#[tokio::test]
async fn before_verifying_a_correct_password_is_held_and_a_new_link_mailed() {
    let (app, sink) = open_signup().await;
    app.add_user("ada").await;
    let b = browser();
    let (status, _) = sign_up(&app, &b, &HashMap::new(), "lin", "lin@example.org").await;
    assert_eq!(status, 200);
    let first = sink.nth("lin@example.org", 1).await.link("/email/verify");

    // A wrong password looks as it does for any account, and mails nothing.
    let wrong = |who: &'static str| {
        let (app, b) = (&app, &b);
        async move {
            let fields = app.open_login(b, &app.url("/account")).await;
            let resp = app.submit_login(b, fields, who, "not the password").await;
            (
                resp.status().as_u16(),
                text_of(&resp.text().await.unwrap(), "login-error"),
            )
        }
    };
    let before = outbox_rows(&app).await;
    assert_eq!(wrong("lin").await, wrong("ada").await);
    assert_eq!(wrong("lin").await.0, 401);
    assert_eq!(outbox_rows(&app).await, before);

    // A minute after the first link: one more is sent.
    app.clock.advance(61);
    let fields = app.open_login(&b, &app.url("/account")).await;
    let resp = app.submit_login(&b, fields, "lin", SECRET).await;
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("set-cookie").is_none(), "no session");
    let page = resp.text().await.unwrap();
    assert!(page.contains("Confirm your email address first"), "{page}");
    assert!(page.contains("sent a new link"), "{page}");
    assert!(events(&app).await.contains(&"login.unverified".to_string()));
    let second = sink.nth("lin@example.org", 2).await.link("/email/verify");
    assert_ne!(first, second);
    assert_eq!(
        b.get(&first).send().await.unwrap().status(),
        200,
        "the new link leaves the first working"
    );

    // The new link continues the sign-in it was sent from (Tessera's own pages here).
    let (status, confirmed) = confirm(&app, &b, &second).await;
    assert_eq!(status, 200);
    let fields = continue_to_login(&app, &b, &confirmed).await;
    let resp = app.submit_login(&b, fields, "lin", SECRET).await;
    assert_eq!(resp.status(), 302);
    assert_eq!(location(&resp), "/account");
}

#[tokio::test]
async fn new_links_at_sign_in_keep_to_the_hourly_limit_and_the_last_one_keeps_working() {
    let (app, sink) = spawn_mail(|s| {
        s.signup = Signup::Open;
        s.mail_per_hour = 2;
    })
    .await;
    let b = browser();
    sign_up(&app, &b, &HashMap::new(), "kim", "kim@example.org").await;
    let held = |n: usize| {
        let (app, b) = (&app, &b);
        async move {
            // Past the minute within which no second link is sent.
            app.clock.advance(61);
            let fields = app.open_login(b, &app.url("/account")).await;
            let resp = app.submit_login(b, fields, "kim", SECRET).await;
            assert_eq!(resp.status(), 403, "attempt {n}");
            resp.text().await.unwrap()
        }
    };
    assert!(held(1).await.contains("sent a new link"));
    let second = sink.nth("kim@example.org", 2).await.link("/email/verify");
    let limited = held(2).await;
    assert!(!limited.contains("sent a new link"), "{limited}");
    assert_eq!(outbox_rows(&app).await, 2, "no third mail this hour");
    let (status, _) = confirm(&app, &b, &second).await;
    assert_eq!(status, 200, "a limited resend leaves the last link working");
}

#[tokio::test]
async fn sign_up_is_limited_to_the_configured_domains_without_regard_to_case() {
    let (app, sink) = spawn_mail(|s| {
        s.signup = Signup::Open;
        s.signup_domains = vec!["example.org".into()];
    })
    .await;
    let b = browser();
    let form = b.get(app.url("/signup")).send().await.unwrap().text().await.unwrap();
    assert!(form.contains("example.org"), "the form says which domains");
    let (status, page) = sign_up(&app, &b, &HashMap::new(), "eve", "eve@example.com").await;
    assert_eq!(status, 400);
    assert!(text_of(&page, "email-error").unwrap().contains("example.org"), "{page}");
    assert!(app.user("eve").await.is_none());
    assert_eq!(outbox_rows(&app).await, 0);
    let (status, _) = sign_up(&app, &b, &HashMap::new(), "eve", "Eve@EXAMPLE.Org").await;
    assert_eq!(status, 200);
    sink.wait_for("eve@example.org", 1).await;
}

#[tokio::test]
async fn the_form_checks_each_field_with_the_setup_rules() {
    let (app, _sink) = open_signup().await;
    let b = browser();
    let resp = b
        .post(app.url("/signup"))
        .form(&[
            ("username", "two words"),
            ("email", "nobody"),
            ("password", "ana-12345"),
            ("confirm", "something else"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let page = resp.text().await.unwrap();
    for field in ["username-error", "email-error", "confirm-error"] {
        assert!(text_of(&page, field).is_some(), "{field}: {page}");
    }
    let resp = b
        .post(app.url("/signup"))
        .form(&[
            ("username", "ana"),
            ("email", "ana@example.org"),
            ("password", "ana-12345"),
            ("confirm", "ana-12345"),
        ])
        .send()
        .await
        .unwrap();
    let page = resp.text().await.unwrap();
    assert!(text_of(&page, "password-error").unwrap().contains("username"), "{page}");
    assert!(app.user("ana").await.is_none());
    assert_eq!(outbox_rows(&app).await, 0);
}

#[tokio::test]
async fn a_taken_address_gets_the_same_answer_and_its_owner_is_told() {
    let (app, sink) = open_signup().await;
    app.add_user("ada").await;
    let b = browser();
    let (status, fresh) = sign_up(&app, &b, &HashMap::new(), "newbie", "newbie@example.org").await;
    assert_eq!(status, 200);
    let (status, taken) = sign_up(&app, &b, &HashMap::new(), "copycat", "ADA@example.com").await;
    assert_eq!(status, 200);
    assert_eq!(
        taken.replace("ADA@example.com", "ADDRESS"),
        fresh.replace("newbie@example.org", "ADDRESS"),
        "the answer says nothing of the account"
    );
    assert!(app.user("copycat").await.is_none(), "no second account");
    let told = sink.nth("ada@example.com", 1).await;
    assert!(
        told.subject().contains("Someone tried to sign up"),
        "{}",
        told.subject()
    );
    assert!(told.text().contains("ada"), "names the existing account");
    assert!(
        !told.text().contains("/email/verify"),
        "no link that would verify anything"
    );
    assert!(app
        .audit()
        .await
        .iter()
        .any(|e| e.0 == "account.signup_refused" && e.2.as_deref() == Some("ada")));

    // A taken username may be said (usernames are public), whatever the address.
    let rows = outbox_rows(&app).await;
    for email in ["someone@example.org", "ada@example.com"] {
        let (status, page) = sign_up(&app, &b, &HashMap::new(), "ADA", email).await;
        assert_eq!(status, 400);
        assert_eq!(
            text_of(&page, "username-error").as_deref(),
            Some("this username is taken")
        );
    }
    assert_eq!(outbox_rows(&app).await, rows, "nothing mailed for a taken username");
}

#[tokio::test]
async fn with_sign_up_off_the_pages_are_not_found_and_nothing_offers_it() {
    // Off with mail on, and open without mail (which cannot verify: treated as off).
    let (mail_only, _sink) = spawn_mail(|_| {}).await;
    let no_mail = spawn_with(|s| s.signup = Signup::Open).await;
    for app in [&mail_only, &no_mail] {
        app.add_client("app", false).await;
        let b = browser();
        assert_eq!(b.get(app.url("/signup")).send().await.unwrap().status(), 404);
        let login = b
            .get(app.authorize_url("app", &[]))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!login.contains("signup-link"), "no sign-up link");
        let parked = form_fields(&login);
        let start = b.post(app.url("/signup/start")).form(&parked).send().await.unwrap();
        assert_eq!(start.status(), 404);
        let (status, _) = sign_up(app, &b, &parked, "zed", "zed@example.org").await;
        assert_eq!(status, 404);
        assert!(app.user("zed").await.is_none());
        // prompt=create behaves as if it were absent: the login page.
        let create = b
            .get(app.authorize_url("app", &[("prompt", "create")]))
            .send()
            .await
            .unwrap();
        assert_eq!(create.status(), 200);
        assert!(create.text().await.unwrap().contains("action=\"/login\""));
        let discovery: serde_json::Value = b
            .get(app.url("/.well-known/openid-configuration"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let prompts = discovery["prompt_values_supported"].as_array().unwrap();
        assert!(!prompts.iter().any(|p| p == "create"), "{prompts:?}");
    }
}
