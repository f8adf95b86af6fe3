//! App presets (docs/APPS.md): every preset's snippet parsed as the application would
//! read it and checked against the live discovery document and the registration; the
//! command line, the admin API and the "Add an application" page; refusals.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::{json, Value};
use url::Url;

use crate::admin_api::admin_token;
use crate::helpers::{browser, jwt_parts, location, spawn_app, tessera_ok, text_of, Pkce, Portal, TestApp, PASSWORD};

mod check;
mod expected;
mod parse;

use check::check;
use expected::EXPECTED;
use parse::parse;

async fn api(app: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let under_api = path.strip_prefix("/admin/api").expect("an admin API path");
    app.admin_api(token, method, under_api, body).await
}

#[tokio::test]
async fn every_preset_registers_through_the_api_and_its_snippet_matches_discovery() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    assert!(EXPECTED.len() >= 12);
    for e in EXPECTED {
        let mut body = json!({"client_id": e.preset, "preset": e.preset, "app_url": e.app_url});
        if let Some(k) = e.app_key {
            body["app_key"] = json!(k);
        }
        let (status, registered) = api(&app, &token, Method::POST, "/admin/api/clients/from-preset", Some(body)).await;
        assert_eq!(status, 201, "{}: {registered}", e.preset);
        check(&app, e, &registered).await;
    }
}

/// A sign-in at the redirect URI the snippet names, authenticating with its secret
/// the way the preset registered; the ID token's claims.
async fn sign_in(app: &TestApp, client_id: &str, secret: &str, redirect: &str, basic: bool, user: &str) -> Value {
    let pkce = Pkce::new();
    let mut url = Url::parse(&app.url("/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid profile email groups")
        .append_pair("state", "st4te")
        .append_pair("nonce", "n0nce")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256");
    let b = browser();
    let fields = app.open_login(&b, url.as_str()).await;
    let resp = app.submit_login(&b, fields, user, PASSWORD).await;
    assert_eq!(resp.status(), 303, "signed in");
    let back = Url::parse(&location(&resp)).unwrap();
    assert_eq!(
        &back.as_str()[..redirect.len()],
        redirect,
        "back at the snippet's redirect URI"
    );
    let params: BTreeMap<String, String> = back.query_pairs().into_owned().collect();
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", params["code"].as_str()),
        ("redirect_uri", redirect),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    if !basic {
        form.extend([("client_id", client_id), ("client_secret", secret)]);
    }
    let resp = app.token(basic.then_some((client_id, secret)), &form).await;
    assert_eq!(resp.status(), 200, "the token endpoint accepts the snippet's secret");
    let body: Value = resp.json().await.unwrap();
    jwt_parts(body["id_token"].as_str().unwrap()).1
}

fn cli(app: &TestApp, args: &[&str], issuer: &str) -> String {
    let mut all: Vec<String> = app.db_args();
    all.extend(args.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    tessera_ok(&refs, &[("TESSERA_ISSUER", issuer)], None)
}

#[tokio::test]
async fn cli_grafana_prints_the_redirect_uri_and_an_ini_that_signs_in_with_roles() {
    let app = spawn_app().await;
    let issuer = app.state.issuer.to_string();
    let out = cli(
        &app,
        &[
            "client",
            "add",
            "grafana",
            "--preset",
            "grafana",
            "--app-url",
            "https://grafana.example.org/",
        ],
        &issuer,
    );
    assert!(
        out.lines()
            .any(|l| l == "redirect_uri: https://grafana.example.org/login/generic_oauth"),
        "{out}"
    );
    assert!(out.contains("created groups: grafana-admins, grafana-editors"), "{out}");
    let ini_start = out.find("[server]").expect("the grafana.ini snippet");
    let snippet = &out[ini_start..];
    let registered = json!({
        "client": {"client_id": "grafana"},
        "client_secret": parse("ini", snippet)["auth.generic_oauth.client_secret"],
        "format": "ini",
        "snippet": snippet,
        "redirect_uris": ["https://grafana.example.org/login/generic_oauth"],
        "post_logout_redirect_uris": ["https://grafana.example.org/login"],
    });
    check(&app, &EXPECTED[0], &registered).await;

    // The groups the role mapping names exist, so membership gives the role.
    let admin = app.add_user("ada").await;
    app.add_user("bob").await;
    app.state
        .db
        .write(move |c| {
            let g = tessera::db::groups::id_of(c, "grafana-admins")?.unwrap();
            tessera::db::groups::set_member(c, g, admin.id, true)
        })
        .await
        .unwrap();
    let ini = parse("ini", snippet);
    let secret = &ini["auth.generic_oauth.client_secret"];
    let redirect = "https://grafana.example.org/login/generic_oauth";
    let claims = sign_in(&app, "grafana", secret, redirect, true, "ada").await;
    assert_eq!(claims["grafana_role"], "Admin");
    let claims = sign_in(&app, "grafana", secret, redirect, true, "bob").await;
    assert_eq!(claims["grafana_role"], "Viewer");
}

#[tokio::test]
async fn cli_json_registers_a_preset_whose_secret_works_with_its_auth_method() {
    let app = spawn_app().await;
    let issuer = app.state.issuer.to_string();
    let e = EXPECTED.iter().find(|e| e.preset == "outline").unwrap();
    let out = cli(
        &app,
        &[
            "client",
            "add",
            "outline",
            "--preset",
            "outline",
            "--app-url",
            e.app_url,
            "--json",
        ],
        &issuer,
    );
    let registered: Value = serde_json::from_str(&out).unwrap();
    check(&app, e, &registered).await;
    app.add_user("ada").await;
    let env = parse("env", registered["snippet"].as_str().unwrap());
    let claims = sign_in(
        &app,
        "outline",
        &env["OIDC_CLIENT_SECRET"],
        e.redirect_uris[0],
        false,
        "ada",
    )
    .await;
    assert_eq!(claims["aud"], "outline");
}

#[tokio::test]
async fn presets_are_listed_with_their_documentation() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let (status, listed) = api(&app, &token, Method::GET, "/admin/api/presets", None).await;
    assert_eq!(status, 200);
    let items = listed["items"].as_array().unwrap();
    assert!(items.len() >= 12);
    for e in EXPECTED {
        let p = items
            .iter()
            .find(|p| p["name"] == e.preset)
            .unwrap_or_else(|| panic!("{} listed", e.preset));
        assert!(p["docs_url"].as_str().unwrap().starts_with("https://"), "{p}");
        assert_eq!(p["token_endpoint_auth_method"], e.auth_method);
    }
    let out = cli(&app, &["client", "presets", "--json"], "https://id.example.org");
    let cli_items: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(cli_items["items"], listed["items"]);
    let text = cli(&app, &["client", "presets"], "https://id.example.org");
    for e in EXPECTED {
        assert!(
            text.lines().any(|l| l.starts_with(e.preset) && l.contains("https://")),
            "{text}"
        );
    }
}

fn tessera_fails(app: &TestApp, args: &[&str]) -> String {
    let mut all: Vec<String> = app.db_args();
    all.extend(args.iter().map(|a| a.to_string()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(&all)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[tokio::test]
async fn unknown_presets_bad_app_urls_and_missing_keys_are_refused() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    the_api_refuses_bad_preset_registrations(&app, &token).await;
    the_cli_refuses_bad_preset_registrations(&app).await;
}

/// The command line's arguments that add client `id` from `preset` for `app_url`.
fn add_from_preset<'a>(id: &'a str, preset: &'a str, app_url: &'a str) -> Vec<&'a str> {
    vec!["client", "add", id, "--preset", preset, "--app-url", app_url]
}

/// Each bad body is a 400 naming its field, and nothing is stored.
async fn the_api_refuses_bad_preset_registrations(app: &TestApp, token: &str) {
    let cases = [
        (
            json!({"client_id": "x", "preset": "wordpress", "app_url": "https://a.example.org"}),
            "preset",
            "unknown preset",
        ),
        (
            json!({"client_id": "x", "preset": "grafana", "app_url": "http://a.example.org"}),
            "app_url",
            "https",
        ),
        (
            json!({"client_id": "x", "preset": "grafana", "app_url": "https://a.example.org/?next=1"}),
            "app_url",
            "query",
        ),
        (
            json!({"client_id": "x", "preset": "grafana", "app_url": "https://u:p@a.example.org"}),
            "app_url",
            "credentials",
        ),
        (
            json!({"client_id": "x", "preset": "wikijs", "app_url": "https://a.example.org"}),
            "app_key",
            "needs the app key",
        ),
        (
            json!({"client_id": "x", "preset": "gitea", "app_url": "https://a.example.org", "app_key": "../x"}),
            "app_key",
            "app key",
        ),
        (
            json!({"client_id": "x", "preset": "grafana", "app_url": "https://a.example.org", "extra": 1}),
            "body",
            "unknown field",
        ),
    ];
    for (body, field, words) in cases {
        let (status, answer) = api(
            app,
            token,
            Method::POST,
            "/admin/api/clients/from-preset",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], "invalid_request", "{answer}");
        let text = answer.to_string();
        assert!(text.contains(field) && text.contains(words), "{body}: {answer}");
    }
    assert!(app.client("x").await.is_none(), "nothing registered");
    let groups = app
        .state
        .db
        .read(|c| tessera::db::groups::id_of(c, "grafana-admins"))
        .await
        .unwrap();
    assert!(groups.is_none(), "no group created for a refused registration");
}

/// The command line refuses in one line; a second client with the same id leaves the
/// first as it was.
async fn the_cli_refuses_bad_preset_registrations(app: &TestApp) {
    let err = tessera_fails(app, &add_from_preset("x", "wordpress", "https://a.example.org"));
    assert!(err.contains("unknown preset `wordpress`"), "{err}");
    let err = tessera_fails(app, &add_from_preset("x", "grafana", "ftp://a.example.org"));
    assert!(err.contains("app_url"), "{err}");
    let mut public = add_from_preset("x", "grafana", "https://a.example.org");
    public.push("--public");
    let err = tessera_fails(app, &public);
    assert!(err.contains("--public"), "{err}");
    // The same id twice: the second is refused and the first stays as it was.
    cli(
        app,
        &add_from_preset("dup", "minio", "https://s3.example.org"),
        "https://id.example.org",
    );
    let err = tessera_fails(app, &add_from_preset("dup", "grafana", "https://g.example.org"));
    assert!(err.contains("already exists"), "{err}");
    let dup = app.client("dup").await.unwrap();
    assert_eq!(dup.redirect_uris, ["https://s3.example.org/oauth_callback"]);
}

#[tokio::test]
async fn the_add_an_application_page_registers_and_shows_the_snippet_once() {
    let app = spawn_app().await;
    let p = app.admin_portal().await;
    let clients = p.page("/admin/clients").await;
    assert!(
        clients.contains("href=\"/admin/clients/new-app\""),
        "linked from the clients list"
    );
    let page = p.get("/admin/clients/new-app").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    for e in EXPECTED {
        assert!(
            html.contains(&format!("value=\"{}\"", e.preset)),
            "{} offered",
            e.preset
        );
    }
    the_page_shows_the_secret_and_snippet_once(&p).await;
    the_page_refuses_a_bad_or_forged_form(&p).await;
}

/// A registration from the page: the snippet carries the secret, shown this once.
async fn the_page_shows_the_secret_and_snippet_once(p: &Portal<'_>) {
    let form = [
        ("preset", "grafana"),
        ("client_id", "grafana"),
        ("app_url", "https://grafana.example.org"),
    ];
    let resp = p.post("/admin/clients/new-app", &form).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let html = resp.text().await.unwrap();
    let secret = text_of(&html, "client-secret").expect("the secret shown");
    let snippet = text_of(&html, "snippet").expect("the snippet shown");
    let ini = parse("ini", &snippet);
    assert_eq!(ini["auth.generic_oauth.client_secret"], secret);
    assert_eq!(ini["auth.generic_oauth.client_id"], "grafana");
    // Shown once: the client's page does not show it again.
    let again = p.page("/admin/clients/grafana").await;
    assert!(!again.contains(&secret));
}

/// A refused form comes back with the problem by its field; a forged one does nothing.
async fn the_page_refuses_a_bad_or_forged_form(p: &Portal<'_>) {
    // A refused form comes back with the problem by its field and nothing stored.
    let bad = [
        ("preset", "grafana"),
        ("client_id", "g2"),
        ("app_url", "http://grafana.example.org"),
    ];
    let resp = p.post("/admin/clients/new-app", &bad).await;
    assert_eq!(resp.status(), 400);
    let html = resp.text().await.unwrap();
    assert!(
        text_of(&html, "app_url-error").is_some_and(|t| t.contains("https")),
        "{html}"
    );
    assert!(p.app.client("g2").await.is_none());
    // Without the session's CSRF token nothing happens.
    let forged = [
        ("preset", "minio"),
        ("client_id", "m"),
        ("app_url", "https://m.example.org"),
    ];
    let resp =
        p.b.post(p.app.url("/admin/clients/new-app"))
            .form(&forged)
            .send()
            .await
            .unwrap();
    assert_ne!(resp.status(), 201);
    assert!(p.app.client("m").await.is_none());
}
