//! The client settings of the second protocol wave (PAR, JAR, DPoP, jwks_uri,
//! front-channel logout, the password grant) through every way a client is edited:
//! the command line, the admin API, the admin pages, `tessera apply` and its dump.

use serde_json::{json, Value};

use crate::admin_api::admin_token;
use crate::helpers::*;

async fn api(app: &TestApp, token: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    app.admin_api(token, method, path, body).await
}

#[tokio::test]
async fn the_admin_api_sets_shows_and_checks_the_new_settings() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let post = |body: Value| api(&app, &token, reqwest::Method::POST, "/clients", Some(body));
    let (status, created) = post(json!({
        "client_id": "strict",
        "redirect_uris": ["https://rp.example/cb"],
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks_uri": "https://rp.example/jwks.json",
        "require_pushed_authorization_requests": true,
        "require_signed_request_object": true,
        "dpop_bound_access_tokens": true,
        "frontchannel_logout_uri": "https://rp.example/fc?x=1",
        "frontchannel_logout_session_required": true,
        "grant_types": ["authorization_code", "password"],
    }))
    .await;
    assert_eq!(status, 201, "{created}");
    let (_, shown) = api(&app, &token, reqwest::Method::GET, "/clients/strict", None).await;
    for (k, v) in [
        ("require_pushed_authorization_requests", json!(true)),
        ("require_signed_request_object", json!(true)),
        ("dpop_bound_access_tokens", json!(true)),
        ("jwks_uri", json!("https://rp.example/jwks.json")),
        ("frontchannel_logout_uri", json!("https://rp.example/fc?x=1")),
        ("frontchannel_logout_session_required", json!(true)),
        ("grant_types", json!(["authorization_code", "password"])),
        ("origin", json!("admin")),
    ] {
        assert_eq!(shown[k], v, "{k} in {shown}");
    }
    let stored = app.client("strict").await.unwrap();
    assert!(stored.require_par && stored.require_signed_request_object && stored.dpop_bound);
    assert_eq!(stored.jwks.as_deref(), None);
    the_api_refuses_settings_against_the_rfcs(&app, &token).await;
}

/// Settings against RFC 7591 and the rules are refused by field; http on loopback
/// is allowed.
async fn the_api_refuses_settings_against_the_rfcs(app: &TestApp, token: &str) {
    let post = |body: Value| api(app, token, reqwest::Method::POST, "/clients", Some(body));
    // RFC 7591 §2: jwks and jwks_uri not both; URLs https (http on loopback only).
    for (body, field) in [
        (
            json!({"client_id": "both", "redirect_uris": ["https://rp.example/cb"],
                   "jwks": {"keys": []}, "jwks_uri": "https://rp.example/jwks"}),
            "jwks_uri",
        ),
        (
            json!({"client_id": "plainhttp", "redirect_uris": ["https://rp.example/cb"],
                   "jwks_uri": "http://rp.example/jwks"}),
            "jwks_uri",
        ),
        (
            json!({"client_id": "fc", "redirect_uris": ["https://rp.example/cb"],
                   "frontchannel_logout_uri": "http://rp.example/fc"}),
            "frontchannel_logout_uri",
        ),
        (
            json!({"client_id": "fc2", "redirect_uris": ["https://rp.example/cb"],
                   "frontchannel_logout_uri": "https://rp.example/fc#frag"}),
            "frontchannel_logout_uri",
        ),
        (
            json!({"client_id": "fc3", "redirect_uris": ["https://rp.example/cb"],
                   "frontchannel_logout_session_required": true}),
            "frontchannel_logout_session_required",
        ),
        (
            json!({"client_id": "pw", "redirect_uris": ["https://rp.example/cb"],
                   "grant_types": ["password"], "consent_required": true}),
            "grant_types",
        ),
        (
            json!({"client_id": "pkj", "redirect_uris": ["https://rp.example/cb"],
                   "token_endpoint_auth_method": "private_key_jwt"}),
            "jwks",
        ),
    ] {
        let (status, err) = post(body.clone()).await;
        assert_eq!(status, 400, "{body}");
        assert!(err.to_string().contains(field), "{field} named in {err}");
    }
    let (status, _) = post(
        json!({"client_id": "local", "redirect_uris": ["http://127.0.0.1:8080/cb"],
                                  "frontchannel_logout_uri": "http://127.0.0.1:8080/fc"}),
    )
    .await;
    assert_eq!(status, 201, "http on a loopback host is allowed");
}

#[tokio::test]
async fn client_add_takes_the_new_flags() {
    let app = spawn_app().await;
    let mut args: Vec<String> = app.db_args();
    args.extend(
        [
            "client",
            "add",
            "cli-rp",
            "--redirect-uri",
            "https://rp.example/cb",
            "--require-par",
            "--require-signed-request-object",
            "--dpop-bound",
            "--jwks-uri",
            "https://rp.example/jwks.json",
            "--frontchannel-logout-uri",
            "https://rp.example/fc",
            "--frontchannel-logout-session-required",
            "--grant-type",
            "authorization_code",
            "--grant-type",
            "password",
        ]
        .map(String::from),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tessera_ok(&refs, &[], None);
    assert!(out.contains("client_id: cli-rp (no secret)"), "private_key_jwt: {out}");
    let mut show = app.db_args();
    show.extend(["client", "show", "cli-rp", "--json"].map(String::from));
    let refs: Vec<&str> = show.iter().map(String::as_str).collect();
    let view: Value = serde_json::from_str(&tessera_ok(&refs, &[], None)).unwrap();
    assert_eq!(view["token_endpoint_auth_method"], "private_key_jwt");
    assert_eq!(view["require_pushed_authorization_requests"], true);
    assert_eq!(view["require_signed_request_object"], true);
    assert_eq!(view["dpop_bound_access_tokens"], true);
    assert_eq!(view["jwks_uri"], "https://rp.example/jwks.json");
    assert_eq!(view["frontchannel_logout_uri"], "https://rp.example/fc");
    assert_eq!(view["frontchannel_logout_session_required"], true);
    assert_eq!(view["grant_types"], json!(["authorization_code", "password"]));
}

#[tokio::test]
async fn apply_declares_the_new_settings_and_the_dump_round_trips_them() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clients.toml");
    std::fs::write(
        &file,
        r#"
[[clients]]
client_id = "declared"
public = true
redirect_uris = ["https://rp.example/cb"]
require_pushed_authorization_requests = true
require_signed_request_object = true
dpop_bound_access_tokens = true
frontchannel_logout_uri = "https://rp.example/fc"
frontchannel_logout_session_required = true
grant_types = ["authorization_code", "password"]
"#,
    )
    .unwrap();
    let out = tessera::apply::apply_file(&app.state.ctx(), &app.state.upstreams, &file, Default::default())
        .await
        .unwrap();
    assert!(out.contains("+ client declared"), "{out}");
    let c = app.client("declared").await.unwrap();
    assert!(c.require_par && c.require_signed_request_object && c.dpop_bound);
    assert_eq!(c.frontchannel_logout_uri.as_deref(), Some("https://rp.example/fc"));
    assert!(c.frontchannel_logout_session_required);
    assert!(c.allows_grant("password"));

    let dumped = tessera::apply::dump(&app.state.ctx()).await.unwrap();
    for line in [
        "require_pushed_authorization_requests = true",
        "dpop_bound_access_tokens = true",
        "frontchannel_logout_uri = \"https://rp.example/fc\"",
    ] {
        assert!(dumped.contains(line), "{line} in {dumped}");
    }
    let again = dir.path().join("dumped.toml");
    std::fs::write(&again, &dumped).unwrap();
    let out = tessera::apply::apply_file(&app.state.ctx(), &app.state.upstreams, &again, Default::default())
        .await
        .unwrap();
    assert_eq!(out, "no changes\n", "{dumped}");

    // A change of one of them is one diff line, and applied.
    let edited = std::fs::read_to_string(&file)
        .unwrap()
        .replace("dpop_bound_access_tokens = true", "");
    std::fs::write(&file, edited).unwrap();
    let out = tessera::apply::apply_file(&app.state.ctx(), &app.state.upstreams, &file, Default::default())
        .await
        .unwrap();
    assert!(out.contains("dpop_bound_access_tokens"), "{out}");
}

#[tokio::test]
async fn the_client_page_sets_the_settings_and_warns_about_the_password_grant() {
    let app = spawn_app().await;
    let p = app.admin_portal().await;
    let created = p
        .post(
            "/admin/clients",
            &[
                ("client_id", "legacy"),
                ("kind", "confidential"),
                ("grant_types", "authorization_code"),
                ("grant_types", "password"),
                ("redirect_uris", "https://legacy.example/cb"),
                ("id_token_signed_response_alg", "RS256"),
                ("refresh_tokens", "always"),
                ("frontchannel_logout_uri", "https://legacy.example/fc"),
                ("frontchannel_logout_session_required", "on"),
                ("require_pushed_authorization_requests", "on"),
                ("dpop_bound_access_tokens", "on"),
            ],
        )
        .await;
    assert_eq!(created.status(), 201);
    let html = created.text().await.unwrap();
    let warning = text_of(&html, "password-grant-warning").expect("the warning is shown");
    assert!(warning.contains("RFC 9700"), "{warning}");
    let c = app.client("legacy").await.unwrap();
    assert!(c.require_par && c.dpop_bound && !c.require_signed_request_object);
    assert!(c.frontchannel_logout_session_required);
    assert_eq!(c.frontchannel_logout_uri.as_deref(), Some("https://legacy.example/fc"));

    // Editing keeps what the form shows and drops the warning with the grant.
    let page = p.page("/admin/clients/legacy").await;
    assert!(text_of(&page, "password-grant-warning").is_some());
    assert_eq!(
        input_value(&page, "frontchannel_logout_uri").as_deref(),
        Some("https://legacy.example/fc")
    );
    let saved = p
        .post(
            "/admin/clients/legacy",
            &[
                ("grant_types", "authorization_code"),
                ("redirect_uris", "https://legacy.example/cb"),
                ("id_token_signed_response_alg", "RS256"),
                ("refresh_tokens", "always"),
            ],
        )
        .await;
    assert_eq!(saved.status(), 302);
    let page = p.page("/admin/clients/legacy").await;
    assert!(text_of(&page, "password-grant-warning").is_none());
    let c = app.client("legacy").await.unwrap();
    assert!(!c.require_par && !c.dpop_bound && c.frontchannel_logout_uri.is_none());
}
