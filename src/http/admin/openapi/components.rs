//! The OpenAPI document's `components`: the named schemas (`schemas.rs`), the error
//! answers every call shares, the list query parameters and the two ways to
//! authenticate.

use serde_json::{json, Map, Value};

use super::primitives::{integer, schema, string};
use super::schemas::schemas;

fn error_answer(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema("Error")}}})
}

fn query(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema})
}

fn parameters() -> Value {
    json!({
        "q": query("q", "search text", string()),
        "sort": query("sort", "a field, -field for descending", string()),
        "limit": query("limit", "page size", json!({"type": "integer", "minimum": 1, "maximum": 200, "default": 50})),
        "offset": query("offset", "items to skip", json!({"type": "integer", "minimum": 0, "default": 0})),
        "event": query("event", "an event name, or a prefix ending in a dot (admin.)", string()),
        "who": query("who", "matches the actor or the target", string()),
        "since": query("since", "Unix seconds", integer()),
        "until": query("until", "Unix seconds", integer()),
        "status": query("status", "only mail in this state", json!({"type": "string", "enum": ["pending", "sent", "failed"]})),
        "user": json!({"name": "user", "in": "query", "required": true, "description": "the username to preview", "schema": string()}),
        "scope": query("scope", "the scopes asked for, space-separated", string()),
    })
}

/// `components`: schemas, shared answers, list parameters, authentication
/// (`session_cookie`: the session cookie's name, `__Host-` prefixed on https issuers).
pub fn components(session_cookie: &str) -> Value {
    let mut responses = Map::new();
    for (name, text) in [
        ("Invalid", "a field is wrong (fields names each), unknown fields or malformed JSON (fields.body)"),
        ("Unauthenticated", "no credentials, or a token that is not valid; WWW-Authenticate: Bearer"),
        ("Forbidden", "not an administrator, a token without the tessera:admin scope of an admin client, or a session change without X-CSRF-Token"),
        ("NotFound", "no such user, client, provider, group, session or route"),
        ("Conflict", "the change is not possible now (the last active administrator, deleting yourself, a public client's secret …)"),
        ("Unavailable", "the database is busy; retry after Retry-After"),
    ] {
        responses.insert(name.into(), error_answer(text));
    }
    json!({
        "schemas": schemas(),
        "responses": responses,
        "parameters": parameters(),
        "securitySchemes": {
            "adminToken": {
                "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                "description": "an access token with the tessera:admin scope, from an admin client's own client credentials (POST /token, grant_type=client_credentials)",
            },
            "adminSession": {
                "type": "apiKey", "in": "cookie", "name": session_cookie,
                "description": "a signed-in administrator's session cookie; every change also sends the session's CSRF token in X-CSRF-Token",
            },
        },
    })
}
