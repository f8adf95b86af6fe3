//! The OpenAPI 3.1 document at `/admin/api/openapi.json`: served to anyone, valid by
//! `openapi-spec-validator`, and in step with the server. "In step" is checked three
//! ways, so a route added without documenting it fails here: the route registrations
//! in `src/http/` (read from the source, since actix cannot list a `ServiceConfig`)
//! must equal the document's calls; every documented call must reach a handler on the
//! live server, and every other method on a documented path must reach the API's
//! catch-all; and the authorisation sweep's `admin_api::ROUTES` must name every call.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::admin_api::{admin_token, ROUTES};
use crate::helpers::*;

const DOCUMENT: &str = "/admin/api/openapi.json";
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

type Call = (String, String);

async fn fetch(app: &TestApp) -> Value {
    let resp = plain_client().get(app.url(DOCUMENT)).send().await.unwrap();
    assert_eq!(resp.status(), 200, "the document needs no credentials");
    let kind = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("application/json"), "{kind}");
    resp.json().await.unwrap()
}

/// The document's calls as (METHOD, full path template).
fn documented(doc: &Value) -> BTreeSet<Call> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            out.insert((method.to_ascii_uppercase(), path.clone()));
        }
    }
    out
}

/// The string literal and the `web::METHOD` after a `.route(` at `at`, if it is one.
fn registration(text: &str, at: usize) -> Option<(String, String)> {
    let rest = text[at + ".route(".len()..].trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    let path = rest[..end].to_string();
    let rest = rest[end + 1..].trim_start().strip_prefix(',')?.trim_start();
    let rest = rest.strip_prefix("web::")?;
    let method = rest[..rest.find('(')?].to_ascii_uppercase();
    Some((method, path))
}

/// The Rust files under `dir`, subfolders included.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
            out.push(path);
        }
    }
}

/// Every admin API route that `src/http/` registers, read from its route tables: the
/// routes of the `/admin/api` scope and those registered ahead of it with full paths.
fn registered() -> BTreeSet<Call> {
    const SCOPE: &str = "web::scope(\"/admin/api\")";
    let http = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut files = Vec::new();
    rust_files(&http, &mut files);
    let mut out = BTreeSet::new();
    let (mut literals, mut full, mut scopes) = (0, 0, 0);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // The document's own source names the prefix without registering anything.
        if !file.starts_with(http.join("admin/openapi")) && !file.ends_with("openapi.rs") {
            literals += text.matches("\"/admin/api").count();
        }
        scopes += text.matches(SCOPE).count();
        let scope = text.find(SCOPE);
        for (at, _) in text.match_indices(".route(") {
            let Some((method, route)) = registration(&text, at) else {
                continue;
            };
            if route.starts_with("/admin/api") {
                full += 1;
                out.insert((method, route));
            } else if scope.is_some_and(|s| s < at) {
                out.insert((method, format!("/admin/api{route}")));
            }
        }
    }
    // Each "/admin/api… literal is a route or the scope: no other way of registering
    // (web::resource, a path built at run time) slips past the reading above.
    assert_eq!(scopes, 1, "one /admin/api scope");
    assert_eq!(
        literals,
        full + scopes,
        "an /admin/api path registered in a way this test does not read"
    );
    out
}

fn matches(template: &str, path: &str) -> bool {
    let (t, p): (Vec<_>, Vec<_>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(t, p)| t.starts_with('{') || t == p)
}

/// A path template with made-up values: numbers for `{id}`, words otherwise.
fn concrete(template: &str) -> String {
    let part = |s: &str| match s {
        "{id}" => "999999".to_string(),
        s if s.starts_with('{') => "nope".to_string(),
        s => s.to_string(),
    };
    template.split('/').map(part).collect::<Vec<_>>().join("/")
}

/// Whether the call reached a handler: the catch-all answers `no such route`.
async fn served(app: &TestApp, token: &str, method: &str, path: &str) -> bool {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let resp = plain_client()
        .request(m, app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    !(status == 405 || status == 404 && body["error_description"] == "no such route")
}

#[tokio::test]
async fn the_document_is_public_and_describes_this_server() {
    let app = spawn_app().await;
    let doc = fetch(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], &*app.state.issuer);
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["adminToken"]["scheme"], "bearer");
    assert_eq!(schemes["adminSession"]["in"], "cookie");
    // The bodies the server reads with deny_unknown_fields are closed.
    for name in [
        "UserCreate",
        "ClientSpec",
        "ProviderSpec",
        "AppSpec",
        "ClaimRule",
        "InvitationInput",
    ] {
        assert_eq!(
            doc["components"]["schemas"][name]["additionalProperties"], false,
            "{name}"
        );
    }
    let error = &doc["components"]["schemas"]["Error"];
    assert_eq!(error["required"], serde_json::json!(["error", "error_description"]));
    // The rest of the API still turns strangers away.
    let users = plain_client().get(app.url("/admin/api/users")).send().await.unwrap();
    assert_eq!(users.status(), 401);
}

fn validator_available() -> bool {
    available(
        Command::new("python3").args(["-c", "import openapi_spec_validator"]),
        "openapi-spec-validator",
    )
}

fn validate(doc: &Value) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    let out = Command::new("python3")
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn openapi_spec_validator_accepts_the_document() {
    if !validator_available() {
        return;
    }
    let app = spawn_app().await;
    let mut doc = fetch(&app).await;
    let (ok, text) = validate(&doc);
    assert!(ok, "openapi-spec-validator refused the document:\n{text}");
    // The validator does refuse a broken document: a reference to nothing.
    doc["components"]["schemas"].as_object_mut().unwrap().remove("User");
    let (ok, text) = validate(&doc);
    assert!(!ok, "a dangling $ref must be refused:\n{text}");
}

#[tokio::test]
async fn the_document_names_exactly_the_registered_routes() {
    let app = spawn_app().await;
    let doc = documented(&fetch(&app).await);
    let routes = registered();
    let undocumented: Vec<_> = routes.difference(&doc).collect();
    let unserved: Vec<_> = doc.difference(&routes).collect();
    assert!(
        undocumented.is_empty(),
        "routes missing from the OpenAPI document: {undocumented:?}"
    );
    assert!(unserved.is_empty(), "documented calls no route registers: {unserved:?}");
    assert!(
        routes.len() > 50,
        "the reading found the route tables ({})",
        routes.len()
    );
}

#[tokio::test]
async fn every_documented_call_is_served_and_no_other_method() {
    let app = spawn_app().await;
    let token = admin_token(&app).await;
    let doc = documented(&fetch(&app).await);
    for (method, template) in &doc {
        let path = concrete(template);
        assert!(
            served(&app, &token, method, &path).await,
            "{method} {path} reaches no handler"
        );
    }
    let templates: BTreeSet<&String> = doc.iter().map(|(_, p)| p).collect();
    for template in templates {
        let path = concrete(template);
        for method in METHODS {
            // Another documented call may answer this method on this path.
            if doc.iter().any(|(m, t)| m == method && matches(t, &path)) {
                continue;
            }
            assert!(
                !served(&app, &token, method, &path).await,
                "{method} {path} is served but not documented"
            );
        }
    }
}

#[test]
fn the_authorisation_sweep_names_every_documented_call() {
    // The registered routes, which the test above proves equal to the document's.
    let app_doc = registered();
    for (method, path) in ROUTES {
        let full = format!("/admin/api{path}");
        assert!(
            app_doc.iter().any(|(m, t)| m == method && matches(t, &full)),
            "ROUTES has {method} {full}, which no documented call matches"
        );
    }
    for (method, template) in &app_doc {
        if template == DOCUMENT {
            continue; // public, so not in the sweep
        }
        assert!(
            ROUTES
                .iter()
                .any(|(m, p)| m == method && matches(template, &format!("/admin/api{p}"))),
            "admin_api::ROUTES lacks {method} {template}: the authorisation sweep would skip it"
        );
    }
}
