//! Pushed authorization requests (RFC 9126): push, then authorize with the
//! `request_uri`, once, within its lifetime, by the client that pushed it.

use url::Url;

use crate::helpers::*;

const URN: &str = "urn:ietf:params:oauth:request_uri:";

/// An authorization request's parameters, as a client would push them.
fn request(client_id: &str, pkce: &Pkce, state: &str) -> Vec<(&'static str, String)> {
    vec![
        ("client_id", client_id.to_string()),
        ("redirect_uri", REDIRECT.to_string()),
        ("response_type", "code".into()),
        ("scope", "openid profile".into()),
        ("state", state.to_string()),
        ("nonce", "pushed-nonce".into()),
        ("code_challenge", pkce.challenge.clone()),
        ("code_challenge_method", "S256".into()),
    ]
}

async fn push(app: &TestApp, basic: Option<(&str, &str)>, form: &[(&str, String)]) -> reqwest::Response {
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    app.post_form("/par", basic, &form).await
}

/// Pushes and returns the `request_uri`, checking the RFC 9126 §2.2 answer.
async fn pushed(app: &TestApp, basic: Option<(&str, &str)>, form: &[(&str, String)]) -> String {
    let resp = push(app, basic, form).await;
    assert_eq!(resp.status(), 201, "push refused");
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["expires_in"], 60);
    let uri = body["request_uri"].as_str().unwrap().to_string();
    assert!(uri.starts_with(URN) && uri.len() > URN.len() + 40, "{uri}");
    uri
}

fn by_reference(app: &TestApp, client_id: &str, request_uri: &str, extra: &[(&str, &str)]) -> String {
    let mut url = Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("request_uri", request_uri)
        .extend_pairs(extra);
    url.to_string()
}

async fn error_of(resp: reqwest::Response) -> (u16, String, String) {
    let status = resp.status().as_u16();
    let body: serde_json::Value = resp.json().await.unwrap();
    let field = |n: &str| body[n].as_str().unwrap_or_default().to_string();
    (status, field("error"), field("error_description"))
}

async fn exchange(
    app: &TestApp,
    basic: Option<(&str, &str)>,
    client_id: &str,
    code: &str,
    pkce: &Pkce,
) -> reqwest::Response {
    app.token(
        basic,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &pkce.verifier),
        ],
    )
    .await
}

#[tokio::test]
async fn par_push_then_authorize_gives_tokens_once_on_each_backend() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_user("ada").await;
        let secret = app.add_client("web", false).await.unwrap();
        let pkce = Pkce::new();
        // Basic authentication: the body need not name the client (RFC 9126 §2.1).
        let mut form = request("web", &pkce, "pushed-state");
        form.retain(|(k, _)| *k != "client_id");
        let uri = pushed(&app, Some(("web", &secret)), &form).await;

        // The browser carries only client_id and request_uri; the outer state is not
        // the pushed one and counts for nothing.
        let b = browser();
        let url = by_reference(&app, "web", &uri, &[("state", "outer"), ("scope", "openid email")]);
        let params = app.login(&b, &url, "ada").await;
        assert_eq!(params["state"], "pushed-state");
        let resp = exchange(&app, Some(("web", &secret)), "web", &params["code"], &pkce).await;
        assert_eq!(resp.status(), 200);
        let tokens: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(tokens["scope"], "openid profile", "the pushed scope, not the outer one");
        let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
        assert_eq!(id["nonce"], "pushed-nonce");

        // RFC 9126 §4: used once. Without a registered redirect URI: a page.
        let again = b.get(&url).send().await.unwrap();
        assert_eq!(again.status(), 400);
        assert!(again.text().await.unwrap().contains("invalid_request_uri"));
        // With one registered in the query, the error goes back to the client.
        let again = b
            .get(by_reference(
                &app,
                "web",
                &uri,
                &[("redirect_uri", REDIRECT), ("state", "s2")],
            ))
            .send()
            .await
            .unwrap();
        let p = redirect_params(&again);
        assert_eq!(p["error"], "invalid_request_uri");
        assert_eq!(p["state"], "s2");
        assert!(!p.contains_key("code"));
    }
}

#[tokio::test]
async fn par_public_client_pushes_with_its_client_id() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client("spa", true).await;
    let pkce = Pkce::new();
    let uri = pushed(&app, None, &request("spa", &pkce, "st")).await;
    let params = app
        .login(&browser(), &by_reference(&app, "spa", &uri, &[]), "ada")
        .await;
    let resp = exchange(&app, None, "spa", &params["code"], &pkce).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn par_login_page_survives_a_wrong_password_after_the_request_uri_is_spent() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client("spa", true).await;
    let pkce = Pkce::new();
    let uri = pushed(&app, None, &request("spa", &pkce, "st")).await;
    let b = browser();
    let fields = app.open_login(&b, &by_reference(&app, "spa", &uri, &[])).await;
    // The parked request holds the pushed parameters: the form goes on without them.
    let wrong = app.submit_login(&b, fields, "ada", "wrong password").await;
    assert_eq!(wrong.status(), 401, "the form again, with its error");
    let fields = form_fields(&wrong.text().await.unwrap());
    let resp = app.submit_login(&b, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 303);
    let params = redirect_params(&resp);
    assert_eq!(params["state"], "st");
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn par_request_uri_expires_after_sixty_seconds() {
    let app = spawn_app().await;
    app.add_client("spa", true).await;
    let pkce = Pkce::new();
    let uri = pushed(&app, None, &request("spa", &pkce, "st")).await;
    app.clock.advance(61);
    let resp = browser()
        .get(by_reference(&app, "spa", &uri, &[("redirect_uri", REDIRECT)]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request_uri");
}

#[tokio::test]
async fn par_request_uri_of_another_client_is_refused_and_not_spent() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client("spa", true).await;
    app.add_client("other", true).await;
    let pkce = Pkce::new();
    let uri = pushed(&app, None, &request("spa", &pkce, "st")).await;
    let resp = browser()
        .get(by_reference(&app, "other", &uri, &[("redirect_uri", REDIRECT)]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&resp)["error"], "invalid_request_uri");
    // The pusher can still use it.
    let params = app
        .login(&browser(), &by_reference(&app, "spa", &uri, &[]), "ada")
        .await;
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn par_unknown_or_foreign_request_uris_are_refused() {
    let app = spawn_app().await;
    app.add_client("spa", true).await;
    let b = browser();
    let unknown = b
        .get(by_reference(
            &app,
            "spa",
            &format!("{URN}nope"),
            &[("redirect_uri", REDIRECT)],
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&unknown)["error"], "invalid_request_uri");
    // A URL is a request object by reference, which this provider does not fetch.
    let by_url = b
        .get(by_reference(
            &app,
            "spa",
            "https://rp.example/request.jwt",
            &[("redirect_uri", REDIRECT)],
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&by_url)["error"], "request_uri_not_supported");
    // Without a registered redirect URI nothing is redirected.
    let page = b
        .get(by_reference(
            &app,
            "spa",
            "https://rp.example/request.jwt",
            &[("redirect_uri", "https://evil.example/")],
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 400);
    assert!(page.headers().get("location").is_none());
}

#[tokio::test]
async fn par_required_per_client_refuses_a_plain_request() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    app.add_client_with("strict", true, |c| c.require_par = true).await;
    app.add_client("relaxed", true).await;
    let pkce = Pkce::new();
    let plain = app.authorize_url(
        "strict",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let resp = browser().get(&plain).send().await.unwrap();
    let p = redirect_params(&resp);
    assert_eq!(p["error"], "invalid_request");
    assert_eq!(p["error_description"], "pushed authorization requests are required");
    assert_eq!(p["state"], "st4te");
    // Another client is not affected; the strict one gets its code through PAR.
    let relaxed = app.authorize_url(
        "relaxed",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    assert_eq!(browser().get(&relaxed).send().await.unwrap().status(), 200);
    let uri = pushed(&app, None, &request("strict", &pkce, "st")).await;
    let params = app
        .login(&browser(), &by_reference(&app, "strict", &uri, &[]), "ada")
        .await;
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn par_required_server_wide_refuses_every_plain_request() {
    let app = spawn_with(|s| s.protocol.require_par = true).await;
    app.add_user("ada").await;
    app.add_client("spa", true).await;
    let pkce = Pkce::new();
    let plain = app.authorize_url(
        "spa",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let p = redirect_params(&browser().get(&plain).send().await.unwrap());
    assert_eq!(p["error"], "invalid_request");
    let uri = pushed(&app, None, &request("spa", &pkce, "st")).await;
    let params = app
        .login(&browser(), &by_reference(&app, "spa", &uri, &[]), "ada")
        .await;
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn par_without_client_authentication_is_refused() {
    let app = spawn_app().await;
    let secret = app.add_client("web", false).await.unwrap();
    let pkce = Pkce::new();
    let form = request("web", &pkce, "st");
    let (status, error, _) = error_of(push(&app, None, &form).await).await;
    assert_eq!((status, error.as_str()), (401, "invalid_client"));
    let (status, error, _) = error_of(push(&app, Some(("web", "wrong")), &form).await).await;
    assert_eq!((status, error.as_str()), (401, "invalid_client"));
    let resp = push(&app, Some(("web", &secret)), &form).await;
    assert_eq!(resp.status(), 201);
}

#[tokio::test]
async fn par_refuses_bad_pushes_as_json_never_by_redirect() {
    let app = spawn_app().await;
    let secret = app.add_client("web", false).await.unwrap();
    app.add_client("spa", true).await;
    let basic = Some(("web", secret.as_str()));
    let pkce = Pkce::new();
    let with = |name: &'static str, value: &str| {
        let mut f: Vec<(&str, String)> = request("web", &pkce, "st")
            .into_iter()
            .filter(|(k, _)| *k != name)
            .collect();
        f.push((name, value.to_string()));
        f
    };
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (with("request_uri", &format!("{URN}x")), "invalid_request"),
        (with("client_id", "spa"), "invalid_request"),
        (with("redirect_uri", "https://evil.example/cb"), "invalid_request"),
        (with("response_type", "token"), "unsupported_response_type"),
        (with("scope", "profile"), "invalid_scope"),
        (with("code_challenge_method", "plain"), "invalid_request"),
        (with("resource", "https://api.unknown.example"), "invalid_target"),
    ];
    for (form, expected) in cases {
        let resp = push(&app, basic, &form).await;
        assert!(resp.headers().get("location").is_none());
        let (status, error, _) = error_of(resp).await;
        assert_eq!((status, error.as_str()), (400, expected), "{form:?}");
    }
    // Wrong content type: not a form.
    let resp = plain_client()
        .post(app.url("/par"))
        .basic_auth("web", Some(&secret))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(resp).await.1, "invalid_request");
}
