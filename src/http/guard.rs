//! Request guards shared by handlers: the client's address (through trusted proxies),
//! rate limits answered with 429 and `Retry-After`, and the same-origin check on the
//! forms people submit.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::http::{header, Method, StatusCode};
use actix_web::{HttpMessage, HttpRequest, HttpResponse};

use crate::auth::client_ip;
use crate::auth::limits::{retry_after_secs, Bucket};
use crate::http::{errors, pages};
use crate::oidc::{ErrorCode, OAuthError};
use crate::state::AppState;

pub fn client_ip(req: &HttpRequest, state: &AppState) -> IpAddr {
    let peer = req
        .peer_addr()
        .map(|a| a.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let chosen = state.settings.forwarded_header;
    let lines = req.headers().get_all(chosen.name()).filter_map(|v| v.to_str().ok());
    client_ip::client_ip(peer, chosen, lines, &state.settings.trusted_proxies)
}

/// The requester's address as text, for the audit log and the session list.
pub fn ip_text(req: &HttpRequest, state: &AppState) -> String {
    client_ip(req, state).to_string()
}

/// The browser's own description, shortened, for the session list.
pub fn user_agent(req: &HttpRequest) -> Option<String> {
    let ua = req.headers().get(header::USER_AGENT)?.to_str().ok()?;
    Some(ua.chars().take(200).collect())
}

fn too_many_json(wait: Duration) -> HttpResponse {
    let e = OAuthError::new(ErrorCode::TemporarilyUnavailable, "too many requests; retry later");
    let mut resp = errors::oauth_json(&e);
    *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    resp.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after_secs(wait)));
    resp
}

pub fn too_many_page(wait: Duration) -> HttpResponse {
    let mut resp = pages::error_page(
        StatusCode::TOO_MANY_REQUESTS,
        crate::i18n::t().err_too_many_title,
        crate::i18n::t().err_too_many,
        crate::i18n::t().err_too_many_hint,
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after_secs(wait)));
    resp
}

/// A 429 for a protocol endpoint when the client's address is over its limit.
pub fn limit_json(req: &HttpRequest, state: &AppState, bucket: Bucket) -> Option<HttpResponse> {
    if !state.limits.enabled() {
        return None;
    }
    let wait = state.limits.check_ip(bucket, client_ip(req, state)).err()?;
    state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
    Some(too_many_json(wait))
}

/// A 429 page for an endpoint people use.
pub fn limit_page(req: &HttpRequest, state: &AppState, bucket: Bucket) -> Option<HttpResponse> {
    if !state.limits.enabled() {
        return None;
    }
    let wait = state.limits.check_ip(bucket, client_ip(req, state)).err()?;
    state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
    Some(too_many_page(wait))
}

/// A 429 page when an account name has had too many sign-in attempts.
pub fn limit_account(state: &AppState, username: &str) -> Option<HttpResponse> {
    let wait = state.limits.check_account(username).err()?;
    state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
    Some(too_many_page(wait))
}

/// A 429 for the password grant (RFC 6749 §4.3) when an account name has had too many
/// sign-in attempts: the login form's per-account limit, answered as JSON.
pub fn limit_account_json(state: &AppState, username: &str) -> Option<HttpResponse> {
    let wait = state.limits.check_account(username).err()?;
    state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
    Some(too_many_json(wait))
}

/// A 429 page when an account has had too many second-factor attempts.
pub fn limit_second_factor(state: &AppState, user_id: i64) -> Option<HttpResponse> {
    let wait = state.limits.check_second_factor(user_id).err()?;
    state.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
    Some(too_many_page(wait))
}

/// Forms are only accepted from our own pages: a present `Origin` must be the
/// issuer's (a missing one is allowed; older browsers omit it, and the CSRF token
/// still stands).
pub fn cross_origin(req: &HttpRequest, state: &AppState) -> Option<HttpResponse> {
    let origin = req.headers().get(header::ORIGIN)?.to_str().unwrap_or("invalid");
    let ours = url::Url::parse(&state.issuer)
        .ok()
        .map(|u| u.origin().ascii_serialization());
    if ours.as_deref() == Some(origin) {
        return None;
    }
    Some(pages::error_page(
        StatusCode::FORBIDDEN,
        crate::i18n::t().err_refused_title,
        crate::i18n::t().err_cross_site,
        crate::i18n::t().err_cross_site_hint,
    ))
}

/// The client a request is about, for the request log line.
#[derive(Clone)]
pub struct ClientTag(pub String);

pub fn tag_client(req: &HttpRequest, client_id: &str) {
    let id: String = client_id.chars().take(128).collect();
    req.extensions_mut().insert(ClientTag(id));
}

/// Tessera serves no WebSocket or other upgraded protocol. An `Upgrade` request would
/// otherwise have its body read as the upgraded stream, holding the connection until
/// the client timeout: it is refused before routing, and the connection closed.
pub fn upgrade_refused(req: &HttpRequest) -> Option<HttpResponse> {
    let upgrade = req.headers().get(header::UPGRADE)?;
    // A GET asking for h2c has no body to hold the connection with: it is served as
    // HTTP/1.1. A WebSocket, or any upgrade of a request that may carry a body, is not.
    let websocket = upgrade
        .to_str()
        .map(|v| v.to_ascii_lowercase().contains("websocket"))
        .unwrap_or(true);
    let bodiless = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if bodiless && !websocket {
        return None;
    }
    let e = OAuthError::invalid_request("protocol upgrades are not supported");
    let mut resp = errors::oauth_json(&e);
    resp.head_mut()
        .set_connection_type(actix_web::http::ConnectionType::Close);
    Some(resp)
}
