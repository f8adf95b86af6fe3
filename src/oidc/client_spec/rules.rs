//! The rules `build` checks a specification by, one group of settings at a time, each
//! writing what it checked into the client being built. They run in a fixed order:
//! a later rule may look at an earlier one's result or problems.

use super::values::{https_url, parse_client_scopes, parse_origins, parse_uris, ttl, web_url};
use super::{ClientSpec, ALGS, AUTH_METHODS, GRANT_TYPES, MAX_CLIENT_ACCESS_TTL};
use crate::db::clients::{Client, RefreshPolicy, DEFAULT_ALG, DEFAULT_GRANT_TYPES};
use crate::domain::Problems;

/// How the client authenticates at the token endpoint: the one named, or the one its
/// kind and keys imply.
pub(super) fn auth_method(spec: &ClientSpec, p: &mut Problems) -> String {
    match (&spec.token_endpoint_auth_method, spec.public) {
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
    }
}

/// The grant types and redirect URIs, and the settings only some grants or methods
/// allow (admin, introspecting every token).
pub(super) fn grants(spec: &ClientSpec, c: &mut Client, p: &mut Problems) {
    c.grant_types = if spec.grant_types.is_empty() {
        DEFAULT_GRANT_TYPES.iter().map(|g| g.to_string()).collect()
    } else {
        spec.grant_types.clone()
    };
    if let Some(g) = c.grant_types.iter().find(|g| !GRANT_TYPES.contains(&g.as_str())) {
        p.insert(
            "grant_types".into(),
            format!("`{g}` is not one of {}", GRANT_TYPES.join(", ")),
        );
    }
    c.redirect_uris = parse_uris("redirect_uris", &spec.redirect_uris, p);
    if c.redirect_uris.is_empty() && c.allows_grant("authorization_code") && !p.contains_key("redirect_uris") {
        p.insert(
            "redirect_uris".into(),
            "the authorization_code grant needs at least one redirect URI".into(),
        );
    }
    let public = c.auth_method == "none";
    if public && c.allows_grant("client_credentials") {
        p.insert(
            "grant_types".into(),
            "a public client cannot use client_credentials".into(),
        );
    }
    // RFC 6749 §4.3 has no step where a person could approve the client: a client that
    // must ask for consent cannot take passwords directly.
    if spec.consent_required && c.allows_grant("password") {
        p.insert(
            "grant_types".into(),
            "the password grant cannot ask for consent; untick consent or the password grant".into(),
        );
    }
    if spec.admin && (public || !c.allows_grant("client_credentials")) {
        p.insert(
            "admin".into(),
            "an admin client is confidential and uses client_credentials".into(),
        );
    }
    // RFC 7662 §2.1: the caller authenticates, which a public client cannot.
    if spec.introspect_any && public {
        p.insert(
            "introspect_any".into(),
            "only a confidential client can introspect".into(),
        );
    }
}

/// The client's public keys (given or by reference) and the algorithm its ID tokens
/// are signed with.
pub(super) fn keys(spec: &ClientSpec, c: &mut Client, p: &mut Problems) {
    c.jwks = match &spec.jwks {
        Some(v) if v["keys"].is_array() => Some(v.to_string()),
        Some(_) => {
            p.insert("jwks".into(), "a JWK Set: {\"keys\": [...]}".into());
            None
        }
        None => None,
    };
    c.jwks_uri = given(&spec.jwks_uri).and_then(|u| web_url("jwks_uri", u, p));
    // RFC 7591 §2: `jwks` and `jwks_uri` MUST NOT both be present.
    if spec.jwks.is_some() && c.jwks_uri.is_some() {
        p.insert(
            "jwks_uri".into(),
            "give either jwks or jwks_uri, not both (RFC 7591 §2)".into(),
        );
    }
    if c.auth_method == "private_key_jwt" && spec.jwks.is_none() && c.jwks_uri.is_none() && !p.contains_key("jwks_uri")
    {
        p.insert(
            "jwks".into(),
            "private_key_jwt needs the client's public keys (jwks or jwks_uri)".into(),
        );
    }
    c.id_token_alg = spec
        .id_token_signed_response_alg
        .clone()
        .unwrap_or_else(|| DEFAULT_ALG.into());
    if !ALGS.contains(&c.id_token_alg.as_str()) {
        p.insert(
            "id_token_signed_response_alg".into(),
            format!("one of {}", ALGS.join(", ")),
        );
    }
}

/// When refresh tokens are issued.
pub(super) fn refresh(spec: &ClientSpec, c: &mut Client, p: &mut Problems) {
    c.refresh = match spec.refresh_tokens.as_deref().unwrap_or("always") {
        "always" => RefreshPolicy::Always,
        "offline-access" | "offline_access" => RefreshPolicy::OfflineAccess,
        _ => {
            p.insert("refresh_tokens".into(), "`always` or `offline-access`".into());
            RefreshPolicy::Always
        }
    };
}

/// Where the client is told of, or sends the user after, a logout; and where a third
/// party starts its sign-in.
pub(super) fn logout(spec: &ClientSpec, c: &mut Client, p: &mut Problems) {
    c.post_logout_redirect_uris = parse_uris("post_logout_redirect_uris", &spec.post_logout_redirect_uris, p);
    c.backchannel_logout_uri = parse_uris("backchannel_logout_uri", spec.backchannel_logout_uri.as_slice(), p).pop();
    c.frontchannel_logout_uri =
        given(&spec.frontchannel_logout_uri).and_then(|u| web_url("frontchannel_logout_uri", u, p));
    if spec.frontchannel_logout_session_required
        && c.frontchannel_logout_uri.is_none()
        && !p.contains_key("frontchannel_logout_uri")
    {
        p.insert(
            "frontchannel_logout_session_required".into(),
            "needs a frontchannel_logout_uri".into(),
        );
    }
    c.initiate_login_uri = given(&spec.initiate_login_uri).and_then(|u| https_url("initiate_login_uri", u, p));
}

/// The display name, when one is given.
pub(super) fn name<'s>(spec: &'s ClientSpec, p: &mut Problems) -> Option<&'s str> {
    let name = given(&spec.name);
    if name.is_some_and(|n| n.chars().count() > 100) {
        p.insert("name".into(), "at most 100 characters".into());
    }
    name
}

/// Token lifetimes, browser origins and the scopes the client may get for itself.
pub(super) fn tokens(spec: &ClientSpec, c: &mut Client, p: &mut Problems) {
    c.access_token_ttl = ttl("access_token_ttl", spec.access_token_ttl, 60, MAX_CLIENT_ACCESS_TTL, p);
    c.refresh_token_ttl = ttl("refresh_token_ttl", spec.refresh_token_ttl, 300, 366 * 86_400, p);
    c.grant_lifetime = ttl("grant_lifetime", spec.grant_lifetime, 300, 3660 * 86_400, p);
    c.web_origins = parse_origins(&spec.web_origins, p);
    c.client_scopes = parse_client_scopes(&spec.client_scopes, p);
    if !c.client_scopes.is_empty() && !c.allows_grant("client_credentials") {
        p.insert(
            "client_scopes".into(),
            "scopes for the client itself need the client_credentials grant".into(),
        );
    }
}

/// A text setting, trimmed; `None` when left out or empty.
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|u| !u.is_empty())
}
