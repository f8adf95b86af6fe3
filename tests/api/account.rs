//! `/account` and the second factor at sign-in: portal login, profile and password,
//! sessions, TOTP enrolment, MFA with replay refusal, lockout and recovery codes, and
//! `amr`/`acr` in the ID token.

use crate::helpers::*;
use tessera::auth::totp;

async fn enrol(app: &TestApp, b: &reqwest::Client, csrf: &str) -> (String, Vec<String>) {
    let html = b
        .get(app.url("/account/totp"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let secret = text_of(&html, "totp-secret").expect("the key is shown");
    assert!(html.contains("<svg"), "the QR code is drawn inline");
    let wrong = b
        .post(app.url("/account/totp"))
        .form(&[("csrf", csrf), ("code", "000000")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    assert!(text_of(&wrong.text().await.unwrap(), "code-error").is_some());
    let code = totp::code_at(&secret, app.clock.now()).unwrap();
    let done = b
        .post(app.url("/account/totp"))
        .form(&[("csrf", csrf), ("code", code.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let html = done.text().await.unwrap();
    let doc = scraper::Html::parse_document(&html);
    let sel = scraper::Selector::parse("#recovery-codes code").unwrap();
    let codes: Vec<String> = doc.select(&sel).map(|e| e.text().collect()).collect();
    assert_eq!(codes.len(), 10);
    (secret, codes)
}

/// Signs in through an authorization request up to the second-factor page.
async fn to_mfa_page(app: &TestApp, b: &reqwest::Client) -> std::collections::HashMap<String, String> {
    let fields = app.open_login(b, &app.authorize_url("rp", &[])).await;
    let resp = app.submit_login(b, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    assert!(html.contains("action=\"/login/mfa\""), "asks for the code");
    form_fields(&html)
}

async fn submit_code(
    app: &TestApp,
    b: &reqwest::Client,
    mut fields: std::collections::HashMap<String, String>,
    code: &str,
) -> reqwest::Response {
    fields.insert("code".into(), code.into());
    b.post(app.url("/login/mfa")).form(&fields).send().await.unwrap()
}

#[tokio::test]
async fn the_account_page_asks_for_sign_in_and_comes_back() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let b = browser();
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("your Tessera account"));
    app.portal_login(&b, "ada", PASSWORD).await;
    let page = b.get(app.url("/account")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Signed in as <strong>ada</strong>"));
    assert!(html.contains("<title>Your account – Tessera</title>"));
    assert!(html.contains("<main class=\"card wide\">"));
    assert_eq!(html.matches("<script").count(), 1, "one script, the passkey file");
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"login.ok".to_string()));
}

#[tokio::test]
async fn profile_and_password_changes_need_the_csrf_token_and_current_password() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let no_csrf = b
        .post(app.url("/account/profile"))
        .form(&[("name", "Mallory"), ("email", "m@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_csrf.status(), 403);
    let bad_email = b
        .post(app.url("/account/profile"))
        .form(&[("csrf", csrf.as_str()), ("name", "Ada"), ("email", "not-an-email")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad_email.status(), 400);
    assert!(text_of(&bad_email.text().await.unwrap(), "email-error").is_some());
    let ok = b
        .post(app.url("/account/profile"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("name", "Ada Lovelace"),
            ("email", "ada@lovelace.test"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 302);
    let id = ada.id;
    let user = app
        .state
        .db
        .read(move |c| tessera::db::users::find_by_id(c, id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(user.email.as_deref(), Some("ada@lovelace.test"));

    let wrong_current = b
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current", "nope nope"),
            ("password", "a new long secret"),
            ("confirm", "a new long secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_current.status(), 400);
    assert!(text_of(&wrong_current.text().await.unwrap(), "current-error").is_some());
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
    let other = browser();
    let fields = app.open_login(&other, &app.url("/account")).await;
    assert_eq!(app.submit_login(&other, fields, "ada", PASSWORD).await.status(), 401);
    app.portal_login(&other, "ada", "a new long secret").await;
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    assert!(events.contains(&"account.profile_changed".to_string()));
    assert!(events.contains(&"account.password_changed".to_string()));
}

#[tokio::test]
async fn sessions_can_be_signed_out_but_only_ones_own() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_user("bob").await;
    let (first, second) = (browser(), browser());
    let csrf = app.portal_login(&first, "ada", PASSWORD).await;
    app.portal_login(&second, "ada", PASSWORD).await;
    let bob = browser();
    let bob_csrf = app.portal_login(&bob, "bob", PASSWORD).await;

    let html = first
        .get(app.url("/account"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let doc = scraper::Html::parse_document(&html);
    let sel = scraper::Selector::parse("input[name=sid]").unwrap();
    let sids: Vec<String> = doc
        .select(&sel)
        .filter_map(|e| e.value().attr("sid").or(e.value().attr("value")).map(str::to_string))
        .collect();
    assert_eq!(sids.len(), 1, "the other session can be ended, not this one");

    let stolen = bob
        .post(app.url("/account/sessions/end"))
        .form(&[("csrf", bob_csrf.as_str()), ("sid", sids[0].as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(stolen.status(), 404, "bob cannot end ada's session");
    assert_eq!(second.get(app.url("/account")).send().await.unwrap().status(), 200);

    let ended = first
        .post(app.url("/account/sessions/end-others"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 302);
    let html = second
        .get(app.url("/account"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("your Tessera account"), "the other browser is signed out");
    assert_eq!(first.get(app.url("/account")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn totp_sign_in_asks_for_a_code_refuses_replays_and_reports_amr() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;

    // Without a second factor: a password sign-in.
    let plain = app.tokens("rp", &secret, "ada").await;
    let (_, claims) = jwt_parts(plain["id_token"].as_str().unwrap());
    assert_eq!(claims["amr"], serde_json::json!(["pwd"]));
    assert_eq!(claims["acr"], "urn:tessera:acr:pwd");

    let (key, recovery) = enrol(&app, &b, &csrf).await;

    let rp = browser();
    let fields = to_mfa_page(&app, &rp).await;
    let wrong = submit_code(&app, &rp, fields.clone(), "123456").await;
    assert_eq!(wrong.status(), 401);
    assert!(text_of(&wrong.text().await.unwrap(), "code-error").is_some());
    // The enrolment used the current step; the next one (within the ±1 window) is fresh.
    let next = totp::code_at(&key, app.clock.now() + totp::STEP).unwrap();
    let ok = submit_code(&app, &rp, fields, &next).await;
    assert_eq!(ok.status(), 303);
    let code = redirect_params(&ok)["code"].clone();
    let tokens = app.exchange("rp", &secret, &code).await;
    let (_, claims) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(claims["amr"], serde_json::json!(["pwd", "otp", "mfa"]));
    assert_eq!(claims["acr"], "urn:tessera:acr:mfa");

    // The same code again, in a fresh sign-in: refused.
    let again = browser();
    let fields = to_mfa_page(&app, &again).await;
    assert_eq!(submit_code(&app, &again, fields.clone(), &next).await.status(), 401);
    // A recovery code works once.
    assert_eq!(
        submit_code(&app, &again, fields, &recovery[0].to_lowercase())
            .await
            .status(),
        303
    );
    let third = browser();
    let fields = to_mfa_page(&app, &third).await;
    assert_eq!(submit_code(&app, &third, fields, &recovery[0]).await.status(), 401);

    // Four sign-ins completed; the three stopped at the code page do not count.
    let metrics = plain_client()
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("tessera_logins_total{outcome=\"ok\"} 4"), "{metrics}");
    let events: Vec<_> = app.audit().await.into_iter().map(|e| e.0).collect();
    for e in ["mfa.enrolled", "mfa.failed", "mfa.ok", "token.issued"] {
        assert!(events.contains(&e.to_string()), "{e} is audited");
    }
}

#[tokio::test]
async fn wrong_codes_count_toward_lockout_and_disabling_needs_the_password() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client("rp", false).await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    enrol(&app, &b, &csrf).await;

    let rp = browser();
    let fields = to_mfa_page(&app, &rp).await;
    let mut last = 0;
    for _ in 0..5 {
        last = submit_code(&app, &rp, fields.clone(), "000000").await.status().as_u16();
    }
    assert_eq!(last, 429, "the fifth wrong code locks the account");
    assert!(app.audit().await.iter().any(|e| e.0 == "login.locked"));

    let refused = b
        .post(app.url("/account/totp/disable"))
        .form(&[("csrf", csrf.as_str()), ("password", "wrong password")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status(),
        429,
        "while locked no password is checked, right or wrong"
    );
    app.clock.advance(3601);
    let off = b
        .post(app.url("/account/totp/disable"))
        .form(&[("csrf", csrf.as_str()), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(off.status(), 302);
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("id=\"totp-setup\""));
}

#[tokio::test]
async fn every_account_form_needs_the_session_csrf_token() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let other = browser();
    app.add_user("bob").await;
    let bobs = app.portal_login(&other, "bob", PASSWORD).await;
    assert_ne!(csrf, bobs, "each session has its own token");
    for path in [
        "/account/profile",
        "/account/password",
        "/account/sessions/end",
        "/account/sessions/end-others",
        "/account/totp",
        "/account/totp/disable",
    ] {
        let missing = b.post(app.url(path)).form(&[("name", "x")]).send().await.unwrap();
        assert_eq!(missing.status(), 403, "{path} without a token");
        let foreign = b
            .post(app.url(path))
            .form(&[("csrf", bobs.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(foreign.status(), 403, "{path} with another session's token");
        let signed_out = browser()
            .post(app.url(path))
            .form(&[("csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(signed_out.status(), 401, "{path} without a session");
    }
}

#[tokio::test]
async fn signed_in_pages_carry_the_page_security_headers() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    app.make_admin(ada.id).await;
    let b = browser();
    app.portal_login(&b, "ada", PASSWORD).await;
    for path in ["/account", "/account/totp", "/admin", "/admin/users", "/admin/audit"] {
        let resp = b.get(app.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let h = resp.headers();
        assert!(
            h["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("frame-ancestors 'none'"),
            "{path}"
        );
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{path} runs only our own script file"
        );
        assert_eq!(h["cache-control"], "no-store", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "same-origin", "{path}");
    }
}

#[tokio::test]
async fn the_second_factor_also_guards_tessera_s_own_pages() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let b = browser();
    let csrf = app.portal_login(&b, "ada", PASSWORD).await;
    let (key, _) = enrol(&app, &b, &csrf).await;

    // The account page: password, then the code, then back to /account.
    let other = browser();
    let fields = app.open_login(&other, &app.url("/account")).await;
    let resp = app.submit_login(&other, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    assert!(html.contains("action=\"/login/mfa\""));
    let mut fields = form_fields(&html);
    fields.insert(
        "code".into(),
        totp::code_at(&key, app.clock.now() + totp::STEP).unwrap(),
    );
    let done = other.post(app.url("/login/mfa")).form(&fields).send().await.unwrap();
    assert_eq!((done.status().as_u16(), location(&done)), (302, "/account".to_string()));
    assert_eq!(other.get(app.url("/account")).send().await.unwrap().status(), 200);
    let sessions = app.audit().await.into_iter().filter(|e| e.0 == "login.ok").count();
    assert_eq!(sessions, 2);
}
