//! The authorization endpoint and login form: every refusal, and what it must not do.

use crate::helpers::*;

async fn page(app: &TestApp, url: &str) -> (u16, Option<String>, String) {
    let resp = browser().get(url).send().await.unwrap();
    let status = resp.status().as_u16();
    let loc = resp.headers().get("location").map(|v| v.to_str().unwrap().to_string());
    let _ = app;
    (status, loc, resp.text().await.unwrap())
}

#[tokio::test]
async fn an_unknown_client_or_unregistered_redirect_gets_a_page_never_a_redirect() {
    let app = spawn_app().await;
    app.add_client("app", false).await;
    let unknown = app.authorize_url("nobody", &[]);
    let evil = app
        .authorize_url("app", &[])
        .replace("localhost%3A8080", "evil.example");
    let missing = app.url("/authorize?client_id=app&response_type=code&scope=openid");
    for url in [unknown, evil, missing] {
        let (status, loc, body) = page(&app, &url).await;
        assert_eq!(status, 400, "{url}");
        assert!(loc.is_none(), "must not redirect: {url}");
        assert!(body.contains("<html"), "a readable page");
    }
}

async fn redirect_error(app: &TestApp, url: &str) -> std::collections::HashMap<String, String> {
    let resp = browser().get(url).send().await.unwrap();
    assert_eq!(resp.status(), 302, "{url}");
    let params = redirect_params(&resp);
    assert!(!params.contains_key("code"), "an error never carries a code");
    assert_eq!(params["iss"], app.address);
    params
}

#[tokio::test]
async fn protocol_errors_go_back_to_the_client_with_state_and_iss() {
    let app = spawn_app().await;
    app.add_client("app", false).await;
    app.add_client("spa", true).await;
    let cases: Vec<(String, &str)> = vec![
        (
            app.authorize_url("app", &[])
                .replace("response_type=code", "response_type=token"),
            "unsupported_response_type",
        ),
        (
            app.authorize_url("app", &[]).replace("response_type=code", ""),
            "invalid_request",
        ),
        (
            app.authorize_url("app", &[])
                .replace("scope=openid+profile+email", "scope=profile"),
            "invalid_scope",
        ),
        (
            app.authorize_url("app", &[("code_challenge", "abc"), ("code_challenge_method", "plain")]),
            "invalid_request",
        ),
        (
            app.authorize_url("app", &[("code_challenge", &Pkce::new().challenge)]),
            "invalid_request",
        ),
        (app.authorize_url("spa", &[]), "invalid_request"),
        (app.authorize_url("app", &[("state", "again")]), "invalid_request"),
        (
            app.authorize_url("app", &[("request", "eyJ.x.y")]),
            "invalid_request_object",
        ),
        (
            app.authorize_url("app", &[("request_uri", "https://x")]),
            "request_uri_not_supported",
        ),
        (app.authorize_url("app", &[("prompt", "none")]), "login_required"),
        (app.authorize_url("app", &[("max_age", "-1")]), "invalid_request"),
    ];
    for (url, code) in cases {
        let params = redirect_error(&app, &url).await;
        assert_eq!(params["error"], code, "{url}");
        assert!(params.contains_key("error_description"));
        if !url.contains("state=again") {
            assert_eq!(params["state"], "st4te", "{url}");
        }
    }
}

#[tokio::test]
async fn authorize_accepts_post() {
    let app = spawn_app().await;
    app.add_client("app", false).await;
    let resp = browser()
        .post(app.url("/authorize"))
        .form(&[
            ("client_id", "app"),
            ("redirect_uri", REDIRECT),
            ("response_type", "code"),
            ("scope", "openid"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(form_fields(&resp.text().await.unwrap()).contains_key("csrf"));
}

#[tokio::test]
async fn the_login_page_is_a_safe_form() {
    let app = spawn_app().await;
    app.add_client("app", false).await;
    let b = browser();
    let resp = b
        .get(app.authorize_url("app", &[("login_hint", "erin")]))
        .send()
        .await
        .unwrap();
    let headers = resp.headers().clone();
    assert!(headers["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let cookie = headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let fields = form_fields(&resp.text().await.unwrap());
    assert_eq!(fields["username"], "erin", "login_hint prefills the username");
    assert!(!fields["csrf"].is_empty() && !fields["request_id"].is_empty());
    assert!(!fields.contains_key("redirect_uri"), "the request stays server-side");
}

#[tokio::test]
async fn wrong_password_and_unknown_user_look_the_same_and_issue_nothing() {
    let app = spawn_app().await;
    app.add_user("frank").await;
    app.add_client("app", false).await;
    let mut bodies = Vec::new();
    for (user, pass) in [("frank", "wrong password"), ("nobody", PASSWORD)] {
        let b = browser();
        let fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
        let resp = app.submit_login(&b, fields.clone(), user, pass).await;
        assert_eq!(resp.status(), 401);
        assert!(resp.headers().get("location").is_none());
        assert!(
            resp.headers().get("set-cookie").is_none(),
            "no session for a failed login"
        );
        let body = resp.text().await.unwrap();
        assert!(body.contains("Invalid username or password."));
        bodies.push(
            body.replace(&fields["request_id"], "")
                .replace(&fields["csrf"], "")
                .replace(user, ""),
        );
        // The form stays usable: the right password still works afterwards.
        if user == "frank" {
            let ok = app.submit_login(&b, fields, "frank", PASSWORD).await;
            assert_eq!(ok.status(), 303);
        }
    }
    assert_eq!(
        bodies[0], bodies[1],
        "responses must not reveal whether the user exists"
    );
}

#[tokio::test]
async fn a_forged_or_foreign_login_form_is_refused() {
    let app = spawn_app().await;
    app.add_user("gina").await;
    app.add_client("app", false).await;
    let victim = browser();
    let fields = app.open_login(&victim, &app.authorize_url("app", &[])).await;

    let mut bad_csrf = fields.clone();
    bad_csrf.insert("csrf".into(), "forged".into());
    let resp = app.submit_login(&victim, bad_csrf, "gina", PASSWORD).await;
    assert_eq!(resp.status(), 403);

    // The same fields from a browser without the binding cookie (login CSRF).
    let resp = app.submit_login(&browser(), fields.clone(), "gina", PASSWORD).await;
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("location").is_none());

    let resp = app.submit_login(&victim, fields.clone(), "gina", PASSWORD).await;
    assert_eq!(resp.status(), 303, "the genuine form still works");
    let resp = app.submit_login(&victim, fields, "gina", PASSWORD).await;
    assert_eq!(resp.status(), 400, "a login request is single-use");
}

#[tokio::test]
async fn an_expired_login_request_cannot_be_completed() {
    let app = spawn_app().await;
    app.add_user("hank").await;
    app.add_client("app", false).await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
    app.clock.advance(16 * 60);
    let resp = app.submit_login(&b, fields, "hank", PASSWORD).await;
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("expired"));
}

#[tokio::test]
async fn session_cookie_is_http_only_and_prompt_login_asks_again() {
    let app = spawn_app().await;
    app.add_user("ivy").await;
    app.add_client("app", false).await;
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("app", &[])).await;
    let resp = app.submit_login(&b, fields, "ivy", PASSWORD).await;
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("tessera_session="));
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && !cookie.contains("Secure"));

    let resp = b
        .get(app.authorize_url("app", &[("prompt", "login")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "prompt=login shows the form despite the session");
    let resp = b
        .get(app.authorize_url("app", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert!(
        redirect_params(&resp).contains_key("code"),
        "prompt=none with a session issues a code"
    );
    app.clock.advance(2);
    let resp = b
        .get(app.authorize_url("app", &[("max_age", "1")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "max_age older than the session asks again");
}

#[tokio::test]
async fn https_issuers_get_secure_host_prefixed_cookies() {
    let app = spawn_with(|s| s.issuer = Some(url::Url::parse("https://id.example.com").unwrap())).await;
    app.add_client("app", false).await;
    let resp = browser().get(app.authorize_url("app", &[])).send().await.unwrap();
    let cookie = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cookie.starts_with("__Host-tessera_browser=") && cookie.contains("Secure"),
        "{cookie}"
    );
}

#[tokio::test]
async fn an_oversized_state_is_reported_as_too_long() {
    let app = spawn_app().await;
    app.add_client("app", false).await;
    let long = "s".repeat(4097);
    let url = app
        .authorize_url("app", &[])
        .replace("state=st4te", &format!("state={long}"));
    let resp = browser().get(url).send().await.unwrap();
    let params = redirect_params(&resp);
    assert_eq!(params["error"], "invalid_request");
    assert!(params["error_description"].contains("too long"), "{params:?}");
    assert!(!params.contains_key("state"), "an oversized state is not echoed");
}
