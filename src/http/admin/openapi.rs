//! `/admin/api/openapi.json`: the OpenAPI 3.1 document of the admin API, built from
//! the operation tables in `openapi/paths.rs` and the components in
//! `openapi/components.rs`.
//!
//! It is served to anyone, unlike the rest of `/admin/api`: it describes exactly what
//! docs/ADMIN_API.md already publishes (no user, client or setting of this server), and
//! the tools that read it (generators, API explorers) fetch it without credentials. The
//! calls it describes still refuse strangers.

mod components;
mod op;
mod paths;
mod primitives;
mod schemas;

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use crate::state::AppState;

/// The document for a server at `issuer` whose session cookie is `session_cookie`.
pub fn document(issuer: &str, session_cookie: &str) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tessera admin API",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Users, clients, groups, providers, apps, invitations, keys and the audit log of a Tessera OpenID provider",
            "description": "Every call answers JSON. Errors are {error, error_description, fields?}. See docs/ADMIN_API.md.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": issuer}],
        // Either scheme will do (an array of alternatives).
        "security": [{"adminToken": []}, {"adminSession": []}],
        "tags": tags(),
        "paths": paths::paths(),
        "components": components::components(session_cookie),
    })
}

fn tags() -> Value {
    let names = [
        "meta",
        "stats",
        "users",
        "clients",
        "presets",
        "claims",
        "registration",
        "providers",
        "apps",
        "groups",
        "keys",
        "audit",
        "mail",
        "invitations",
    ];
    Value::Array(names.iter().map(|n| json!({"name": n})).collect())
}

/// `GET /admin/api/openapi.json`.
pub async fn serve(state: web::Data<AppState>) -> HttpResponse {
    let doc = document(&state.issuer, crate::http::cookies::session_name(&state));
    HttpResponse::Ok()
        // It changes only with the binary; a short cache keeps tools from refetching.
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(doc)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_resolves() {
        let doc = document("https://id.example", "tessera_session");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 100, "the document uses shared components");
        for r in found {
            let pointer = r.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(pointer).is_some(), "{r} resolves");
        }
    }

    #[test]
    fn operation_ids_are_unique_and_path_parameters_declared() {
        let doc = document("https://id.example", "tessera_session");
        let mut ids = std::collections::HashSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                assert!(
                    ids.insert(op["operationId"].as_str().unwrap().to_string()),
                    "{method} {path}"
                );
                let declared: Vec<&str> = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .filter(|p| p["in"] == "path")
                            .map(|p| p["name"].as_str().unwrap())
                            .collect()
                    })
                    .unwrap_or_default();
                let in_path = path.matches('{').count();
                assert_eq!(declared.len(), in_path, "{method} {path} declares its path parameters");
            }
        }
    }

    #[test]
    fn only_the_document_itself_is_public() {
        let doc = document("https://id.example", "tessera_session");
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let public = op.get("security") == Some(&json!([]));
                assert_eq!(public, path == "/admin/api/openapi.json", "{method} {path}");
                if !public {
                    assert!(op["responses"]["401"].is_object(), "{method} {path} may answer 401");
                }
            }
        }
    }
}
