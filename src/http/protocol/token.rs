//! Token, introspection and revocation endpoints: form in, client authenticated,
//! one protocol call, JSON out with `no-store`.

use std::collections::HashMap;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::http::protocol::credentials::authenticated;
use crate::http::{errors, guard};
use crate::oidc::{introspect as inspect, token as grants, OAuthError};
use crate::state::AppState;

fn ok_json(value: &impl serde::Serialize) -> HttpResponse {
    let mut b = HttpResponse::Ok();
    errors::no_store(&mut b);
    b.json(value)
}

pub async fn token(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Token) {
        return limited;
    }
    let dpop = crate::http::protocol::credentials::dpop_header(&req);
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        // The login form's limits, before any password is hashed.
        if let Some(limited) = password_limits(&req, &state, &form) {
            return Err(Refused::Limited(limited));
        }
        let proof = dpop.as_ref().map_err(Clone::clone)?.as_deref();
        let resp = grants::grant(&cx, &client, &form, &crate::http::guard::ip_text(&req, &state), proof).await?;
        state
            .metrics
            .token_issued(form.get("grant_type").map(String::as_str).unwrap_or_default());
        Ok(resp)
    }
    .await;
    let answer = match result {
        Ok(resp) => ok_json(&resp),
        Err(Refused::Protocol(e)) => errors::oauth_json(&e),
        Err(Refused::Limited(limited)) => limited,
    };
    // RFC 9449 §8: whoever sends proofs learns the nonce for the next one, with every
    // answer (the `use_dpop_nonce` error above all).
    match dpop {
        Ok(Some(_)) => errors::with_dpop_nonce(answer, crate::oidc::dpop::nonce(&cx).as_deref()),
        _ => answer,
    }
}

pub async fn introspect(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Introspect) {
        return limited;
    }
    let wants_jwt = accepts(&req, INTROSPECTION_JWT);
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        let answer = inspect::introspect(&cx, &client, form.get("token").map(String::as_str)).await?;
        Ok(match wants_jwt {
            true => Introspected::Jwt(inspect::as_jwt(&cx, &client, answer)?),
            false => Introspected::Json(answer),
        })
    }
    .await;
    match result {
        Ok(Introspected::Json(v)) => ok_json(&v),
        Ok(Introspected::Jwt(jwt)) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.content_type(INTROSPECTION_JWT).body(jwt)
        }
        Err(e) => errors::oauth_json(&e),
    }
}

pub async fn revoke(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Revoke) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        let token = form
            .get("token")
            .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
        let ip = crate::http::guard::ip_text(&req, &state);
        inspect::revoke(
            &cx,
            &client,
            token,
            form.get("token_type_hint").map(String::as_str),
            &ip,
        )
        .await
    }
    .await;
    match result {
        Ok(()) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.finish()
        }
        Err(e) => errors::oauth_json(&e),
    }
}

/// RFC 6749 §4.3.2: the password grant must be protected against brute force. It gets
/// the login form's limits, per address and per account name, before any password is
/// hashed (and before the client is even authenticated, as the form does too).
/// Why a token request got no tokens: a protocol error, or a rate limit's answer.
enum Refused {
    Protocol(OAuthError),
    Limited(HttpResponse),
}

impl From<OAuthError> for Refused {
    fn from(e: OAuthError) -> Self {
        Refused::Protocol(e)
    }
}

fn password_limits(req: &HttpRequest, state: &AppState, form: &HashMap<String, String>) -> Option<HttpResponse> {
    if form.get("grant_type").map(String::as_str) != Some("password") {
        return None;
    }
    guard::limit_json(req, state, Bucket::Login).or_else(|| {
        let username = form.get("username").map(String::as_str).unwrap_or_default();
        guard::limit_account_json(state, username)
    })
}

/// RFC 9701 §4: the media type a caller sends in `Accept` to get a signed answer.
const INTROSPECTION_JWT: &str = "application/token-introspection+jwt";

enum Introspected {
    Json(serde_json::Value),
    Jwt(String),
}

/// Whether `Accept` lists `media` (parameters ignored, case-insensitive; `q=0` means
/// "not this one", RFC 9110 §12.5.1). Wildcards do not count: the JWT answer is only
/// for callers that ask for it by name, and everyone else keeps plain JSON.
fn accepts(req: &HttpRequest, media: &str) -> bool {
    req.headers()
        .get_all(actix_web::http::header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let named = parts.next().is_some_and(|t| t.eq_ignore_ascii_case(media));
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .is_some_and(|q| q.parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            named && !refused
        })
}
