//! Registering protected apps: `tessera app …`, the admin API and the admin pages, with
//! the same validation and audit entries.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::admin_api::admin_token;
use crate::helpers::*;

/// Runs `tessera ARGS` on `app`'s database: (success, stdout, stderr).
fn tessera(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[tokio::test]
async fn the_app_commands_register_show_list_and_delete() {
    let app = spawn_app().await;
    let (ok, _, err) = tessera(
        &app,
        &[
            "app",
            "add",
            "wiki",
            "--url",
            "https://wiki.example.org",
            "--allowed-group",
            "staff",
        ],
    );
    assert!(!ok);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("there is no group `staff`"), "{err}");
    app.state
        .db
        .write(|c| tessera::db::groups::create(c, "staff").map(|_| ()))
        .await
        .unwrap();
    let (ok, out, err) = tessera(
        &app,
        &[
            "app",
            "add",
            "wiki",
            "--url",
            "https://Wiki.Example.org/",
            "--allowed-group",
            "staff",
            "--require-mfa",
            "--header-prefix",
            "X-Auth-",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("app wiki protected: https://wiki.example.org"), "{out}");
    the_app_commands_refuse_in_one_line(&app);
    the_app_commands_list_and_show_wiki(&app);
    let (ok, _, _) = tessera(&app, &["app", "delete", "wiki"]);
    assert!(ok);
    let (_, out, _) = tessera(&app, &["app", "list", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!([]));
    let events: Vec<String> = app.audit().await.into_iter().map(|(e, _, _)| e).collect();
    assert!(events.contains(&"admin.app_created".to_string()) && events.contains(&"admin.app_deleted".to_string()));
}

/// Each bad `app` command fails with one line saying why.
fn the_app_commands_refuse_in_one_line(app: &TestApp) {
    for (args, needle) in [
        (
            vec!["app", "add", "again", "--url", "https://wiki.example.org"],
            "the app `wiki` has this host",
        ),
        (
            vec!["app", "add", "wiki", "--url", "https://other.example.org"],
            "an app with this id exists",
        ),
        (
            vec!["app", "add", "x", "--url", "https://x.example.org/sub"],
            "apps are matched by host",
        ),
        (
            vec!["app", "add", "x", "--url", "https://user@x.example.org"],
            "credentials",
        ),
        (
            vec!["app", "add", "x", "--url", "ftp://x.example.org"],
            "http and https",
        ),
        (
            vec![
                "app",
                "add",
                "x",
                "--url",
                "https://x.example.org",
                "--header-prefix",
                "Content-",
            ],
            "header_prefix",
        ),
        (vec!["app", "add", "Bad Id", "--url", "https://y.example.org"], "id"),
        (vec!["app", "show", "nope"], "no app with id nope"),
    ] {
        let (ok, _, err) = tessera(app, &args);
        assert!(!ok, "{args:?} succeeded");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `app list` and `app show` show wiki as registered.
fn the_app_commands_list_and_show_wiki(app: &TestApp) {
    let (ok, out, _) = tessera(app, &["app", "list", "--json"]);
    assert!(ok);
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list[0]["id"], "wiki");
    assert_eq!(list[0]["host"], "wiki.example.org");
    assert_eq!(list[0]["allowed_groups"], json!(["staff"]));
    assert_eq!(list[0]["require_mfa"], true);
    assert_eq!(list[0]["header_prefix"], "X-Auth-");
    let (ok, out, _) = tessera(app, &["app", "list"]);
    assert!(ok && out.contains("wiki") && out.contains("staff"), "{out}");
    let (ok, out, _) = tessera(app, &["app", "show", "wiki", "--json"]);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["url"],
        "https://wiki.example.org"
    );
}

#[tokio::test]
async fn the_admin_api_and_pages_manage_apps() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let api =
        |method: reqwest::Method, path: &'static str, body: Option<Value>| app.admin_api(&token, method, path, body);
    let (status, body) = api(
        reqwest::Method::POST,
        "/apps",
        Some(json!({"id": "grafana", "url": "http://grafana.example.org"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["header_prefix"], "Remote-");
    let (status, body) = api(
        reqwest::Method::POST,
        "/apps",
        Some(json!({"id": "x", "url": "https://x.example.org/#f"})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("url"), "{body}");
    let (status, body) = api(
        reqwest::Method::POST,
        "/apps",
        Some(json!({"id": "x", "url": "https://x.example.org", "colour": 1})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = api(reqwest::Method::GET, "/apps", None).await;
    assert_eq!((status, body["total"].clone()), (200, json!(1)));
    assert_eq!(body["items"][0]["id"], "grafana");
    assert_eq!(api(reqwest::Method::GET, "/apps/grafana", None).await.0, 200);
    assert_eq!(api(reqwest::Method::GET, "/apps/nope", None).await.0, 404);
    assert_eq!(api(reqwest::Method::DELETE, "/apps/grafana", None).await.0, 204);
    assert_eq!(api(reqwest::Method::GET, "/apps/grafana", None).await.0, 404);

    the_pages_add_and_delete_an_app(&app).await;
    assert_eq!(api(reqwest::Method::GET, "/apps/wiki", None).await.0, 404);
}

/// The pages: an administrator adds an app through the form and deletes it.
async fn the_pages_add_and_delete_an_app(app: &TestApp) {
    let p = app.admin_portal().await;
    let page = p.page("/admin/apps").await;
    assert!(
        page.contains("no-cookie-domain"),
        "the page says forward-auth needs a cookie domain"
    );
    let resp = p.post("/admin/apps", &[("id", "wiki"), ("url", "not a url")]).await;
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("url-error"));
    let resp = p
        .post(
            "/admin/apps",
            &[
                ("id", "wiki"),
                ("url", "https://wiki.example.org"),
                ("require_mfa", "on"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 302);
    let page = p.page("/admin/apps/wiki").await;
    assert!(page.contains("wiki.example.org") && page.contains("required"), "{page}");
    let resp = p.post("/admin/apps/wiki/delete", &[("confirm", "on")]).await;
    assert_eq!(resp.status(), 302);
}
