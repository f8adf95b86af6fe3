//! Resource indicators (RFC 8707): `resource` at authorization and token requests,
//! access tokens audience-restricted to registered resources, and `tessera resource`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::helpers::*;

const API: &str = "https://api.example.com";
const FILES: &str = "https://files.example.com/v1";
const OTHER: &str = "https://other.example.com";

fn cli(app: &TestApp, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn register(app: &TestApp, uri: &str, scopes: &[&str]) {
    let actor = tessera::admin::Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
    tessera::admin::resources::create(&app.state.ctx(), &actor, uri, &scopes)
        .await
        .unwrap();
}

/// Signs in with `extra` authorization parameters; the code and its PKCE verifier.
async fn code_for(app: &TestApp, client_id: &str, extra: &[(&str, &str)]) -> (String, Pkce) {
    let pkce = Pkce::new();
    let mut params = vec![
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    params.extend_from_slice(extra);
    let got = app
        .login(&browser(), &app.authorize_url(client_id, &params), "ada")
        .await;
    (got["code"].clone(), pkce)
}

async fn exchange(
    app: &TestApp,
    client: (&str, &str),
    code: &str,
    pkce: &Pkce,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    form.extend_from_slice(extra);
    app.token(Some(client), &form).await
}

async fn ok_json(resp: reqwest::Response) -> Value {
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn error_of(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    (status, body["error"].as_str().unwrap_or_default().to_string())
}

fn aud_of(tokens: &Value) -> Value {
    jwt_parts(tokens["access_token"].as_str().unwrap()).1["aud"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_cli_adds_lists_and_deletes_on_each_backend() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let add = cli(&app, &["resource", "add", API, "--scope", "read write"]);
        assert!(add.status.success(), "{}", text(&add.stderr));
        let twice = cli(&app, &["resource", "add", API]);
        assert!(!twice.status.success());
        assert!(
            text(&twice.stderr).contains("registered already"),
            "{}",
            text(&twice.stderr)
        );
        for bad in ["https://api.example.com/#x", "/relative", "not a uri"] {
            let out = cli(&app, &["resource", "add", bad]);
            assert!(!out.status.success(), "{bad} accepted");
            assert_eq!(
                text(&out.stderr).trim().lines().count(),
                1,
                "one line: {}",
                text(&out.stderr)
            );
        }
        let add = cli(&app, &["resource", "add", FILES]);
        assert!(add.status.success(), "{}", text(&add.stderr));
        let list = cli(&app, &["resource", "list", "--json"]);
        let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
        assert_eq!(
            listed,
            serde_json::json!([
                {"uri": API, "scopes": ["read", "write"], "created_at": listed[0]["created_at"]},
                {"uri": FILES, "scopes": [], "created_at": listed[1]["created_at"]},
            ])
        );
        let plain = text(&cli(&app, &["resource", "list"]).stdout);
        assert!(
            plain.contains(API) && plain.contains("read write") && plain.contains("(any)"),
            "{plain}"
        );

        // What the CLI registered is what the token endpoint knows.
        app.add_user("ada").await;
        let secret = app.add_client("web", false).await.unwrap();
        let (code, pkce) = code_for(&app, "web", &[("resource", API)]).await;
        let tokens = ok_json(exchange(&app, ("web", &secret), &code, &pkce, &[]).await).await;
        assert_eq!(aud_of(&tokens), API);

        let delete = cli(&app, &["resource", "delete", API]);
        assert!(delete.status.success(), "{}", text(&delete.stderr));
        let again = cli(&app, &["resource", "delete", API]);
        assert!(!again.status.success());
        let list = cli(&app, &["resource", "list", "--json"]);
        let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1);
        let audit = app.audit().await;
        assert!(audit.iter().any(|(e, _, _)| e == "admin.resource_created"));
        assert!(audit.iter().any(|(e, _, _)| e == "admin.resource_deleted"));
    }
}

#[tokio::test]
async fn resource_unknown_at_authorize_is_invalid_target() {
    let app = spawn_app().await;
    app.add_client("web", false).await;
    register(&app, API, &[]).await;
    let pkce = Pkce::new();
    for bad in [OTHER, "https://api.example.com/#frag", "relative/path"] {
        let url = app.authorize_url(
            "web",
            &[
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
                ("resource", API),
                ("resource", bad),
            ],
        );
        let p = redirect_params(&browser().get(&url).send().await.unwrap());
        assert_eq!(p["error"], "invalid_target", "{bad}");
        assert_eq!(p["state"], "st4te");
    }
}

#[tokio::test]
async fn resource_becomes_the_audience_and_the_token_still_works() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("web", false).await.unwrap();
    register(&app, API, &[]).await;
    let (code, pkce) = code_for(&app, "web", &[("resource", API)]).await;
    let tokens = ok_json(exchange(&app, ("web", &secret), &code, &pkce, &[]).await).await;
    assert_eq!(aud_of(&tokens), API);
    // The ID token is for the client, whatever the access token is for.
    assert_eq!(jwt_parts(tokens["id_token"].as_str().unwrap()).1["aud"], "web");
    let at = tokens["access_token"].as_str().unwrap();
    let info = app.introspect(("web", &secret), at).await;
    assert_eq!(info["active"], true);
    assert_eq!(info["aud"], API);
    let userinfo = plain_client()
        .get(app.url("/userinfo"))
        .bearer_auth(at)
        .send()
        .await
        .unwrap();
    assert_eq!(userinfo.status(), 200);
}

#[tokio::test]
async fn resource_at_token_selects_a_subset_of_the_authorized_ones() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("web", false).await.unwrap();
    register(&app, API, &[]).await;
    register(&app, FILES, &[]).await;
    register(&app, OTHER, &[]).await;
    let both = [("resource", API), ("resource", FILES)];
    let (code, pkce) = code_for(&app, "web", &both).await;
    let tokens = ok_json(exchange(&app, ("web", &secret), &code, &pkce, &[("resource", FILES)]).await).await;
    assert_eq!(aud_of(&tokens), FILES);

    let (code, pkce) = code_for(&app, "web", &both).await;
    let tokens = ok_json(exchange(&app, ("web", &secret), &code, &pkce, &[]).await).await;
    assert_eq!(
        aud_of(&tokens),
        serde_json::json!([API, FILES]),
        "all the authorized ones"
    );

    // Registered, but not authorized: RFC 8707 §2.2.
    let (code, pkce) = code_for(&app, "web", &both).await;
    let refused = exchange(&app, ("web", &secret), &code, &pkce, &[("resource", OTHER)]).await;
    assert_eq!(error_of(refused).await, (400, "invalid_target".into()));
    // Without a resource at authorization, none can be asked for later.
    let (code, pkce) = code_for(&app, "web", &[]).await;
    let refused = exchange(&app, ("web", &secret), &code, &pkce, &[("resource", API)]).await;
    assert_eq!(error_of(refused).await, (400, "invalid_target".into()));
}

#[tokio::test]
async fn resource_on_refresh_narrows_each_response_and_a_refusal_keeps_the_token() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("web", false).await.unwrap();
    register(&app, API, &[]).await;
    register(&app, FILES, &[]).await;
    register(&app, OTHER, &[]).await;
    let (code, pkce) = code_for(&app, "web", &[("resource", API), ("resource", FILES)]).await;
    let first = ok_json(exchange(&app, ("web", &secret), &code, &pkce, &[]).await).await;
    let refresh = first["refresh_token"].as_str().unwrap().to_string();
    let basic = Some(("web", secret.as_str()));

    let refused = app
        .token(
            basic,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("resource", OTHER),
            ],
        )
        .await;
    assert_eq!(error_of(refused).await, (400, "invalid_target".into()));
    // Not spent by the refusal.
    let narrowed = ok_json(
        app.token(
            basic,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("resource", API),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(aud_of(&narrowed), API);
    // The grant keeps both: the next refresh without `resource` is for both again.
    let next = narrowed["refresh_token"].as_str().unwrap();
    let again = ok_json(
        app.token(basic, &[("grant_type", "refresh_token"), ("refresh_token", next)])
            .await,
    )
    .await;
    assert_eq!(aud_of(&again), serde_json::json!([API, FILES]));
}

#[tokio::test]
async fn resource_absent_everywhere_changes_nothing() {
    let app = spawn_app().await;
    app.add_user("ada").await;
    let secret = app.add_client("web", false).await.unwrap();
    register(&app, API, &["read"]).await;
    let tokens = app.tokens("web", &secret, "ada").await;
    assert_eq!(aud_of(&tokens), "web");
    assert_eq!(tokens["scope"], "openid profile email");
    assert_eq!(tokens["token_type"], "Bearer");
}

#[tokio::test]
async fn resource_with_client_credentials_sets_aud_and_narrows_scope() {
    let app = spawn_app().await;
    let secret = app
        .add_client_with("svc", false, |c| {
            c.grant_types = vec!["client_credentials".into()];
            c.client_scopes = vec!["read".into(), "write".into(), "audit".into()];
        })
        .await
        .unwrap();
    register(&app, API, &["read", "write"]).await;
    register(&app, FILES, &[]).await;
    let basic = Some(("svc", secret.as_str()));
    let cc = |extra: Vec<(&'static str, &'static str)>| {
        let mut form = vec![("grant_type", "client_credentials"), ("scope", "read audit")];
        form.extend(extra);
        form
    };
    let tokens = ok_json(app.token(basic, &cc(vec![("resource", API)])).await).await;
    assert_eq!(aud_of(&tokens), API);
    assert_eq!(tokens["scope"], "read", "audit is not a scope the resource accepts");
    let (_, claims) = jwt_parts(tokens["access_token"].as_str().unwrap());
    assert_eq!(claims["scope"], "read");

    let tokens = ok_json(
        app.token(basic, &cc(vec![("resource", API), ("resource", FILES)]))
            .await,
    )
    .await;
    assert_eq!(aud_of(&tokens), serde_json::json!([API, FILES]));
    assert_eq!(tokens["scope"], "read audit", "FILES accepts any scope");

    let refused = app.token(basic, &cc(vec![("resource", OTHER)])).await;
    assert_eq!(error_of(refused).await, (400, "invalid_target".into()));
    let refused = app.token(basic, &cc(vec![("resource", "https://x.example/#f")])).await;
    assert_eq!(error_of(refused).await, (400, "invalid_target".into()));
    let plain = ok_json(app.token(basic, &cc(vec![])).await).await;
    assert_eq!(aud_of(&plain), "svc");
}
