//! Codes by mail as the second factor, trusted devices and the new-browser notice,
//! through a real SMTP server: each code is read from the delivered mail and typed as
//! a person would.

use std::collections::HashMap;

use crate::helpers::*;
use crate::signin_link::{amr_of, enrol_totp_in, mail_about, ADA};
use crate::smtp::SmtpSink;
use tessera::auth::totp;
use tessera::db;
use tessera::lifecycle::email_mfa;

const CODE_MAIL: &str = "Your sign-in code";
const NOTICE: &str = "New sign-in to your account";

async fn verified_ada(app: &TestApp) -> i64 {
    let id = app.add_user("ada").await.id;
    app.state
        .db
        .write(move |c| db::users::set_email_verified(c, id, true))
        .await
        .unwrap();
    id
}

async fn email_mfa_form(app: &TestApp, b: &reqwest::Client, action: &str, password: &str) -> reqwest::Response {
    let csrf = app.csrf(b).await;
    b.post(app.url("/account/email-mfa"))
        .form(&[("csrf", csrf.as_str()), ("action", action), ("password", password)])
        .send()
        .await
        .unwrap()
}

/// An app that mails, with the client `rp` and ada, whose verified address gets a
/// code at each sign-in: the app, its mail sink and rp's secret.
async fn ada_with_codes_by_mail() -> (TestApp, crate::smtp::SmtpSink, String) {
    let (app, sink) = spawn_mail(|_| {}).await;
    let secret = app.add_client("rp", false).await.unwrap();
    verified_ada(&app).await;
    turn_on(&app).await;
    (app, sink, secret)
}

/// Turns codes by mail on for ada from a fresh portal session.
async fn turn_on(app: &TestApp) {
    let b = browser();
    app.portal_login(&b, "ada", PASSWORD).await;
    assert_eq!(email_mfa_form(app, &b, "on", PASSWORD).await.status(), 302);
}

/// Signs in to the application with the password (`extra` authorization parameters);
/// the response that follows the password.
async fn password_step(
    app: &TestApp,
    b: &reqwest::Client,
    password: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let fields = app.open_login(b, &app.authorize_url("rp", extra)).await;
    app.submit_login(b, fields, "ada", password).await
}

async fn to_code_page(app: &TestApp, b: &reqwest::Client) -> String {
    let resp = password_step(app, b, PASSWORD, &[("prompt", "login")]).await;
    assert_eq!(resp.status(), 200, "the second step");
    let html = resp.text().await.unwrap();
    assert!(html.contains("action=\"/login/mfa\""), "{html}");
    html
}

async fn submit(
    app: &TestApp,
    b: &reqwest::Client,
    page: &str,
    path: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut fields: HashMap<String, String> = form_fields(page);
    fields.remove("remember");
    for (k, v) in extra {
        fields.insert(k.to_string(), v.to_string());
    }
    b.post(app.url(path)).form(&fields).send().await.unwrap()
}

async fn code_mail(sink: &SmtpSink, n: usize) -> String {
    mail_about(sink, ADA, CODE_MAIL, n).await.code()
}

async fn notices(app: &TestApp) -> usize {
    let all = app.state.db.read(|c| db::outbox::list(c, None, 1000)).await.unwrap();
    all.iter().filter(|m| m.subject.contains(NOTICE)).count()
}

#[tokio::test]
async fn codes_by_mail_need_the_password_and_a_confirmed_address() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    let id = app.add_user("ada").await.id;
    let b = browser();
    app.portal_login(&b, "ada", PASSWORD).await;
    let unconfirmed = email_mfa_form(&app, &b, "on", PASSWORD).await;
    assert_eq!(unconfirmed.status(), 409);
    assert!(text_of(&unconfirmed.text().await.unwrap(), "email-mfa-error")
        .unwrap()
        .contains("confirm"));
    app.state
        .db
        .write(move |c| db::users::set_email_verified(c, id, true))
        .await
        .unwrap();
    let wrong = email_mfa_form(&app, &b, "on", "not my password").await;
    assert_eq!(wrong.status(), 400);
    assert!(text_of(&wrong.text().await.unwrap(), "email-mfa-error").is_some());
    assert_eq!(email_mfa_form(&app, &b, "on", PASSWORD).await.status(), 302);
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(text_of(&html, "email-mfa-on").is_some(), "{html}");

    // Off again (with the password): the password alone signs in.
    assert_eq!(email_mfa_form(&app, &b, "off", PASSWORD).await.status(), 302);
    app.add_client("rp", false).await;
    assert_eq!(password_step(&app, &browser(), PASSWORD, &[]).await.status(), 303);
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"mfa.email_enabled".to_string()));
    assert!(events.contains(&"mfa.email_disabled".to_string()));
}

#[tokio::test]
async fn a_sign_in_asks_for_the_code_from_the_mail_and_it_works() {
    let (app, sink, secret) = ada_with_codes_by_mail().await;

    let b = browser();
    let page = to_code_page(&app, &b).await;
    assert!(
        text_of(&page, "mfa-email").unwrap().contains("a•••@example.com"),
        "{page}"
    );
    let code = code_mail(&sink, 1).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let refused = submit(&app, &b, &page, "/login/mfa", &[("code", wrong)]).await;
    assert_eq!(refused.status(), 401);
    assert!(text_of(&refused.text().await.unwrap(), "code-error")
        .unwrap()
        .contains("newest mail"));
    let done = submit(&app, &b, &page, "/login/mfa", &[("code", &code)]).await;
    assert_eq!(
        amr_of(&app, &secret, &done).await,
        serde_json::json!(["pwd", "otp", "mfa"])
    );

    // Spent: the same code does not pass a second sign-in.
    let again = browser();
    let page = to_code_page(&app, &again).await;
    assert_eq!(
        submit(&app, &again, &page, "/login/mfa", &[("code", &code)])
            .await
            .status(),
        401
    );
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"mfa.email_code_sent".to_string()));
    assert!(events.contains(&"mfa.ok".to_string()));
}

#[tokio::test]
async fn a_new_code_is_sent_at_most_once_a_minute() {
    let (app, sink, secret) = ada_with_codes_by_mail().await;
    let b = browser();
    let page = to_code_page(&app, &b).await;
    let first = code_mail(&sink, 1).await;

    let early = submit(&app, &b, &page, "/login/mfa/resend", &[]).await;
    assert_eq!(early.status(), 429);
    assert!(text_of(&early.text().await.unwrap(), "resend-error")
        .unwrap()
        .contains("Wait"));
    app.clock.advance(email_mfa::RESEND_AFTER + 1);
    let resent = submit(&app, &b, &page, "/login/mfa/resend", &[]).await;
    assert_eq!(resent.status(), 200);
    assert!(text_of(&resent.text().await.unwrap(), "mfa-notice").is_some());
    let second = code_mail(&sink, 2).await;
    if second != first {
        let old = submit(&app, &b, &page, "/login/mfa", &[("code", &first)]).await;
        assert_eq!(old.status(), 401, "the earlier code was voided");
    }
    let done = submit(&app, &b, &page, "/login/mfa", &[("code", &second)]).await;
    amr_of(&app, &secret, &done).await;
}

#[tokio::test]
async fn wrong_mailed_codes_count_toward_the_lockout() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    verified_ada(&app).await;
    turn_on(&app).await;
    let b = browser();
    let page = to_code_page(&app, &b).await;
    let mut last = 0;
    for _ in 0..5 {
        last = submit(&app, &b, &page, "/login/mfa", &[("code", "000000")])
            .await
            .status()
            .as_u16();
    }
    assert_eq!(last, 429, "the fifth wrong code locks the account");
    assert!(app.audit().await.iter().any(|e| e.0 == "login.locked"));
}

#[tokio::test]
async fn an_authenticator_app_wins_over_codes_by_mail() {
    let (app, _sink) = spawn_mail(|_| {}).await;
    let secret = app.add_client("rp", false).await.unwrap();
    verified_ada(&app).await;
    let owner = browser();
    app.portal_login(&owner, "ada", PASSWORD).await;
    assert_eq!(email_mfa_form(&app, &owner, "on", PASSWORD).await.status(), 302);
    let key = enrol_totp_in(&app, &owner).await;
    let b = browser();
    let page = to_code_page(&app, &b).await;
    assert!(text_of(&page, "mfa-email").is_none(), "the app is asked, no mail");
    let code = totp::code_at(&key, app.clock.now() + totp::STEP).unwrap();
    let done = submit(&app, &b, &page, "/login/mfa", &[("code", &code)]).await;
    assert_eq!(
        amr_of(&app, &secret, &done).await,
        serde_json::json!(["pwd", "otp", "mfa"])
    );

    // With the app on, codes by mail cannot be turned on afresh.
    let c = browser();
    let fields = app.open_login(&c, &app.url("/account")).await;
    let mfa = app
        .submit_login(&c, fields, "ada", PASSWORD)
        .await
        .text()
        .await
        .unwrap();
    app.clock.advance(totp::STEP);
    let code = totp::code_at(&key, app.clock.now() + totp::STEP).unwrap();
    assert_eq!(
        submit(&app, &c, &mfa, "/login/mfa", &[("code", &code)]).await.status(),
        302
    );
    assert_eq!(email_mfa_form(&app, &c, "off", PASSWORD).await.status(), 302);
    assert_eq!(email_mfa_form(&app, &c, "on", PASSWORD).await.status(), 409);
}

/// The id of the one trusted device on the account page of `b`'s session.
async fn trusted_ids(app: &TestApp, b: &reqwest::Client) -> Vec<String> {
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    let doc = scraper::Html::parse_document(&html);
    let sel = scraper::Selector::parse("#devices input[name=id]").unwrap();
    doc.select(&sel)
        .filter_map(|e| e.value().attr("value").map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_remembered_device_skips_the_second_step_until_revoked_or_the_password_changes() {
    let (app, sink, secret) = ada_with_codes_by_mail().await;

    let b = browser();
    let page = to_code_page(&app, &b).await;
    let done = submit(
        &app,
        &b,
        &page,
        "/login/mfa",
        &[("code", &code_mail(&sink, 1).await), ("remember", "on")],
    )
    .await;
    amr_of(&app, &secret, &done).await;

    // Next time in this browser: the password alone, and the `amr` says so.
    let skipped = password_step(&app, &b, PASSWORD, &[("prompt", "login")]).await;
    assert_eq!(amr_of(&app, &secret, &skipped).await, serde_json::json!(["pwd"]));
    assert!(app.audit().await.iter().any(|e| e.0 == "login.trusted_device"));
    assert_eq!(
        sink.to(ADA).iter().filter(|m| m.subject().contains(CODE_MAIL)).count(),
        1
    );
    // Another browser is still asked.
    to_code_page(&app, &browser()).await;
    app.clock.advance(email_mfa::RESEND_AFTER + 1);

    // Revoked from the account page: asked again.
    let ids = trusted_ids(&app, &b).await;
    assert_eq!(ids.len(), 1, "one trusted device listed");
    let csrf = app.csrf(&b).await;
    let revoked = b
        .post(app.url("/account/devices/untrust"))
        .form(&[("csrf", csrf.as_str()), ("id", ids[0].as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 302);
    let page = to_code_page(&app, &b).await;

    // Trusted again, then a password change ends every trust.
    let code = code_mail(&sink, 3).await;
    let done = submit(&app, &b, &page, "/login/mfa", &[("code", &code), ("remember", "on")]).await;
    amr_of(&app, &secret, &done).await;
    assert_eq!(
        password_step(&app, &b, PASSWORD, &[("prompt", "login")]).await.status(),
        303
    );
    let csrf = app.csrf(&b).await;
    let changed = b
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current", PASSWORD),
            ("password", "a brand new passphrase"),
            ("confirm", "a brand new passphrase"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 302);
    assert!(trusted_ids(&app, &b).await.is_empty());
    let asked = password_step(&app, &b, "a brand new passphrase", &[("prompt", "login")]).await;
    assert_eq!(asked.status(), 200, "the second step is asked again");
    assert!(asked.text().await.unwrap().contains("action=\"/login/mfa\""));
}

/// The new-browser notice, as its checkbox sends it (ticked: `on`; unticked: absent).
async fn set_notify(app: &TestApp, b: &reqwest::Client, on: bool) {
    let csrf = app.csrf(b).await;
    let mut form = vec![("csrf", csrf)];
    if on {
        form.push(("new_device", "on".to_string()));
    }
    let resp = b
        .post(app.url("/account/notifications"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
}

fn firefox() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_sign_in_from_a_new_browser_is_announced_but_not_the_first_one() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    app.add_user("ada").await;

    let first = browser();
    app.portal_login(&first, "ada", PASSWORD).await;
    assert_eq!(
        notices(&app).await,
        0,
        "an account's first browser is new by definition"
    );
    let second = firefox();
    app.portal_login(&second, "ada", PASSWORD).await;
    assert_eq!(notices(&app).await, 1);
    let mail = mail_about(&sink, ADA, NOTICE, 1).await;
    let text = mail.text();
    assert!(
        text.contains("Firefox on Linux") && text.contains("127.0.0.1"),
        "{text}"
    );
    // A known browser again: no notice.
    assert_eq!(
        password_step(&app, &first, PASSWORD, &[("prompt", "login")])
            .await
            .status(),
        303
    );
    assert_eq!(notices(&app).await, 1);

    // Opted out: no notice; opted in again: notices again.
    set_notify(&app, &first, false).await;
    let html = first
        .get(app.url("/account"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("id=\"notify-new-device\" checked"), "shown off");
    app.portal_login(&browser(), "ada", PASSWORD).await;
    assert_eq!(notices(&app).await, 1, "the opt-out is respected");
    set_notify(&app, &first, true).await;
    app.portal_login(&browser(), "ada", PASSWORD).await;
    assert_eq!(notices(&app).await, 2);
    mail_about(&sink, ADA, NOTICE, 2).await;
}

/// The mails of `kind` queued so far, by recipient.
async fn queued(app: &TestApp, kind: &str) -> Vec<String> {
    let all = app.state.db.read(|c| db::outbox::list(c, None, 1000)).await.unwrap();
    all.into_iter().filter(|m| m.kind == kind).map(|m| m.to).collect()
}

#[tokio::test]
async fn codes_go_to_the_confirmed_old_address_until_a_change_of_address_is_confirmed() {
    use crate::signin_link::{change_link, confirm_change, request_address};
    const NEW: &str = "ada@new.test";
    let (app, sink) = spawn_mail(|_| {}).await;
    let secret = app.add_client("rp", false).await.unwrap();
    verified_ada(&app).await;
    let owner = browser();
    app.portal_login(&owner, "ada", PASSWORD).await;
    assert_eq!(email_mfa_form(&app, &owner, "on", PASSWORD).await.status(), 302);

    // Only asked for: the old address is still the account's, and so are its codes.
    request_address(&app, &owner, NEW).await;
    let b = browser();
    let page = to_code_page(&app, &b).await;
    let code = code_mail(&sink, 1).await;
    let done = submit(&app, &b, &page, "/login/mfa", &[("code", &code)]).await;
    assert_eq!(
        amr_of(&app, &secret, &done).await,
        serde_json::json!(["pwd", "otp", "mfa"])
    );
    let c = browser();
    let before = to_code_page(&app, &c).await;
    let old_code = code_mail(&sink, 2).await;
    assert_eq!(
        queued(&app, "mfa").await,
        vec![ADA.to_string(), ADA.to_string()],
        "nothing goes to the unconfirmed address"
    );

    // Confirmed in the owner's browser: the code mailed to the old address is void,
    // and the next one goes to the new address and works.
    let link = change_link(&sink, NEW, 1).await;
    assert_eq!(confirm_change(&app, &owner, &link).await.status(), 200);
    let refused = submit(&app, &c, &before, "/login/mfa", &[("code", &old_code)]).await;
    assert_eq!(refused.status(), 401);
    let d = browser();
    let page = to_code_page(&app, &d).await;
    let code = mail_about(&sink, NEW, CODE_MAIL, 1).await.code();
    let done = submit(&app, &d, &page, "/login/mfa", &[("code", &code)]).await;
    assert_eq!(
        amr_of(&app, &secret, &done).await,
        serde_json::json!(["pwd", "otp", "mfa"])
    );
}

#[tokio::test]
async fn a_mailed_code_is_not_compared_once_its_tries_are_counted_out() {
    let (app, sink) = spawn_mail(|_| {}).await;
    app.add_client("rp", false).await;
    let id = verified_ada(&app).await;
    turn_on(&app).await;
    let b = browser();
    let page = to_code_page(&app, &b).await;
    let code = code_mail(&sink, 1).await;
    // As five parallel tries leave the code: all counted, none yet voided it.
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            let t = db::email_tokens::find_for_user(c, id, db::email_tokens::MFA, now)?.unwrap();
            for _ in 0..email_mfa::MAX_ATTEMPTS {
                db::email_tokens::wrong_code(c, t.id)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let right = submit(&app, &b, &page, "/login/mfa", &[("code", &code)]).await;
    assert_eq!(right.status(), 401, "a sixth try is not compared, right or not");
    assert!(app.audit().await.iter().all(|e| e.0 != "mfa.ok"));
}
