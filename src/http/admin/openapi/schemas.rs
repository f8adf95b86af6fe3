//! The OpenAPI document's named schemas: the bodies and answers of the admin API as
//! JSON Schema 2020-12 (what OpenAPI 3.1 uses), one group of them per function.
//!
//! A request body whose Rust type has `#[serde(deny_unknown_fields)]` is `closed`
//! (`additionalProperties: false`), so a generated client refuses what the server would.

use serde_json::{json, Value};

use super::primitives::{
    array_of, boolean, closed, free_object, integer, integer_or_null, items, object, page, schema, string, strings,
    text_or_null, time, time_or_null,
};

fn user_input(required: &[&str]) -> Value {
    closed(
        json!({
            "username": string(),
            "password": {"type": "string", "format": "password", "writeOnly": true},
            "email": text_or_null(),
            "name": text_or_null(),
            "is_admin": boolean(),
            "email_verified": boolean(),
            "groups": {"type": "array", "items": string(), "description": "names of existing groups"},
            "claims": {"type": "object", "description": "further standard claims (given_name, phone_number, address …); the claims Tessera sets itself are refused"},
        }),
        required,
    )
}

fn user() -> Value {
    object(
        json!({
            "id": integer(), "sub": string(), "username": string(), "email": text_or_null(),
            "email_verified": boolean(), "name": text_or_null(), "is_admin": boolean(),
            "disabled": boolean(), "locked_until": time_or_null(), "failed_logins": integer(),
            "totp": boolean(), "passkeys": integer(), "groups": strings(), "claims": free_object(),
            "created_at": time(), "updated_at": time(), "deletion_requested_at": time_or_null(),
        }),
        &["id", "sub", "username", "is_admin", "disabled", "groups", "created_at"],
    )
}

/// `admin::clients::ClientSpec`: what an administrator sets on a client.
fn client_spec_properties() -> Value {
    json!({
        "client_id": string(),
        "name": text_or_null(),
        "public": boolean(),
        "redirect_uris": strings(),
        "post_logout_redirect_uris": strings(),
        "token_endpoint_auth_method": {"type": ["string", "null"], "enum": ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none", null]},
        "jwks": {"type": ["object", "null"], "description": "the client's JWK Set, for private_key_jwt"},
        "id_token_signed_response_alg": {"type": ["string", "null"], "enum": ["RS256", "ES256", "EdDSA", null]},
        "consent_required": boolean(),
        "grant_types": {"type": "array", "items": {"type": "string", "enum": ["authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "password"]}},
        "refresh_tokens": {"type": ["string", "null"], "enum": ["always", "offline-access", null]},
        "backchannel_logout_uri": text_or_null(),
        "backchannel_logout_session_required": boolean(),
        "allowed_groups": strings(),
        "access_token_ttl": integer_or_null(),
        "refresh_token_ttl": integer_or_null(),
        "admin": boolean(),
        "client_scopes": strings(),
        "web_origins": strings(),
        "grant_lifetime": integer_or_null(),
        "require_pushed_authorization_requests": boolean(),
        "require_signed_request_object": boolean(),
        "dpop_bound_access_tokens": boolean(),
        "jwks_uri": text_or_null(),
        "frontchannel_logout_uri": text_or_null(),
        "frontchannel_logout_session_required": boolean(),
        "introspect_any": {"type": "boolean", "description": "may introspect every token (a resource server); otherwise only tokens issued to the client or naming it in aud"},
        "initiate_login_uri": {"type": ["string", "null"], "description": "https URL where third-party-initiated sign-in starts (OpenID Connect Core §4)"},
    })
}

fn client() -> Value {
    let mut props = client_spec_properties();
    if let Some(p) = props.as_object_mut() {
        p.remove("public");
        p.remove("jwks");
        p.insert(
            "type".into(),
            json!({"type": "string", "enum": ["public", "confidential"]}),
        );
        p.insert(
            "origin".into(),
            json!({"type": "string", "enum": ["admin", "registration", "metadata_document"]}),
        );
        p.insert("created_at".into(), time());
    }
    object(
        props,
        &["client_id", "type", "token_endpoint_auth_method", "grant_types"],
    )
}

fn client_created() -> Value {
    json!({"allOf": [schema("Client"), object(json!({"client_secret": string()}), &[])]})
}

fn claim_rule() -> Value {
    closed(
        json!({
            "claim": string(),
            "source": {"type": "string", "description": "where the value comes from (docs/PROTOCOL.md, Claim mapping)"},
            "scope": {"type": ["string", "null"], "description": "the scope that releases the claim; null: always"},
            "in": {"type": "array", "items": {"type": "string", "enum": ["id_token", "userinfo", "access_token"]}},
            "values": {"type": "array", "items": schema("GroupValue")},
            "default": text_or_null(),
        }),
        &[],
    )
}

fn provider_spec() -> Value {
    closed(
        json!({
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,31}$"},
            "kind": {"type": "string", "enum": ["oidc", "github"]},
            "name": text_or_null(),
            "issuer": text_or_null(),
            "client_id": string(),
            "client_secret": {"type": "string", "format": "password", "writeOnly": true},
            "scope": text_or_null(),
            "jit": boolean(),
            "link_by_email": boolean(),
            "group_claim": text_or_null(),
            "map_group": {"type": "array", "items": {"type": "string", "description": "UPSTREAM=LOCAL"}},
            "require_local_mfa": boolean(),
        }),
        &["id", "client_id", "client_secret"],
    )
}

fn provider() -> Value {
    object(
        json!({
            "id": string(), "kind": {"type": "string", "enum": ["oidc", "github"]}, "name": string(),
            "issuer": text_or_null(), "client_id": string(), "scope": string(), "jit": boolean(),
            "link_by_email": boolean(), "require_local_mfa": boolean(), "group_claim": text_or_null(),
            "map_group": strings(), "redirect_uri": string(), "backchannel_logout_uri": string(),
            "created_at": time(), "linked_accounts": integer(),
        }),
        &["id", "kind", "client_id", "redirect_uri"],
    )
}

fn app_properties() -> Value {
    json!({
        "id": string(),
        "url": {"type": "string", "description": "the app's origin: scheme, host and port"},
        "allowed_groups": strings(),
        "require_mfa": boolean(),
        "header_prefix": {"type": ["string", "null"], "description": "2–32 letters, digits and '-', ending in '-'; default Remote-"},
    })
}

fn app() -> Value {
    let mut props = app_properties();
    props["host"] = string();
    props["created_at"] = time();
    object(props, &["id", "url", "host"])
}

fn preset_request() -> Value {
    closed(
        json!({"preset": string(), "client_id": string(), "app_url": string(), "app_key": text_or_null(), "name": text_or_null()}),
        &["preset", "client_id", "app_url"],
    )
}

fn preset() -> Value {
    object(
        json!({
            "name": string(), "app": string(), "note": string(), "docs_url": string(),
            "redirect_paths": strings(), "key": free_object(), "token_endpoint_auth_method": string(),
            "grant_types": strings(), "scopes": strings(), "pkce": boolean(), "groups": strings(),
            "claim_rules": array_of("ClaimRule"), "format": string(), "paste_into": string(),
        }),
        &["name", "app"],
    )
}

fn preset_registration() -> Value {
    object(
        json!({
            "preset": string(), "client": schema("Client"), "client_secret": text_or_null(),
            "redirect_uri": string(), "redirect_uris": strings(), "post_logout_redirect_uris": strings(),
            "claim_rules": array_of("ClaimRule"), "created_groups": strings(), "format": string(),
            "paste_into": string(), "docs_url": string(), "snippet": string(),
        }),
        &["preset", "client", "snippet"],
    )
}

fn preview() -> Value {
    object(
        json!({
            "id_token": free_object(), "access_token": free_object(), "userinfo": free_object(),
            "reasons": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": string()}},
            "refused": {"type": "array", "items": object(json!({"what": string(), "why": string()}), &["what", "why"])},
        }),
        &["id_token", "access_token", "userinfo", "reasons", "refused"],
    )
}

fn mail_queue() -> Value {
    let item = object(
        json!({
            "id": integer(), "to": string(), "subject": string(), "kind": string(),
            "status": {"type": "string", "enum": ["pending", "sent", "failed"]},
            "created_at": time(), "attempts": integer(), "next_attempt_at": time_or_null(),
            "sent_at": time_or_null(), "failed_at": time_or_null(), "last_answer": text_or_null(),
        }),
        &["id", "to", "status"],
    );
    object(
        json!({"pending": integer(), "sent": integer(), "failed": integer(), "items": {"type": "array", "items": item}}),
        &["pending", "sent", "failed", "items"],
    )
}

/// The body of every error answer.
fn error() -> Value {
    object(
        json!({
            "error": {"type": "string", "enum": ["invalid_request", "invalid_token", "forbidden", "not_found", "conflict", "temporarily_unavailable", "server_error"]},
            "error_description": string(),
            "fields": {"type": "object", "additionalProperties": string(), "description": "each wrong field and what is wrong with it"},
        }),
        &["error", "error_description"],
    )
}

/// Every named schema.
pub fn schemas() -> Value {
    let all = [
        vec![("Error", error())],
        users(),
        clients(),
        claims_and_presets(),
        registration(),
        providers_and_apps(),
        groups_and_invitations(),
        keys_audit_and_figures(),
    ];
    Value::Object(all.into_iter().flatten().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A person, their sessions and their links to upstream providers.
fn users() -> Vec<(&'static str, Value)> {
    vec![
        ("User", user()),
        ("UserCreate", user_input(&["username"])),
        ("UserPatch", user_input(&[])),
        ("UserPage", page("User")),
        (
            "Password",
            closed(
                json!({"password": {"type": "string", "format": "password", "writeOnly": true}}),
                &["password"],
            ),
        ),
        (
            "Session",
            object(
                json!({"sid": string(), "created_at": time(), "auth_time": time(), "expires_at": time(), "amr": strings(), "user_agent": text_or_null(), "ip": text_or_null()}),
                &["sid"],
            ),
        ),
        ("Ended", object(json!({"ended": integer()}), &["ended"])),
        (
            "Identity",
            object(
                json!({"provider": string(), "provider_name": string(), "subject": string(), "email": text_or_null(), "created_at": time(), "last_used_at": time_or_null()}),
                &["provider", "subject"],
            ),
        ),
        ("Identities", items("Identity")),
    ]
}

/// A client as set, as shown, and its secret.
fn clients() -> Vec<(&'static str, Value)> {
    vec![
        ("ClientSpec", closed(client_spec_properties(), &["client_id"])),
        ("ClientPatch", closed(client_spec_properties(), &[])),
        ("Client", client()),
        ("ClientCreated", client_created()),
        ("ClientPage", page("Client")),
        (
            "ClientSecret",
            object(
                json!({"client_id": string(), "client_secret": string()}),
                &["client_id", "client_secret"],
            ),
        ),
    ]
}

/// Claim rules, the token preview and the app presets.
fn claims_and_presets() -> Vec<(&'static str, Value)> {
    vec![
        (
            "GroupValue",
            closed(json!({"group": string(), "value": string()}), &["group", "value"]),
        ),
        ("ClaimRule", claim_rule()),
        (
            "ClaimTable",
            closed(json!({"items": array_of("ClaimRule")}), &["items"]),
        ),
        ("Preview", preview()),
        ("Preset", preset()),
        ("Presets", items("Preset")),
        ("PresetRequest", preset_request()),
        ("PresetRegistration", preset_registration()),
    ]
}

/// Initial access tokens.
fn registration() -> Vec<(&'static str, Value)> {
    vec![
        (
            "RegistrationTokenInput",
            closed(
                json!({"ttl": {"type": "string", "description": "1m to 30d, e.g. 1h (the default)"}, "uses": {"type": ["integer", "null"], "minimum": 1}}),
                &[],
            ),
        ),
        (
            "RegistrationTokenCreated",
            object(
                json!({"id": string(), "token": string(), "expires_at": time(), "uses": integer_or_null()}),
                &["id", "token", "expires_at"],
            ),
        ),
        (
            "RegistrationToken",
            object(
                json!({"id": string(), "created_at": time(), "expires_at": time(), "uses_left": integer_or_null(), "created_by": string()}),
                &["id", "expires_at"],
            ),
        ),
    ]
}

/// Upstream providers and forward-auth apps.
fn providers_and_apps() -> Vec<(&'static str, Value)> {
    vec![
        ("ProviderSpec", provider_spec()),
        ("Provider", provider()),
        ("ProviderPage", page("Provider")),
        (
            "ProviderSecret",
            closed(
                json!({"client_secret": {"type": "string", "format": "password", "writeOnly": true}}),
                &["client_secret"],
            ),
        ),
        ("AppSpec", closed(app_properties(), &["id", "url"])),
        ("App", app()),
        ("AppPage", page("App")),
    ]
}

/// Groups and invitations.
fn groups_and_invitations() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Group",
            object(
                json!({"id": integer(), "name": string(), "members": integer()}),
                &["id", "name"],
            ),
        ),
        (
            "GroupDetail",
            object(
                json!({"id": integer(), "name": string(), "members": integer(), "member_list": {"type": "array", "items": object(json!({"id": integer(), "username": string()}), &["id", "username"])}}),
                &["id", "name", "member_list"],
            ),
        ),
        (
            "GroupName",
            closed(
                json!({"name": {"type": "string", "minLength": 1, "maxLength": 64}}),
                &["name"],
            ),
        ),
        (
            "InvitationInput",
            closed(
                json!({"email": string(), "groups": strings(), "admin": boolean()}),
                &["email"],
            ),
        ),
        (
            "InvitationCreated",
            object(
                json!({"id": integer(), "email": string(), "link": string(), "expires_at": time(), "mailed": boolean()}),
                &["id", "email", "link", "expires_at", "mailed"],
            ),
        ),
        (
            "Invitation",
            object(
                json!({"id": integer(), "email": string(), "groups": strings(), "admin": boolean(), "created_at": time(), "expires_at": time()}),
                &["id", "email", "expires_at"],
            ),
        ),
    ]
}

/// Signing keys, the audit log, the mail queue and the figures at a glance.
fn keys_audit_and_figures() -> Vec<(&'static str, Value)> {
    let alg = || json!({"type": "string", "enum": ["RS256", "ES256", "EdDSA"]});
    vec![
        (
            "Key",
            object(
                json!({"kid": string(), "alg": alg(), "created_at": time(), "retired_at": time_or_null(), "status": {"type": "string", "enum": ["signing", "published", "retiring", "retired"]}, "signs_from": time_or_null()}),
                &["kid", "alg"],
            ),
        ),
        ("KeyRotate", closed(json!({"alg": alg()}), &[])),
        (
            "KeyRotated",
            object(
                json!({"kid": string(), "alg": alg(), "signs_from": time()}),
                &["kid", "alg", "signs_from"],
            ),
        ),
        (
            "AuditEntry",
            object(
                json!({"id": integer(), "at": time(), "event": string(), "actor": string(), "target": text_or_null(), "ip": text_or_null(), "detail": {}}),
                &["id", "at", "event", "actor"],
            ),
        ),
        ("AuditPage", page("AuditEntry")),
        ("MailQueue", mail_queue()),
        (
            "Stats",
            object(
                json!({"users": integer(), "active_sessions": integer(), "clients": integer(), "logins_24h": integer(), "failed_logins_24h": integer(), "locked_accounts": integer()}),
                &["users"],
            ),
        ),
    ]
}
