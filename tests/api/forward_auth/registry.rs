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
        let (ok, _, err) = tessera(&app, &args);
        assert!(!ok, "{args:?} succeeded");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let (ok, out, _) = tessera(&app, &["app", "list", "--json"]);
    assert!(ok);
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list[0]["id"], "wiki");
    assert_eq!(list[0]["host"], "wiki.example.org");
    assert_eq!(list[0]["allowed_groups"], json!(["staff"]));
    assert_eq!(list[0]["require_mfa"], true);
    assert_eq!(list[0]["header_prefix"], "X-Auth-");
    let (ok, out, _) = tessera(&app, &["app", "list"]);
    assert!(ok && out.contains("wiki") && out.contains("staff"), "{out}");
    let (ok, out, _) = tessera(&app, &["app", "show", "wiki", "--json"]);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["url"],
        "https://wiki.example.org"
    );
    let (ok, _, _) = tessera(&app, &["app", "delete", "wiki"]);
    assert!(ok);
    let (_, out, _) = tessera(&app, &["app", "list", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!([]));
    let events: Vec<String> = app.audit().await.into_iter().map(|(e, _, _)| e).collect();
    assert!(events.contains(&"admin.app_created".to_string()) && events.contains(&"admin.app_deleted".to_string()));
}

#[tokio::test]
async fn the_admin_api_and_pages_manage_apps() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let api = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut req = plain_client()
            .request(method, app.url(&format!("/admin/api{path}")))
            .bearer_auth(&token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
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

    // The pages: an administrator adds an app through the form and deletes it.
    let admin = app.add_user("root").await;
    app.make_admin(admin.id).await;
    let b = browser();
    let csrf = app.portal_login(&b, "root", PASSWORD).await;
    let page = b
        .get(app.url("/admin/apps"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("no-cookie-domain"),
        "the page says forward-auth needs a cookie domain"
    );
    let resp = b
        .post(app.url("/admin/apps"))
        .form(&[("csrf", csrf.as_str()), ("id", "wiki"), ("url", "not a url")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("url-error"));
    let resp = b
        .post(app.url("/admin/apps"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("id", "wiki"),
            ("url", "https://wiki.example.org"),
            ("require_mfa", "on"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    let page = b
        .get(app.url("/admin/apps/wiki"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("wiki.example.org") && page.contains("required"), "{page}");
    let resp = b
        .post(app.url("/admin/apps/wiki/delete"))
        .form(&[("csrf", csrf.as_str()), ("confirm", "on")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(api(reqwest::Method::GET, "/apps/wiki", None).await.0, 404);
}
