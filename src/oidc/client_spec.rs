//! A client's specification: what an administrator (or a registration) sets on a
//! relying party, and the rules that turn it into a client with every combination
//! checked. The admin pages, the admin API, the CLI, dynamic registration and
//! metadata documents all build clients here.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::db::clients::{Client, RefreshPolicy};
use crate::domain::Secret;
use crate::domain::{ClientId, GrantType, Problems, RedirectUri};

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

/// A client as listed and shown: never its secret.
pub fn view(c: &Client) -> Value {
    json!({
        "client_id": c.client_id,
        "name": c.name,
        "type": if c.is_public() { "public" } else { "confidential" },
        "token_endpoint_auth_method": c.auth_method,
        "id_token_signed_response_alg": c.id_token_alg,
        "grant_types": c.grant_types,
        "consent_required": c.consent_required,
        "refresh_tokens": refresh_name(c.refresh),
        "redirect_uris": c.redirect_uris,
        "post_logout_redirect_uris": c.post_logout_redirect_uris,
        "backchannel_logout_uri": c.backchannel_logout_uri,
        "backchannel_logout_session_required": c.backchannel_logout_session_required,
        "allowed_groups": c.allowed_groups,
        "access_token_ttl": c.access_token_ttl,
        "refresh_token_ttl": c.refresh_token_ttl,
        "admin": c.admin,
        "client_scopes": c.client_scopes,
        "web_origins": c.web_origins,
        "grant_lifetime": c.grant_lifetime,
        "require_pushed_authorization_requests": c.require_par,
        "require_signed_request_object": c.require_signed_request_object,
        "dpop_bound_access_tokens": c.dpop_bound,
        "jwks_uri": c.jwks_uri,
        "frontchannel_logout_uri": c.frontchannel_logout_uri,
        "frontchannel_logout_session_required": c.frontchannel_logout_session_required,
        "introspect_any": c.introspect_any,
        "initiate_login_uri": c.initiate_login_uri,
        "origin": c.origin,
        "created_at": c.created_at,
    })
}

fn parse_uris(field: &str, uris: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out = Vec::new();
    for u in uris.iter().map(|u| u.trim()).filter(|u| !u.is_empty()) {
        match RedirectUri::parse(u) {
            Ok(r) => out.push(r.as_str().to_string()),
            Err(e) => {
                problems.insert(field.into(), format!("{u}: {e}"));
            }
        }
    }
    out
}

/// Browser origins: `scheme://host[:port]` over http(s), nothing more, as a browser
/// sends them in `Origin`.
fn parse_origins(origins: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out = Vec::new();
    for o in origins.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let parsed = url::Url::parse(o).ok().filter(|u| {
            matches!(u.scheme(), "http" | "https")
                && u.host().is_some()
                && u.username().is_empty()
                && u.path() == "/"
                && u.query().is_none()
                && u.fragment().is_none()
                && !o.ends_with('/')
        });
        match parsed {
            Some(u) => out.push(u.origin().ascii_serialization()),
            None => {
                problems.insert("web_origins".into(), format!("{o}: an origin is scheme://host[:port]"));
            }
        }
    }
    out.dedup();
    out
}

/// Scopes a client may ask for itself: RFC 6749 §3.3 tokens, neither OpenID Connect
/// scopes (they mean nothing without a user) nor the admin scope (`admin` grants it).
fn parse_client_scopes(scopes: &[String], problems: &mut Problems) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scopes.iter().flat_map(|s| s.split_whitespace()) {
        if crate::domain::Scope::parse(s).is_err() {
            problems.insert("client_scopes".into(), format!("`{s}` is not a scope"));
        } else if crate::oidc::claims::SUPPORTED_SCOPES.contains(&s) || s == crate::oidc::token::ADMIN_SCOPE {
            problems.insert(
                "client_scopes".into(),
                format!("`{s}` cannot be granted to a client for itself"),
            );
        } else if !out.iter().any(|x| x == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// A URL the server or a browser fetches for the client: absolute https, or http on a
/// loopback host only (a developer's machine; the outbound fetcher refuses loopback
/// targets outside its test mode anyway). A query is kept (Front-Channel Logout 1.0 §2
/// allows one); a fragment is refused, as for redirect URIs.
fn web_url(field: &str, u: &str, problems: &mut Problems) -> Option<String> {
    let parsed = match url::Url::parse(u) {
        Ok(url) => url,
        Err(_) => {
            problems.insert(field.into(), format!("{u}: not an absolute URL"));
            return None;
        }
    };
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    let problem = if parsed.host().is_none() || !matches!(parsed.scheme(), "http" | "https") {
        Some("an http(s) URL with a host")
    } else if parsed.scheme() == "http" && !loopback {
        Some("https, or http only on a loopback host")
    } else if parsed.fragment().is_some() || u.contains('#') {
        Some("no fragment")
    } else if !parsed.username().is_empty() || parsed.password().is_some() {
        Some("no user name or password in the URL")
    } else if u.len() > 2000 {
        Some("at most 2000 characters")
    } else {
        None
    };
    match problem {
        Some(why) => {
            problems.insert(field.into(), format!("{u}: {why}"));
            None
        }
        None => Some(u.to_string()),
    }
}

/// OpenID Connect Registration §2: `initiate_login_uri` MUST use the https scheme.
fn https_url(field: &str, u: &str, problems: &mut Problems) -> Option<String> {
    if !u.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")) {
        problems.insert(field.into(), format!("{u}: an https URL"));
        return None;
    }
    web_url(field, u, problems)
}

fn ttl(field: &str, v: Option<i64>, min: i64, max: i64, problems: &mut Problems) -> Option<i64> {
    if let Some(n) = v.filter(|n| !(min..=max).contains(n)) {
        problems.insert(field.into(), format!("{n} is outside {min}–{max} seconds"));
    }
    v
}

/// Turns a specification into a client (and a new secret when its method needs one),
/// refusing combinations that cannot work.
pub fn build(spec: &ClientSpec, now: i64) -> Result<(Client, Option<Secret>), Problems> {
    let mut p = Problems::new();
    let id = ClientId::parse(spec.client_id.trim())
        .map_err(|e| p.insert("client_id".into(), e.0))
        .ok();
    let method = match (&spec.token_endpoint_auth_method, spec.public) {
        (Some(m), _) if !AUTH_METHODS.contains(&m.as_str()) => {
            p.insert(
                "token_endpoint_auth_method".into(),
                format!("one of {}", AUTH_METHODS.join(", ")),
            );
            m.clone()
        }
        (Some(m), true) if m != "none" => {
            p.insert(
                "token_endpoint_auth_method".into(),
                "a public client authenticates with `none`".into(),
            );
            m.clone()
        }
        (Some(m), _) => m.clone(),
        (None, true) => "none".into(),
        (None, false) if spec.jwks.is_some() || spec.jwks_uri.is_some() => "private_key_jwt".into(),
        (None, false) => "client_secret_basic".into(),
    };
    let grant_types = if spec.grant_types.is_empty() {
        vec!["authorization_code".to_string(), "refresh_token".to_string()]
    } else {
        spec.grant_types.clone()
    };
    if let Some(g) = grant_types.iter().find(|g| !GRANT_TYPES.contains(&g.as_str())) {
        p.insert(
            "grant_types".into(),
            format!("`{g}` is not one of {}", GRANT_TYPES.join(", ")),
        );
    }
    let redirect_uris = parse_uris("redirect_uris", &spec.redirect_uris, &mut p);
    if redirect_uris.is_empty()
        && grant_types.iter().any(|g| g == "authorization_code")
        && !p.contains_key("redirect_uris")
    {
        p.insert(
            "redirect_uris".into(),
            "the authorization_code grant needs at least one redirect URI".into(),
        );
    }
    if method == "none" && grant_types.iter().any(|g| g == "client_credentials") {
        p.insert(
            "grant_types".into(),
            "a public client cannot use client_credentials".into(),
        );
    }
    // RFC 6749 §4.3 has no step where a person could approve the client: a client that
    // must ask for consent cannot take passwords directly.
    if spec.consent_required && grant_types.iter().any(|g| g == "password") {
        p.insert(
            "grant_types".into(),
            "the password grant cannot ask for consent; untick consent or the password grant".into(),
        );
    }
    if spec.admin && (method == "none" || !grant_types.iter().any(|g| g == "client_credentials")) {
        p.insert(
            "admin".into(),
            "an admin client is confidential and uses client_credentials".into(),
        );
    }
    // RFC 7662 §2.1: the caller authenticates, which a public client cannot.
    if spec.introspect_any && method == "none" {
        p.insert(
            "introspect_any".into(),
            "only a confidential client can introspect".into(),
        );
    }
    let jwks = match &spec.jwks {
        Some(v) if v["keys"].is_array() => Some(v.to_string()),
        Some(_) => {
            p.insert("jwks".into(), "a JWK Set: {\"keys\": [...]}".into());
            None
        }
        None => None,
    };
    let jwks_uri = spec
        .jwks_uri
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .and_then(|u| web_url("jwks_uri", u, &mut p));
    // RFC 7591 §2: `jwks` and `jwks_uri` MUST NOT both be present.
    if spec.jwks.is_some() && jwks_uri.is_some() {
        p.insert(
            "jwks_uri".into(),
            "give either jwks or jwks_uri, not both (RFC 7591 §2)".into(),
        );
    }
    if method == "private_key_jwt" && spec.jwks.is_none() && jwks_uri.is_none() && !p.contains_key("jwks_uri") {
        p.insert(
            "jwks".into(),
            "private_key_jwt needs the client's public keys (jwks or jwks_uri)".into(),
        );
    }
    let alg = spec
        .id_token_signed_response_alg
        .clone()
        .unwrap_or_else(|| "RS256".into());
    if !ALGS.contains(&alg.as_str()) {
        p.insert(
            "id_token_signed_response_alg".into(),
            format!("one of {}", ALGS.join(", ")),
        );
    }
    let refresh = match spec.refresh_tokens.as_deref().unwrap_or("always") {
        "always" => RefreshPolicy::Always,
        "offline-access" | "offline_access" => RefreshPolicy::OfflineAccess,
        _ => {
            p.insert("refresh_tokens".into(), "`always` or `offline-access`".into());
            RefreshPolicy::Always
        }
    };
    let post_logout = parse_uris("post_logout_redirect_uris", &spec.post_logout_redirect_uris, &mut p);
    let backchannel = parse_uris("backchannel_logout_uri", spec.backchannel_logout_uri.as_slice(), &mut p).pop();
    let frontchannel = spec
        .frontchannel_logout_uri
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .and_then(|u| web_url("frontchannel_logout_uri", u, &mut p));
    if spec.frontchannel_logout_session_required && frontchannel.is_none() && !p.contains_key("frontchannel_logout_uri")
    {
        p.insert(
            "frontchannel_logout_session_required".into(),
            "needs a frontchannel_logout_uri".into(),
        );
    }
    let initiate_login_uri = spec
        .initiate_login_uri
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .and_then(|u| https_url("initiate_login_uri", u, &mut p));
    let name = spec.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    if name.is_some_and(|n| n.chars().count() > 100) {
        p.insert("name".into(), "at most 100 characters".into());
    }
    let access_ttl = ttl(
        "access_token_ttl",
        spec.access_token_ttl,
        60,
        MAX_CLIENT_ACCESS_TTL,
        &mut p,
    );
    let refresh_ttl = ttl("refresh_token_ttl", spec.refresh_token_ttl, 300, 366 * 86_400, &mut p);
    let grant_lifetime = ttl("grant_lifetime", spec.grant_lifetime, 300, 3660 * 86_400, &mut p);
    let web_origins = parse_origins(&spec.web_origins, &mut p);
    let client_scopes = parse_client_scopes(&spec.client_scopes, &mut p);
    if !client_scopes.is_empty() && !grant_types.iter().any(|g| g == "client_credentials") {
        p.insert(
            "client_scopes".into(),
            "scopes for the client itself need the client_credentials grant".into(),
        );
    }
    let (Some(id), true) = (id, p.is_empty()) else {
        return Err(p);
    };
    let secret = match method.as_str() {
        "client_secret_basic" | "client_secret_post" => Some(Secret::generate()),
        "client_secret_jwt" => Some(Secret::generate_hmac_key()),
        _ => None,
    };
    let mut client = Client::new(
        id.as_str(),
        name.unwrap_or(id.as_str()),
        secret.as_ref().map(Secret::hash),
        redirect_uris,
    );
    client.created_at = now;
    client.post_logout_redirect_uris = post_logout;
    client.secret_for_hmac = (method == "client_secret_jwt")
        .then(|| secret.as_ref().map(|s| s.expose().to_string()))
        .flatten();
    client.auth_method = method;
    client.jwks = jwks;
    client.id_token_alg = alg;
    client.consent_required = spec.consent_required;
    client.grant_types = grant_types;
    client.refresh = refresh;
    client.backchannel_logout_uri = backchannel;
    client.backchannel_logout_session_required = spec.backchannel_logout_session_required;
    client.allowed_groups = spec
        .allowed_groups
        .iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    client.access_token_ttl = access_ttl;
    client.refresh_token_ttl = refresh_ttl;
    client.admin = spec.admin;
    client.client_scopes = client_scopes;
    client.web_origins = web_origins;
    client.grant_lifetime = grant_lifetime;
    client.require_par = spec.require_pushed_authorization_requests;
    client.require_signed_request_object = spec.require_signed_request_object;
    client.dpop_bound = spec.dpop_bound_access_tokens;
    client.jwks_uri = jwks_uri;
    client.frontchannel_logout_uri = frontchannel;
    client.frontchannel_logout_session_required = spec.frontchannel_logout_session_required;
    client.introspect_any = spec.introspect_any;
    client.initiate_login_uri = initiate_login_uri;
    Ok((client, secret))
}
