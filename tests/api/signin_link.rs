//! Signing in by mail through a real SMTP server: one mail holds a link and a code, each
//! works once for 15 minutes and only for the browser that asked; an unknown account
//! gets the same page and no mail; the second factor still applies.

use std::collections::HashMap;

use crate::helpers::*;
use crate::smtp::{Received, SmtpSink};
use tessera::auth::totp;
use tessera::db;
use tessera::signin::link as signin;

pub const ADA: &str = "ada@example.com";

async fn post(app: &TestApp, b: &reqwest::Client, path: &str, form: &HashMap<String, String>) -> reqwest::Response {
    b.post(app.url(path)).form(form).send().await.unwrap()
}

/// From the application's authorization request, through "Email me a sign-in link",
/// to the page that asks for the code: its status and body.
pub async fn ask_by_mail(app: &TestApp, b: &reqwest::Client, who: &str) -> (u16, String) {
    let login = app.open_login(b, &app.authorize_url("rp", &[])).await;
    let ask = post(app, b, "/login/email", &login).await;
    assert_eq!(ask.status(), 200, "the form asking who to mail");
    let mut fields = form_fields(&ask.text().await.unwrap());
    fields.insert("who".into(), who.into());
    let sent = post(app, b, "/login/email/send", &fields).await;
    (sent.status().as_u16(), sent.text().await.unwrap())
}

/// Types `code` on the "check your mail" page.
pub async fn type_code(app: &TestApp, b: &reqwest::Client, page: &str, code: &str) -> reqwest::Response {
    let mut fields = form_fields(page);
    fields.insert("code".into(), code.into());
    post(app, b, "/login/email/code", &fields).await
}

/// Opens a mailed link in `b` and presses its button.
async fn open_and_confirm(b: &reqwest::Client, link: &str) -> reqwest::Response {
    let page = b.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link shows its button");
    let html = page.text().await.unwrap();
    assert!(html.contains("Sign in as"), "{html}");
    let token = input_value(&html, "token").unwrap();
    let base = link.split("/login/email/link").next().unwrap();
    b.post(format!("{base}/login/email/link"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap()
}

/// The `amr` of the ID token a redirect's code exchanges for.
pub async fn amr_of(app: &TestApp, secret: &str, resp: &reqwest::Response) -> serde_json::Value {
    assert_eq!(resp.status(), 303, "redirected to the application");
    let code = redirect_params(resp)["code"].clone();
    let tokens = app.exchange("rp", secret, &code).await;
    jwt_parts(tokens["id_token"].as_str().unwrap()).1["amr"].clone()
}

/// Adds an authenticator app through the account page; returns its key.
pub async fn enrol_totp(app: &TestApp, username: &str) -> String {
    let b = browser();
    app.portal_login(&b, username, PASSWORD).await;
    enrol_totp_in(app, &b).await
}

/// Adds an authenticator app from the signed-in browser `b`; returns its key.
pub async fn enrol_totp_in(app: &TestApp, b: &reqwest::Client) -> String {
    let csrf = app.csrf(b).await;
    app.enrol_totp(b, &csrf).await
}

/// The `n`-th mail to `to` whose subject has `subject` in it (other mails, such as
/// security notices, may come between), waiting at most 20 s for it.
pub async fn mail_about(sink: &SmtpSink, to: &str, subject: &str, n: usize) -> Received {
    for _ in 0..200 {
        let got: Vec<_> = sink
            .to(to)
            .into_iter()
            .filter(|m| m.subject().contains(subject))
            .collect();
        if got.len() >= n {
            return got[n - 1].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no mail {n} about {subject:?} to {to}: {:?}", sink.to(to));
}

/// The `n`-th sign-in mail to ada.
async fn signin_mail(sink: &SmtpSink, n: usize) -> Received {
    mail_about(sink, ADA, "Your sign-in link", n).await
}

/// An app that mails, with the client `rp` and the person `ada`: the app, its mail
/// sink and rp's secret.
async fn mailing_app_with_ada() -> (TestApp, SmtpSink, String) {
    let (app, sink) = spawn_mail(|_| {}).await;
    let secret = app.add_client("rp", false).await.unwrap();
    app.add_user("ada").await;
    (app, sink, secret)
}

/// ada's first sign-in link, asked for and opened in `b`: the page that then asks for
/// her second factor.
async fn second_factor_page_after_a_link(app: &TestApp, sink: &SmtpSink, b: &reqwest::Client) -> String {
    ask_by_mail(app, b, "ada").await;
    let link = signin_mail(sink, 1).await.link("/login/email/link");
    let mfa = open_and_confirm(b, &link).await;
    assert_eq!(mfa.status(), 200);
    mfa.text().await.unwrap()
}

async fn outbox_rows(app: &TestApp) -> i64 {
    app.state
        .db
        .read(|c| db::testing::count_rows(c, "mail_outbox"))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_mailed_link_signs_in_the_browser_that_asked_and_its_code_exchanges() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let b = browser();
    let (status, page) = ask_by_mail(&app, &b, "ada").await;
    assert_eq!(status, 200);
    assert!(text_of(&page, "signin-link-sent").is_some(), "{page}");

    let mail = signin_mail(&sink, 1).await;
    assert!(mail.subject().ends_with("Your sign-in link"), "{}", mail.subject());
    let link = mail.link("/login/email/link");
    assert!(link.starts_with(&app.address), "built from the issuer: {link}");
    let code = mail.code();
    assert!(code.len() == 6 && code.bytes().all(|c| c.is_ascii_digit()), "{code}");

    let done = open_and_confirm(&b, &link).await;
    // One factor, a one-time secret by mail: RFC 8176 `otp`, and no `mfa`.
    assert_eq!(amr_of(&app, &secret, &done).await, serde_json::json!(["otp"]));
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    for e in ["login.email_link_sent", "login.ok", "token.issued"] {
        assert!(events.contains(&e.to_string()), "{e} is audited: {events:?}");
    }
    assert_eq!(sink.to(ADA).len(), 1, "one mail holds both the link and the code");
}

#[tokio::test]
async fn the_mailed_code_signs_in_on_the_page_that_asked() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let b = browser();
    // By address as well as by username.
    let (_, page) = ask_by_mail(&app, &b, "ADA@example.com").await;
    let code = signin_mail(&sink, 1).await.code();
    let done = type_code(&app, &b, &page, &code).await;
    assert_eq!(amr_of(&app, &secret, &done).await, serde_json::json!(["otp"]));

    // The code is spent, and with it the link of the same mail.
    let again = type_code(&app, &b, &page, &code).await;
    assert_eq!(again.status(), 400, "the page's sign-in is over");
    let link = signin_mail(&sink, 1).await.link("/login/email/link");
    assert_eq!(b.get(&link).send().await.unwrap().status(), 410);
}

#[tokio::test]
async fn an_unknown_account_gets_the_same_page_and_no_mail() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let (known, unknown) = (browser(), browser());
    let (s1, real) = ask_by_mail(&app, &known, "ada").await;
    let (s2, decoy) = ask_by_mail(&app, &unknown, "nobody").await;
    assert_eq!((s1, s2), (200, 200));
    // The pages differ only in the names of their parked requests.
    let strip = |html: &str| {
        let f = form_fields(html);
        html.replace(&f["request_id"], "").replace(&f["csrf"], "")
    };
    assert_eq!(strip(&real), strip(&decoy));
    sink.wait_for(ADA, 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(sink.messages().len(), 1, "no mail for the unknown name");
    assert_eq!(outbox_rows(&app).await, 1);

    // A guessed code reads the same on both pages.
    let wrong_real = type_code(&app, &known, &real, "000000").await;
    let wrong_decoy = type_code(&app, &unknown, &decoy, "000000").await;
    assert_eq!(
        (wrong_real.status().as_u16(), wrong_decoy.status().as_u16()),
        (401, 401)
    );
    let (a, b) = (wrong_real.text().await.unwrap(), wrong_decoy.text().await.unwrap());
    assert_eq!(text_of(&a, "code-error"), text_of(&b, "code-error"));
}

#[tokio::test]
async fn five_wrong_codes_void_the_code() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let code = signin_mail(&sink, 1).await.code();
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for _ in 1..signin::MAX_ATTEMPTS {
        assert_eq!(type_code(&app, &b, &page, wrong).await.status(), 401);
    }
    let last = type_code(&app, &b, &page, wrong).await;
    assert_eq!(last.status(), 400);
    let html = last.text().await.unwrap();
    assert!(text_of(&html, "signin-link-error")
        .unwrap()
        .contains("Too many wrong codes"));
    // The right code no longer works: the person starts again.
    let right = type_code(&app, &b, &page, &code).await;
    assert_eq!(right.status(), 400);
    assert!(right.text().await.unwrap().contains("Ask for a new one"));
    let link = signin_mail(&sink, 1).await.link("/login/email/link");
    assert_eq!(
        b.get(&link).send().await.unwrap().status(),
        410,
        "the link went with it"
    );
    let audit = app.audit().await;
    assert!(audit.iter().all(|e| e.0 != "login.ok"));
    let failed = audit.iter().filter(|e| e.0 == "login.failed").count();
    assert_eq!(
        failed,
        signin::MAX_ATTEMPTS as usize,
        "each wrong code is audited as a failed sign-in"
    );
}

#[tokio::test]
async fn a_used_or_forged_link_is_refused() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let b = browser();
    ask_by_mail(&app, &b, "ada").await;
    let link = signin_mail(&sink, 1).await.link("/login/email/link");
    let done = open_and_confirm(&b, &link).await;
    amr_of(&app, &secret, &done).await;

    assert_eq!(b.get(&link).send().await.unwrap().status(), 410, "used");
    let token = link.split("token=").nth(1).unwrap();
    let replay = b
        .post(app.url("/login/email/link"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 410);
    let forged = b
        .get(app.url("/login/email/link?token=forged-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 410);
    assert!(forged.text().await.unwrap().contains("no longer valid"));
}

#[tokio::test]
async fn a_link_opened_in_another_browser_points_back_to_the_code() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let mail = signin_mail(&sink, 1).await;
    let link = mail.link("/login/email/link");

    let elsewhere = browser();
    let opened = elsewhere.get(&link).send().await.unwrap();
    assert_eq!(opened.status(), 403);
    let html = opened.text().await.unwrap();
    assert!(html.contains("type the 6-digit code"), "{html}");
    assert!(!html.contains("name=\"token\""), "no button to press there");
    let token = link.split("token=").nth(1).unwrap();
    let pressed = elsewhere
        .post(app.url("/login/email/link"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(pressed.status(), 403);

    // Nothing was spent: the browser that asked goes on with the code.
    let done = type_code(&app, &b, &page, &mail.code()).await;
    assert_eq!(amr_of(&app, &secret, &done).await, serde_json::json!(["otp"]));
}

#[tokio::test]
async fn the_link_and_code_expire_after_their_lifetime() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let mail = signin_mail(&sink, 1).await;
    let link = mail.link("/login/email/link");

    app.clock.advance(signin::TTL - 30);
    assert_eq!(
        b.get(&link).send().await.unwrap().status(),
        200,
        "still live just before"
    );
    app.clock.advance(31);
    let late = b.get(&link).send().await.unwrap();
    assert_eq!(late.status(), 410);
    assert!(late.text().await.unwrap().contains("15 minutes"));
    let code = type_code(&app, &b, &page, &mail.code()).await;
    assert_eq!(code.status(), 400, "the code expired too");
    assert!(app.audit().await.iter().all(|e| e.0 != "login.ok"));
}

#[tokio::test]
async fn the_second_factor_is_still_asked_after_a_link() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let key = enrol_totp(&app, "ada").await;
    let b = browser();
    let html = second_factor_page_after_a_link(&app, &sink, &b).await;
    assert!(
        html.contains("action=\"/login/mfa\""),
        "asks for the app's code: {html}"
    );
    assert!(!html.contains("We mailed"), "the app, not a second mail");

    let mut fields = form_fields(&html);
    let next = totp::code_at(&key, app.clock.now() + totp::STEP).unwrap();
    fields.insert("code".into(), next);
    let done = post(&app, &b, "/login/mfa", &fields).await;
    // The mailbox and the app: two factors, and no password was used.
    assert_eq!(amr_of(&app, &secret, &done).await, serde_json::json!(["otp", "mfa"]));
    assert!(app.audit().await.iter().any(|e| e.0 == "login.email_ok"));
}

#[tokio::test]
async fn a_disabled_or_locked_account_gets_no_link() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    app.add_user("ada").await;
    app.add_user("bob").await;
    app.state
        .db
        .write(|c| db::users::set_disabled(c, "bob", true, 0))
        .await
        .unwrap();
    let (status, _) = ask_by_mail(&app, &browser(), "bob").await;
    assert_eq!(status, 200, "the same answer");
    // Five wrong passwords lock ada; then no link is mailed while the lock lasts.
    for _ in 0..5 {
        let b = browser();
        let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
        assert_eq!(app.submit_login(&b, fields, "ada", "wrong").await.status(), 401);
    }
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    assert_eq!(
        app.submit_login(&b, fields, "ada", PASSWORD).await.status(),
        401,
        "locked"
    );
    let (status, _) = ask_by_mail(&app, &browser(), "ada").await;
    assert_eq!(status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(outbox_rows(&app).await, 0, "no mail for a disabled or locked account");
}

#[tokio::test]
async fn without_mail_there_is_no_sign_in_by_mail() {
    let app = spawn_app().await;
    app.add_client("rp", false).await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let resp = post(&app, &b, "/login/email", &fields).await;
    assert_eq!(resp.status(), 404);
    let link = b.get(app.url("/login/email/link?token=x")).send().await.unwrap();
    assert_eq!(link.status(), 404);
}

/// Asks on the account page, signed in in `b`, for the address to become `to`: with
/// mail on, the change only waits for its link to be confirmed.
pub async fn request_address(app: &TestApp, b: &reqwest::Client, to: &str) {
    let csrf = app.csrf(b).await;
    let resp = b
        .post(app.url("/account/profile"))
        .form(&[("csrf", csrf.as_str()), ("name", "Ada"), ("email", to)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302, "the change is asked for");
}

/// The confirmation link of the `n`-th change of address mailed to `to`.
pub async fn change_link(sink: &SmtpSink, to: &str, n: usize) -> String {
    mail_about(sink, to, "Confirm your new email address", n)
        .await
        .link("/email/verify")
}

/// Opens a change's link in `b` and presses "Confirm": the response.
pub async fn confirm_change(app: &TestApp, b: &reqwest::Client, link: &str) -> reqwest::Response {
    let page = b.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link's page");
    let html = page.text().await.unwrap();
    let token = input_value(&html, "token").expect("the page has the Confirm button");
    b.post(app.url("/email/verify"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap()
}

/// Changes the signed-in account's address on its account page and confirms the new
/// address's link in the same browser.
pub async fn change_address(app: &TestApp, b: &reqwest::Client, sink: &SmtpSink, to: &str) {
    let before = sink
        .to(to)
        .iter()
        .filter(|m| m.subject().contains("Confirm your new email address"))
        .count();
    request_address(app, b, to).await;
    let link = change_link(sink, to, before + 1).await;
    let confirmed = confirm_change(app, b, &link).await;
    assert_eq!(confirmed.status(), 200, "the change is confirmed");
}

#[tokio::test]
async fn a_link_and_code_mailed_before_an_address_change_work_until_the_change_is_confirmed() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let account = browser();
    app.portal_login(&account, "ada", PASSWORD).await;
    let b = browser();
    let (_, _) = ask_by_mail(&app, &b, "ada").await;
    let first = signin_mail(&sink, 1).await;
    // Only asked for: the account keeps its address, and its mail is still good.
    request_address(&app, &account, "ada@elsewhere.test").await;
    let resp = open_and_confirm(&b, &first.link("/login/email/link")).await;
    assert_eq!(resp.status(), 303, "the link still signs in");

    let c = browser();
    let (_, page) = ask_by_mail(&app, &c, "ada").await;
    let second = signin_mail(&sink, 2).await;
    let link = change_link(&sink, "ada@elsewhere.test", 1).await;
    assert_eq!(confirm_change(&app, &account, &link).await.status(), 200);
    // Confirmed: what was mailed to the old address is void.
    let code = type_code(&app, &c, &page, &second.code()).await;
    assert_eq!(code.status(), 400, "the code is dead");
    let (_, _) = ask_by_mail(&app, &browser(), "ada").await;
    mail_about(&sink, "ada@elsewhere.test", "Your sign-in link", 1).await;
}

#[tokio::test]
async fn a_link_and_code_mailed_before_an_address_change_stay_dead_after_it_is_changed_back() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let mail = signin_mail(&sink, 1).await;

    // Away and back: the address is ada's again, but what was mailed before the
    // change was voided with it (not merely refused while the addresses differ).
    let account = browser();
    app.portal_login(&account, "ada", PASSWORD).await;
    change_address(&app, &account, &sink, "ada@elsewhere.test").await;
    change_address(&app, &account, &sink, ADA).await;

    let link = mail.link("/login/email/link");
    assert_eq!(b.get(&link).send().await.unwrap().status(), 410, "the link is dead");
    let code = type_code(&app, &b, &page, &mail.code()).await;
    assert_eq!(code.status(), 400, "the code is dead");
    assert!(code.text().await.unwrap().contains("Ask for a new one"));
    let logins = app.audit().await.into_iter().filter(|e| e.0 == "login.ok").count();
    assert_eq!(logins, 1, "only the account page's own sign-in");
}

#[tokio::test]
async fn a_link_or_code_for_an_address_the_account_no_longer_has_is_refused() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    let id = app.add_user("ada").await.id;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let mail = signin_mail(&sink, 1).await;
    // Changed underneath, with no token voided: the tokens name the old address.
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| db::users::update_profile(c, id, None, Some("ada@elsewhere.test"), now))
        .await
        .unwrap();

    let link = mail.link("/login/email/link");
    assert_eq!(b.get(&link).send().await.unwrap().status(), 410);
    let token = link.split("token=").nth(1).unwrap();
    let pressed = post(
        &app,
        &b,
        "/login/email/link",
        &HashMap::from([("token".to_string(), token.to_string())]),
    )
    .await;
    assert_eq!(pressed.status(), 410);
    let code = type_code(&app, &b, &page, &mail.code()).await;
    assert_eq!(code.status(), 400);
    assert!(app.audit().await.iter().all(|e| e.0 != "login.ok"));
}

#[tokio::test]
async fn ten_parallel_wrong_codes_compare_at_most_five_and_void_the_code() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let code = signin_mail(&sink, 1).await.code();
    let wrong: Vec<String> = (0..10)
        .map(|i| format!("{:06}", (code.parse::<u32>().unwrap() + 1 + i) % 1_000_000))
        .collect();
    let mut tries = tokio::task::JoinSet::new();
    for w in wrong {
        let (b, url, mut fields) = (b.clone(), app.url("/login/email/code"), form_fields(&page));
        fields.insert("code".into(), w);
        tries.spawn(async move { b.post(url).form(&fields).send().await.unwrap().status().as_u16() });
    }
    let statuses = tries.join_all().await;
    // Only the first four counted get "not valid" (401); the fifth voids the code and
    // the rest are refused uncompared (400, "Too many wrong codes").
    let wrong_answers = statuses.iter().filter(|s| **s == 401).count() as i64;
    assert_eq!(wrong_answers, signin::MAX_ATTEMPTS - 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 401 || *s == 400), "{statuses:?}");
    let right = type_code(&app, &b, &page, &code).await;
    assert_eq!(right.status(), 400, "even the right code is refused now");
    assert!(right.text().await.unwrap().contains("Ask for a new one"));
    assert!(app.audit().await.iter().all(|e| e.0 != "login.ok"));
}

#[tokio::test]
async fn a_try_is_counted_before_its_code_is_compared() {
    let (app, sink, _) = mailing_app_with_ada().await;
    let b = browser();
    let (_, page) = ask_by_mail(&app, &b, "ada").await;
    let code = signin_mail(&sink, 1).await.code();
    // As five parallel tries leave the token: all counted, none yet voided it.
    let request = tessera::crypto::TokenHash::of(&form_fields(&page)["request_id"]);
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            let t = db::email_tokens::find_by_request(c, &request, db::email_tokens::SIGNIN, now)?.unwrap();
            for _ in 0..signin::MAX_ATTEMPTS {
                db::email_tokens::wrong_code(c, t.id)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let right = type_code(&app, &b, &page, &code).await;
    assert_eq!(right.status(), 400, "a sixth try is not compared, right or not");
    assert!(app.audit().await.iter().all(|e| e.0 != "login.ok"));
}

#[tokio::test]
async fn a_second_link_asked_in_another_tab_leaves_the_first_sign_in_by_mail() {
    let (app, sink, secret) = mailing_app_with_ada().await;
    let key = enrol_totp(&app, "ada").await;
    let b = browser();
    let html = second_factor_page_after_a_link(&app, &sink, &b).await;
    assert!(html.contains("action=\"/login/mfa\""), "{html}");

    // Another tab of the same browser asks for another link (voiding the first's).
    let (status, _) = ask_by_mail(&app, &b, "ada").await;
    assert_eq!(status, 200);
    signin_mail(&sink, 2).await;

    let mut fields = form_fields(&html);
    fields.insert(
        "code".into(),
        totp::code_at(&key, app.clock.now() + totp::STEP).unwrap(),
    );
    let done = post(&app, &b, "/login/mfa", &fields).await;
    // Still the mailbox and the app: no password was used.
    assert_eq!(amr_of(&app, &secret, &done).await, serde_json::json!(["otp", "mfa"]));
}
