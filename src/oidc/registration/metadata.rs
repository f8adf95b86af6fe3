//! Client metadata (RFC 7591 §2) as registrations and metadata documents send it,
//! read and turned into a third-party client by the rules of `client_spec::build`.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::{clients::Client, clients::RefreshPolicy};
use crate::domain::Secret;
use crate::oidc::client_spec::{build, ClientSpec};
use crate::oidc::{ErrorCode, OAuthError};

/// Grant types a registered client may use (client_credentials only when it is
/// confidential: `build` refuses it for public ones). Device and password grants are
/// an administrator's decision.
const GRANTS: &[&str] = &["authorization_code", "refresh_token", "client_credentials"];

/// Client metadata as sent (RFC 7591 §2; OpenID Connect Dynamic Registration §2 and
/// the later specifications' names). Unknown fields are ignored (§2).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Metadata {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
    pub client_name: Option<String>,
    pub client_uri: Option<String>,
    pub logo_uri: Option<String>,
    pub scope: Option<String>,
    pub contacts: Vec<String>,
    pub tos_uri: Option<String>,
    pub policy_uri: Option<String>,
    pub jwks: Option<Value>,
    pub jwks_uri: Option<String>,
    pub software_id: Option<String>,
    pub software_version: Option<String>,
    pub software_statement: Option<Value>,
    pub id_token_signed_response_alg: Option<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    pub backchannel_logout_session_required: bool,
    pub frontchannel_logout_uri: Option<String>,
    pub frontchannel_logout_session_required: bool,
    pub require_pushed_authorization_requests: bool,
    pub require_signed_request_object: bool,
    pub dpop_bound_access_tokens: bool,
    /// OpenID Connect Registration §2: where a third party starts the sign-in (https).
    pub initiate_login_uri: Option<String>,
}

pub(super) fn metadata_error(d: impl Into<String>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidClientMetadata, d.into())
}

/// Reads a JSON object of client metadata; anything else is `invalid_client_metadata`.
pub fn parse(body: &[u8]) -> Result<Metadata, OAuthError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| metadata_error(format!("the body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(metadata_error("the body is not a JSON object of client metadata"));
    }
    serde_json::from_value(value).map_err(|e| metadata_error(format!("the client metadata is not valid: {e}")))
}

/// A display URL: `client_uri` and `logo_uri` absolute http(s) URLs (the logo is
/// fetched through the fetch policy, which decides then); `tos_uri` and
/// `policy_uri`, which the login and consent pages link to, https only.
fn display_url(field: &str, v: &Option<String>) -> Result<Option<String>, OAuthError> {
    let Some(u) = v.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let schemes: &[&str] = if matches!(field, "client_uri" | "logo_uri") {
        &["https", "http"]
    } else {
        &["https"]
    };
    let ok = u.len() <= 2000 && url::Url::parse(u).is_ok_and(|p| schemes.contains(&p.scheme()) && p.host().is_some());
    if !ok {
        let what = if schemes.len() == 2 { "http(s)" } else { "https" };
        return Err(metadata_error(format!("{field}: an absolute {what} URL")));
    }
    Ok(Some(u.to_string()))
}

fn short_text(field: &str, v: &Option<String>, max: usize) -> Result<Option<String>, OAuthError> {
    match v.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) if t.chars().count() > max || t.chars().any(char::is_control) => Err(metadata_error(format!(
            "{field}: at most {max} characters, no control characters"
        ))),
        other => Ok(other.map(str::to_string)),
    }
}

/// What people may be shown about the client, kept as `registration_metadata` (RFC
/// 7591 §2: none of it is verified).
fn display_metadata(m: &Metadata) -> Result<Map<String, Value>, OAuthError> {
    let mut out = Map::new();
    for (field, v) in [
        ("client_uri", &m.client_uri),
        ("logo_uri", &m.logo_uri),
        ("tos_uri", &m.tos_uri),
        ("policy_uri", &m.policy_uri),
    ] {
        if let Some(u) = display_url(field, v)? {
            out.insert(field.into(), u.into());
        }
    }
    for (field, v) in [
        ("software_id", &m.software_id),
        ("software_version", &m.software_version),
    ] {
        if let Some(t) = short_text(field, v, 200)? {
            out.insert(field.into(), t.into());
        }
    }
    if let Some(scope) = short_text("scope", &m.scope, 1000)? {
        if scope.split(' ').any(|s| crate::domain::Scope::parse(s).is_err()) {
            return Err(metadata_error("scope: space-separated scope tokens (RFC 6749 §3.3)"));
        }
        out.insert("scope".into(), scope.into());
    }
    if m.contacts.len() > 10 {
        return Err(metadata_error("contacts: at most 10"));
    }
    let mut contacts = Vec::new();
    for c in &m.contacts {
        contacts.push(short_text("contacts", &Some(c.clone()), 200)?.unwrap_or_default());
    }
    if !contacts.is_empty() {
        out.insert("contacts".into(), contacts.into());
    }
    Ok(out)
}

/// Turns metadata into a third-party client named `client_id`, by the rules every
/// registration path shares; the error is the RFC 7591 §3.2.2 code, with the
/// problems spelled out.
pub fn client_of(m: &Metadata, client_id: &str, now: i64) -> Result<(Client, Option<Secret>), OAuthError> {
    if let Some(t) = m.response_types.iter().flatten().find(|t| t.as_str() != "code") {
        return Err(metadata_error(format!(
            "response_types: only `code` is supported, not `{t}`"
        )));
    }
    // RFC 7591 §2: without grant_types the client uses the authorization code only.
    let grant_types = m
        .grant_types
        .clone()
        .unwrap_or_else(|| vec!["authorization_code".into()]);
    if let Some(g) = grant_types.iter().find(|g| !GRANTS.contains(&g.as_str())) {
        return Err(metadata_error(format!(
            "grant_types: `{g}` is not available to registered clients (only {})",
            GRANTS.join(", ")
        )));
    }
    if grant_types.is_empty() {
        return Err(metadata_error("grant_types: at least one"));
    }
    let method = m
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| "client_secret_basic".into());
    let spec = ClientSpec {
        // `build` checks the id's form; registered ids are ours, documents' are URLs.
        client_id: "registered".into(),
        name: m.client_name.clone(),
        public: method == "none",
        redirect_uris: m.redirect_uris.clone(),
        post_logout_redirect_uris: m.post_logout_redirect_uris.clone(),
        token_endpoint_auth_method: Some(method),
        jwks: m.jwks.clone(),
        jwks_uri: m.jwks_uri.clone(),
        id_token_signed_response_alg: m.id_token_signed_response_alg.clone(),
        consent_required: true,
        grant_types,
        refresh_tokens: Some("offline-access".into()),
        backchannel_logout_uri: m.backchannel_logout_uri.clone(),
        backchannel_logout_session_required: m.backchannel_logout_session_required,
        frontchannel_logout_uri: m.frontchannel_logout_uri.clone(),
        frontchannel_logout_session_required: m.frontchannel_logout_session_required,
        require_pushed_authorization_requests: m.require_pushed_authorization_requests,
        require_signed_request_object: m.require_signed_request_object,
        dpop_bound_access_tokens: m.dpop_bound_access_tokens,
        initiate_login_uri: m.initiate_login_uri.clone(),
        ..ClientSpec::default()
    };
    if m.redirect_uris.is_empty() && spec.grant_types.iter().any(|g| g == "authorization_code") {
        return Err(OAuthError::new(
            ErrorCode::InvalidRedirectUri,
            "redirect_uris: the authorization_code grant needs at least one redirect URI",
        ));
    }
    let (mut client, secret) = build(&spec, now).map_err(|problems| {
        let redirect = problems.keys().any(|k| k == "redirect_uris");
        let text = problems
            .iter()
            .map(|(k, v)| format!("{}: {v}", if k == "name" { "client_name" } else { k.as_str() }))
            .collect::<Vec<_>>()
            .join("; ");
        // RFC 7591 §3.2.2: a redirect URI problem has its own code.
        let code = if redirect {
            ErrorCode::InvalidRedirectUri
        } else {
            ErrorCode::InvalidClientMetadata
        };
        OAuthError::new(code, text)
    })?;
    client.client_id = client_id.to_string();
    if m.client_name.as_deref().is_none_or(|n| n.trim().is_empty()) {
        client.name = client_id.chars().take(100).collect();
    }
    // Third parties: never what only an administrator grants.
    client.consent_required = true;
    client.refresh = RefreshPolicy::OfflineAccess;
    client.admin = false;
    // Reading other clients' tokens is an administrator's decision (RFC 7662 §4).
    client.introspect_any = false;
    client.client_scopes = Vec::new();
    client.allowed_groups = Vec::new();
    client.registration_metadata = Some(Value::Object(display_metadata(m)?).to_string());
    Ok((client, secret))
}

/// RFC 8252: a redirect URI that stays on the user's machine: loopback over http
/// (§7.3) or a private-use scheme in reverse-domain form (§7.1).
pub fn stays_on_device(uri: &str) -> bool {
    let Ok(u) = url::Url::parse(uri) else {
        return false;
    };
    match u.scheme() {
        "http" => {
            matches!(
                u.host(),
                Some(url::Host::Ipv4(a)) if a.is_loopback()
            ) || matches!(u.host(), Some(url::Host::Ipv6(a)) if a.is_loopback())
                || matches!(u.host(), Some(url::Host::Domain(d)) if d.eq_ignore_ascii_case("localhost"))
        }
        "https" => false,
        scheme => scheme.contains('.'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_that_stay_on_the_device() {
        for u in [
            "http://127.0.0.1:8080/cb",
            "http://[::1]:3000/cb",
            "http://localhost:33418/callback",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(stays_on_device(u), "{u}");
        }
        for u in [
            "https://app.example.com/cb",
            "http://app.example.com/cb",
            "http://10.0.0.1/cb",
            "myapp:/cb",
            "not a uri",
        ] {
            assert!(!stays_on_device(u), "{u}");
        }
    }

    #[test]
    fn metadata_becomes_a_third_party_client() {
        let m = parse(br#"{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none",
            "grant_types":["authorization_code","refresh_token"],"client_name":"Agent","logo_uri":"https://a.example/l.png",
            "unknown_field":{"ignored":true}}"#)
        .unwrap();
        let (c, secret) = client_of(&m, "abc", 10).unwrap();
        assert!(secret.is_none());
        assert!(c.consent_required && !c.admin);
        assert_eq!(c.refresh, RefreshPolicy::OfflineAccess);
        assert_eq!(c.client_id, "abc");
        assert!(c.registration_metadata.unwrap().contains("logo_uri"));
    }

    #[test]
    fn bad_metadata_gets_the_rfc_7591_codes() {
        let bad_uri = parse(br#"{"redirect_uris":["https://a.example/cb#frag"]}"#).unwrap();
        assert_eq!(
            client_of(&bad_uri, "x", 0).unwrap_err().code,
            ErrorCode::InvalidRedirectUri
        );
        let bad_grant = parse(br#"{"redirect_uris":["https://a.example/cb"],"grant_types":["password"]}"#).unwrap();
        assert_eq!(
            client_of(&bad_grant, "x", 0).unwrap_err().code,
            ErrorCode::InvalidClientMetadata
        );
        let implicit = parse(br#"{"redirect_uris":["https://a.example/cb"],"response_types":["token"]}"#).unwrap();
        assert_eq!(
            client_of(&implicit, "x", 0).unwrap_err().code,
            ErrorCode::InvalidClientMetadata
        );
        assert_eq!(parse(b"[1]").unwrap_err().code, ErrorCode::InvalidClientMetadata);
        assert_eq!(parse(b"{").unwrap_err().code, ErrorCode::InvalidClientMetadata);
    }
}
