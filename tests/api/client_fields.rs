//! `introspect_any` and `initiate_login_uri` through every way a client is made or
//! edited: the admin API and page, `tessera client add`, `tessera apply` and its dump,
//! dynamic registration (which may set the second and never the first), and an
//! export moved between the storage engines.

use serde_json::{json, Value};
use tessera::admin::{registration::TokenInput, Actor};
use tessera::db;

use crate::admin_api::admin_token;
use crate::helpers::*;

const LOGIN: &str = "https://rp.example/login";

async fn stored(app: &TestApp, id: &str) -> db::clients::Client {
    let id = id.to_string();
    app.state
        .db
        .read(move |c| db::clients::find(c, &id))
        .await
        .unwrap()
        .expect("the client is stored")
}

async fn admin_api(app: &TestApp, token: &str, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
    let resp = plain_client()
        .request(method, app.url(&format!("/admin/api{path}")))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_admin_api_sets_shows_and_checks_both_fields() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let (status, created) = admin_api(
        &app,
        &token,
        reqwest::Method::POST,
        "/clients",
        json!({"client_id": "rs", "grant_types": ["client_credentials"],
               "introspect_any": true, "initiate_login_uri": LOGIN}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["introspect_any"], true);
    assert_eq!(created["initiate_login_uri"], LOGIN);
    let c = stored(&app, "rs").await;
    assert!(c.introspect_any);
    assert_eq!(c.initiate_login_uri.as_deref(), Some(LOGIN));

    let (status, patched) = admin_api(
        &app,
        &token,
        reqwest::Method::PATCH,
        "/clients/rs",
        json!({"introspect_any": false}),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["introspect_any"], false);
    assert_eq!(
        patched["initiate_login_uri"], LOGIN,
        "a patch keeps what it does not name"
    );
    assert!(!stored(&app, "rs").await.introspect_any);

    // A public client cannot authenticate to /introspect (RFC 7662 §2.1).
    let (status, err) = admin_api(
        &app,
        &token,
        reqwest::Method::POST,
        "/clients",
        json!({"client_id": "spa", "public": true, "redirect_uris": ["https://rp.example/cb"], "introspect_any": true}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(err.to_string().contains("introspect_any"), "{err}");

    // OpenID Connect Registration §2: initiate_login_uri MUST use https.
    for bad in [
        "http://rp.example/login",
        "http://127.0.0.1/login",
        "https://rp.example/l#x",
        "login",
    ] {
        let (status, err) = admin_api(
            &app,
            &token,
            reqwest::Method::POST,
            "/clients",
            json!({"client_id": "bad", "redirect_uris": ["https://rp.example/cb"], "initiate_login_uri": bad}),
        )
        .await;
        assert_eq!(status, 400, "{bad}");
        assert!(err.to_string().contains("initiate_login_uri"), "{bad}: {err}");
    }
}

#[tokio::test]
async fn client_add_takes_introspect_any_and_initiate_login_uri() {
    let app = spawn_app().await;
    let mut args = app.db_args();
    args.extend(
        [
            "client",
            "add",
            "gateway",
            "--grant-type",
            "client_credentials",
            "--introspect-any",
            "--initiate-login-uri",
            LOGIN,
        ]
        .map(String::from),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    tessera_ok(&refs, &[], None);
    let mut show = app.db_args();
    show.extend(["client", "show", "gateway", "--json"].map(String::from));
    let refs: Vec<&str> = show.iter().map(String::as_str).collect();
    let view: Value = serde_json::from_str(&tessera_ok(&refs, &[], None)).unwrap();
    assert_eq!(view["introspect_any"], true);
    assert_eq!(view["initiate_login_uri"], LOGIN);
}

#[tokio::test]
async fn apply_declares_both_fields_and_the_dump_round_trips_them() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clients.toml");
    // The dump names the secret `CLIENT_FIELDS_GATEWAY_SECRET`; the names are this
    // test's own.
    let secret = "fields-gateway-secret-of-forty-characters";
    std::env::set_var("FIELDS_GATEWAY_SECRET", secret);
    std::env::set_var("CLIENT_FIELDS_GATEWAY_SECRET", secret);
    let text = format!(
        "[[clients]]\nclient_id = \"fields-gateway\"\ngrant_types = [\"client_credentials\"]\n\
         secret_env = \"FIELDS_GATEWAY_SECRET\"\nintrospect_any = true\ninitiate_login_uri = \"{LOGIN}\"\n"
    );
    std::fs::write(&file, &text).unwrap();
    let apply = |path: std::path::PathBuf| {
        let state = app.state.clone();
        async move {
            tessera::apply::apply_file(&state.ctx(), &state.upstreams, &path, Default::default())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let out = apply(file.clone()).await;
    assert!(out.contains("+ client fields-gateway"), "{out}");
    let c = stored(&app, "fields-gateway").await;
    assert!(c.introspect_any);
    assert_eq!(c.initiate_login_uri.as_deref(), Some(LOGIN));

    let dumped = tessera::apply::dump(&app.state.ctx()).await.unwrap();
    assert!(dumped.contains("introspect_any = true"), "{dumped}");
    assert!(
        dumped.contains(&format!("initiate_login_uri = \"{LOGIN}\"")),
        "{dumped}"
    );
    let again = dir.path().join("dumped.toml");
    std::fs::write(&again, &dumped).unwrap();
    assert_eq!(apply(again).await, "no changes\n", "{dumped}");

    std::fs::write(&file, text.replace("introspect_any = true\n", "")).unwrap();
    let out = apply(file).await;
    assert!(out.contains("introspect_any"), "one diff line: {out}");
    assert!(!stored(&app, "fields-gateway").await.introspect_any);
}

#[tokio::test]
async fn the_client_page_has_a_checkbox_and_a_field_for_them() {
    let app = spawn_app().await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    let b = browser();
    let csrf = app.portal_login(&b, "root", PASSWORD).await;
    let form = |login: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("client_id", "api".to_string()),
            ("kind", "confidential".to_string()),
            ("grant_types", "client_credentials".to_string()),
            ("id_token_signed_response_alg", "RS256".to_string()),
            ("refresh_tokens", "always".to_string()),
            ("introspect_any", "on".to_string()),
            ("initiate_login_uri", login.to_string()),
        ]
    };
    let refused = b
        .post(app.url("/admin/clients"))
        .form(&form("http://rp.example/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("an https URL"));
    let created = b
        .post(app.url("/admin/clients"))
        .form(&form(LOGIN))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let c = stored(&app, "api").await;
    assert!(c.introspect_any);
    assert_eq!(c.initiate_login_uri.as_deref(), Some(LOGIN));
    let page = b
        .get(app.url("/admin/clients/api"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(input_value(&page, "initiate_login_uri").as_deref(), Some(LOGIN));
    assert!(
        page.contains(r#"name="introspect_any" value="on" checked"#),
        "the box is ticked"
    );
    assert!(page.contains("may introspect every token"), "the English label");
}

async fn initial_token(app: &TestApp) -> String {
    let actor = Actor {
        name: "test".into(),
        ip: None,
        user_id: None,
    };
    let input = TokenInput {
        ttl: Some("1h".into()),
        uses: None,
    };
    tessera::admin::registration::create(&app.state.ctx(), &actor, input)
        .await
        .unwrap()
        .token
}

async fn register(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    plain_client()
        .post(app.url("/register"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn registration_stores_initiate_login_uri_and_cannot_set_introspect_any() {
    let app = spawn_app().await;
    let token = initial_token(&app).await;
    let body = json!({
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "initiate_login_uri": LOGIN,
        "introspect_any": true,
    });
    let resp = register(&app, &token, &body).await;
    assert_eq!(resp.status(), 201);
    let info: Value = resp.json().await.unwrap();
    assert_eq!(info["initiate_login_uri"], LOGIN);
    assert!(info.get("introspect_any").is_none(), "{info}");
    let id = info["client_id"].as_str().unwrap().to_string();
    let c = stored(&app, &id).await;
    assert!(!c.introspect_any, "only an administrator marks a resource server");
    assert_eq!(c.initiate_login_uri.as_deref(), Some(LOGIN));
    let read: Value = plain_client()
        .get(app.url(&format!("/register/{id}")))
        .bearer_auth(info["registration_access_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(read["initiate_login_uri"], LOGIN, "RFC 7592 §2.1 read");

    let before = app.state.db.read(db::clients::count).await.unwrap();
    let mut http = body.clone();
    http["initiate_login_uri"] = json!("http://rp.example/login");
    let resp = register(&app, &token, &http).await;
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"], "invalid_client_metadata");
    assert!(err["error_description"]
        .as_str()
        .unwrap()
        .contains("initiate_login_uri"));
    assert_eq!(app.state.db.read(db::clients::count).await.unwrap(), before);
}

#[tokio::test]
async fn both_fields_survive_an_export_to_either_engine() {
    for target in backends() {
        let app = spawn_app().await;
        app.add_client_with("rs", false, |c| {
            c.introspect_any = true;
            c.initiate_login_uri = Some(LOGIN.into());
        })
        .await;
        let export = app.state.db.export(app.clock.now()).await.unwrap();
        let mut text = Vec::new();
        export.to_writer(&mut text).unwrap();
        let parsed = db::transfer::Export::parse(std::str::from_utf8(&text).unwrap()).unwrap();
        let db = empty_db(&target).await;
        db.import(parsed.prepare().unwrap()).await.unwrap();
        let c = db
            .read(|c| db::clients::find(c, "rs"))
            .await
            .unwrap()
            .expect("imported");
        assert!(c.introspect_any, "{target:?}");
        assert_eq!(c.initiate_login_uri.as_deref(), Some(LOGIN), "{target:?}");
    }
}
