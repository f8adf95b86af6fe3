//! A client's specification: what an administrator (or a registration) sets on a
//! relying party, and the rules that turn it into a client with every combination
//! checked. The admin pages, the admin API, the CLI, dynamic registration and
//! metadata documents all build clients here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::db::clients::{Client, RefreshPolicy};
use crate::domain::Secret;
use crate::domain::{ClientId, GrantType, Problems};

mod rules;
mod values;

pub const AUTH_METHODS: &[&str] = &[
    "client_secret_basic",
    "client_secret_post",
    "client_secret_jwt",
    "private_key_jwt",
    "none",
];
pub const GRANT_TYPES: &[&str] = &[
    GrantType::AuthorizationCode.as_str(),
    GrantType::RefreshToken.as_str(),
    GrantType::ClientCredentials.as_str(),
    GrantType::DeviceCode.as_str(),
    GrantType::Password.as_str(),
];
pub const ALGS: &[&str] = &["RS256", "ES256", "EdDSA"];

/// The longest access-token lifetime a client may be registered with (signing keys
/// stay published at least this long after they retire: `keys::keep_retired`).
pub const MAX_CLIENT_ACCESS_TTL: i64 = 86_400;

/// Everything an administrator sets on a client (names as in OpenID Connect Dynamic
/// Client Registration where one exists).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientSpec {
    pub client_id: String,
    pub name: Option<String>,
    /// A public client (SPA, native app): no secret, PKCE required.
    pub public: bool,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
    /// The client's JWK Set, for `private_key_jwt`.
    pub jwks: Option<Value>,
    pub id_token_signed_response_alg: Option<String>,
    pub consent_required: bool,
    pub grant_types: Vec<String>,
    /// `always` (default) or `offline-access`.
    pub refresh_tokens: Option<String>,
    pub backchannel_logout_uri: Option<String>,
    pub backchannel_logout_session_required: bool,
    pub allowed_groups: Vec<String>,
    pub access_token_ttl: Option<i64>,
    pub refresh_token_ttl: Option<i64>,
    /// May use client credentials to obtain the `tessera:admin` scope.
    pub admin: bool,
    /// Scopes the client may obtain for itself with client credentials.
    pub client_scopes: Vec<String>,
    /// Browser origins allowed to call the token endpoints (CORS), besides those of
    /// the redirect URIs.
    pub web_origins: Vec<String>,
    /// Seconds a grant may be refreshed from its sign-in [default: the server's].
    pub grant_lifetime: Option<i64>,
    /// RFC 9126 §5: authorization requests only through the PAR endpoint.
    pub require_pushed_authorization_requests: bool,
    /// RFC 9101 §10.5: authorization requests only as signed request objects.
    pub require_signed_request_object: bool,
    /// RFC 9449 §5.2: every token request carries a DPoP proof.
    pub dpop_bound_access_tokens: bool,
    /// The client's JWK Set by reference (RFC 7591 §2), instead of `jwks`.
    pub jwks_uri: Option<String>,
    /// Front-Channel Logout 1.0 §2: loaded in an iframe when a session ends.
    pub frontchannel_logout_uri: Option<String>,
    /// Adds `iss` and `sid` to the front-channel logout URI.
    pub frontchannel_logout_session_required: bool,
    /// A resource server that may introspect every token (RFC 7662 §4); without it a
    /// client introspects only tokens issued to it or naming it in `aud`.
    pub introspect_any: bool,
    /// Where a third party starts the client's sign-in (OpenID Connect Core §4); https.
    pub initiate_login_uri: Option<String>,
}

/// How a setting is written by hand (its type in an apply file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Flag,
    Text,
    List,
    /// Whole seconds.
    Seconds,
    /// A JSON object (a JWK Set).
    Object,
}

/// Every setting of a `ClientSpec` but its id, by its name in the admin API and in
/// apply files, with its kind: what reads a specification key by key goes by this
/// list (a unit test keeps it equal to the struct's fields).
pub const FIELDS: &[(&str, FieldKind)] = &[
    ("name", FieldKind::Text),
    ("public", FieldKind::Flag),
    ("redirect_uris", FieldKind::List),
    ("post_logout_redirect_uris", FieldKind::List),
    ("token_endpoint_auth_method", FieldKind::Text),
    ("jwks", FieldKind::Object),
    ("id_token_signed_response_alg", FieldKind::Text),
    ("consent_required", FieldKind::Flag),
    ("grant_types", FieldKind::List),
    ("refresh_tokens", FieldKind::Text),
    ("backchannel_logout_uri", FieldKind::Text),
    ("backchannel_logout_session_required", FieldKind::Flag),
    ("allowed_groups", FieldKind::List),
    ("access_token_ttl", FieldKind::Seconds),
    ("refresh_token_ttl", FieldKind::Seconds),
    ("grant_lifetime", FieldKind::Seconds),
    ("admin", FieldKind::Flag),
    ("client_scopes", FieldKind::List),
    ("web_origins", FieldKind::List),
    ("require_pushed_authorization_requests", FieldKind::Flag),
    ("require_signed_request_object", FieldKind::Flag),
    ("dpop_bound_access_tokens", FieldKind::Flag),
    ("jwks_uri", FieldKind::Text),
    ("frontchannel_logout_uri", FieldKind::Text),
    ("frontchannel_logout_session_required", FieldKind::Flag),
    ("introspect_any", FieldKind::Flag),
    ("initiate_login_uri", FieldKind::Text),
];

/// The authentication an edit may not move a client out of: a shared secret sent as
/// such (basic or post), or else the method itself. Changing family means registering
/// a new client (the admin API, apply and RFC 7592 updates all refuse it).
pub fn auth_family(method: &str) -> &str {
    match method {
        "client_secret_basic" | "client_secret_post" => "secret",
        other => other,
    }
}

/// The specification that would recreate `c` (for editing).
pub fn spec_of(c: &Client) -> ClientSpec {
    ClientSpec {
        client_id: c.client_id.clone(),
        name: Some(c.name.clone()),
        public: c.is_public(),
        redirect_uris: c.redirect_uris.clone(),
        post_logout_redirect_uris: c.post_logout_redirect_uris.clone(),
        token_endpoint_auth_method: Some(c.auth_method.clone()),
        jwks: c.jwks.as_deref().and_then(|j| serde_json::from_str(j).ok()),
        id_token_signed_response_alg: Some(c.id_token_alg.clone()),
        consent_required: c.consent_required,
        grant_types: c.grant_types.clone(),
        refresh_tokens: Some(refresh_name(c.refresh).into()),
        backchannel_logout_uri: c.backchannel_logout_uri.clone(),
        backchannel_logout_session_required: c.backchannel_logout_session_required,
        allowed_groups: c.allowed_groups.clone(),
        access_token_ttl: c.access_token_ttl,
        refresh_token_ttl: c.refresh_token_ttl,
        admin: c.admin,
        client_scopes: c.client_scopes.clone(),
        web_origins: c.web_origins.clone(),
        grant_lifetime: c.grant_lifetime,
        require_pushed_authorization_requests: c.require_par,
        require_signed_request_object: c.require_signed_request_object,
        dpop_bound_access_tokens: c.dpop_bound,
        jwks_uri: c.jwks_uri.clone(),
        frontchannel_logout_uri: c.frontchannel_logout_uri.clone(),
        frontchannel_logout_session_required: c.frontchannel_logout_session_required,
        introspect_any: c.introspect_any,
        initiate_login_uri: c.initiate_login_uri.clone(),
    }
}

fn refresh_name(p: RefreshPolicy) -> &'static str {
    if p == RefreshPolicy::Always {
        "always"
    } else {
        "offline-access"
    }
}

/// A client as listed and shown: its specification, less its keys, with its kind,
/// origin and creation time; never its secret.
pub fn view(c: &Client) -> Value {
    let mut out = match serde_json::to_value(spec_of(c)) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    out.remove("public");
    out.remove("jwks");
    let kind = if c.is_public() { "public" } else { "confidential" };
    out.insert("type".into(), kind.into());
    out.insert("origin".into(), c.origin.clone().into());
    out.insert("created_at".into(), c.created_at.into());
    Value::Object(out)
}

/// Turns a specification into a client (and a new secret when its method needs one),
/// refusing combinations that cannot work.
pub fn build(spec: &ClientSpec, now: i64) -> Result<(Client, Option<Secret>), Problems> {
    let mut p = Problems::new();
    let id = ClientId::parse(spec.client_id.trim())
        .map_err(|e| p.insert("client_id".into(), e.0))
        .ok();
    let mut client = Client::new("", "", None, Vec::new());
    client.auth_method = rules::auth_method(spec, &mut p);
    rules::grants(spec, &mut client, &mut p);
    rules::keys(spec, &mut client, &mut p);
    rules::refresh(spec, &mut client, &mut p);
    rules::logout(spec, &mut client, &mut p);
    let name = rules::name(spec, &mut p);
    rules::tokens(spec, &mut client, &mut p);
    let (Some(id), true) = (id, p.is_empty()) else {
        return Err(p);
    };
    let secret = match client.auth_method.as_str() {
        "client_secret_basic" | "client_secret_post" => Some(Secret::generate()),
        "client_secret_jwt" => Some(Secret::generate_hmac_key()),
        _ => None,
    };
    client.client_id = id.as_str().to_string();
    client.name = name.unwrap_or(id.as_str()).to_string();
    client.created_at = now;
    client.secret_hash = secret.as_ref().map(Secret::hash);
    client.secret_for_hmac = (client.auth_method == "client_secret_jwt")
        .then(|| secret.as_ref().map(|s| s.expose().to_string()))
        .flatten();
    take_as_given(spec, &mut client);
    Ok((client, secret))
}

/// The settings a client takes from its specification as they are (the rules have
/// checked the combinations they take part in).
fn take_as_given(spec: &ClientSpec, c: &mut Client) {
    c.consent_required = spec.consent_required;
    c.backchannel_logout_session_required = spec.backchannel_logout_session_required;
    c.allowed_groups = spec
        .allowed_groups
        .iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    c.admin = spec.admin;
    c.require_par = spec.require_pushed_authorization_requests;
    c.require_signed_request_object = spec.require_signed_request_object;
    c.dpop_bound = spec.dpop_bound_access_tokens;
    c.frontchannel_logout_session_required = spec.frontchannel_logout_session_required;
    c.introspect_any = spec.introspect_any;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_list_names_every_setting_with_its_kind() {
        let Ok(Value::Object(blank)) = serde_json::to_value(ClientSpec::default()) else {
            panic!("a specification is a JSON object");
        };
        let listed: Vec<&str> = FIELDS.iter().map(|(f, _)| *f).collect();
        let mut settings: Vec<&str> = blank.keys().map(String::as_str).filter(|k| *k != "client_id").collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        settings.sort_unstable();
        assert_eq!(sorted, settings);
        for (field, kind) in FIELDS {
            let fits = match kind {
                FieldKind::Flag => blank[*field].is_boolean(),
                FieldKind::List => blank[*field].is_array(),
                _ => blank[*field].is_null(),
            };
            assert!(fits, "{field}");
        }
    }

    #[test]
    fn a_client_is_viewed_as_its_specification_less_its_keys() {
        let spec = ClientSpec {
            client_id: "app".into(),
            redirect_uris: vec!["https://app.example/cb".into()],
            jwks: Some(serde_json::json!({"keys": []})),
            ..ClientSpec::default()
        };
        let (client, _) = build(&spec, 7).unwrap();
        let v = view(&client);
        assert_eq!(v["type"], "confidential");
        assert_eq!(v["token_endpoint_auth_method"], "private_key_jwt");
        assert_eq!(v["created_at"], 7);
        assert_eq!(v["origin"], "admin");
        assert!(v.get("jwks").is_none() && v.get("public").is_none());
        assert_eq!(v.as_object().map(|o| o.len()), Some(FIELDS.len() + 2));
    }
}
