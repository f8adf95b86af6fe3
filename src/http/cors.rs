//! Cross-origin access for browser apps (the Fetch standard's CORS protocol): any
//! origin may read discovery and the JWKS; the token, userinfo, revocation and device
//! endpoints answer only the origins a client registered (those of its redirect URIs
//! and its web origins). Nothing here sends credentials, and the introspection and
//! admin endpoints get no CORS headers at all.

use actix_web::dev::ServiceResponse;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};

use crate::http::guard::ClientTag;
use crate::state::AppState;

/// Who may read a route's answers from another origin.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Audience {
    /// Public metadata: `*`.
    Anyone,
    /// A registered client's origins.
    Clients,
}

fn audience(path: &str) -> Option<(Audience, &'static str)> {
    match path {
        "/.well-known/openid-configuration" | "/jwks" => Some((Audience::Anyone, "GET, OPTIONS")),
        "/userinfo" => Some((Audience::Clients, "GET, POST, OPTIONS")),
        "/token" | "/revoke" | "/device_authorization" => Some((Audience::Clients, "POST, OPTIONS")),
        _ => None,
    }
}

/// The headers a browser app sends to these endpoints besides the simple ones.
const ALLOW_HEADERS: &str = "Authorization, Content-Type, DPoP";
/// Headers the app may read from an answer (the bearer error lives in the first; a
/// browser app needs the DPoP nonce of the last, RFC 9449 §8.1).
const EXPOSE_HEADERS: &str = "WWW-Authenticate, Retry-After, DPoP-Nonce";

fn origin(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| !o.is_empty() && *o != "null" && o.len() <= 512)
        .map(str::to_string)
}

/// Whether `origin` may read this answer: the tagged client's origins when the request
/// named a client, else any registered client's (an error before the client is known
/// must still be readable by the app that caused it).
async fn allowed(state: &AppState, req: &HttpRequest, origin: &str) -> bool {
    let now = state.clock.now();
    let tagged = req.extensions().get::<ClientTag>().map(|t| t.0.clone());
    let result = match tagged {
        Some(id) => state
            .clients
            .get(&state.db, &id, now)
            .await
            .map(|c| c.is_some_and(|c| crate::oidc::cors::client_origins(&c).any(|o| o == origin))),
        None => state.clients.origin_registered(&state.db, origin, now).await,
    };
    result.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read client origins");
        false
    })
}

/// Adds the CORS headers an answer needs, after its handler ran.
pub async fn decorate(state: &AppState, res: &mut ServiceResponse) {
    let Some((who, _)) = audience(res.request().path()) else {
        return;
    };
    if res.request().method() == Method::OPTIONS {
        return;
    }
    let headers = res.headers_mut();
    if who == Audience::Anyone {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        return;
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    let Some(origin) = origin(res.request()) else {
        return;
    };
    if !allowed(state, res.request(), &origin).await {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(&origin) {
        let headers = res.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
}

/// `OPTIONS` (a preflight): the methods and headers a permitted origin may use; an
/// origin no client registered is refused.
pub async fn preflight(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let Some((who, methods)) = audience(req.path()) else {
        return HttpResponse::NotFound().finish();
    };
    let origin = origin(&req);
    let permitted = match (who, &origin) {
        (Audience::Anyone, _) => Some("*".to_string()),
        (Audience::Clients, Some(o)) => state
            .clients
            .origin_registered(&state.db, o, state.clock.now())
            .await
            .unwrap_or(false)
            .then(|| o.clone()),
        (Audience::Clients, None) => None,
    };
    let Some(allow) = permitted.and_then(|o| HeaderValue::from_str(&o).ok()) else {
        let mut b = HttpResponse::build(StatusCode::FORBIDDEN);
        b.insert_header((header::VARY, "Origin"));
        return b.finish();
    };
    let mut b = HttpResponse::NoContent();
    b.insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, allow))
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, methods))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOW_HEADERS))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"))
        .insert_header((header::VARY, "Origin"));
    b.finish()
}

/// The routes that answer preflights.
pub fn routes(cfg: &mut web::ServiceConfig) {
    for path in [
        "/.well-known/openid-configuration",
        "/jwks",
        "/token",
        "/userinfo",
        "/revoke",
        "/device_authorization",
    ] {
        cfg.route(path, web::method(Method::OPTIONS).to(preflight));
    }
}
