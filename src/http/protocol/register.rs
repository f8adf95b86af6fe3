//! The registration endpoint (RFC 7591 §3) and client configuration endpoint (RFC 7592).

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::config::Registration;
use crate::http::{errors, guard, protocol::credentials::header_token};
use crate::oidc::{registration, ErrorCode, OAuthError};
use crate::state::AppState;

type Data = web::Data<AppState>;

/// Answers an error: `invalid_token` with its Bearer challenge (RFC 6750 §3), the
/// others as RFC 7591 §3.2.2 JSON.
fn refused(e: &OAuthError) -> HttpResponse {
    errors::bearer(Some(e))
}

fn json_answer(status: StatusCode, body: &serde_json::Value) -> HttpResponse {
    let mut b = HttpResponse::build(status);
    errors::no_store(&mut b);
    b.json(body)
}

/// RFC 7591 §3: the metadata is sent as `application/json`.
fn require_json(req: &HttpRequest) -> Result<(), OAuthError> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if json {
        Ok(())
    } else {
        Err(OAuthError::new(
            ErrorCode::InvalidClientMetadata,
            "the client metadata must be sent as application/json",
        ))
    }
}

/// `None` when registration is off: the endpoints then do not exist (and discovery
/// does not list them).
fn off(state: &AppState) -> Option<HttpResponse> {
    (state.settings.protocol.registration == Registration::Off).then(|| HttpResponse::NotFound().finish())
}

/// `POST /register`.
pub async fn register(req: HttpRequest, state: Data, body: Bytes) -> HttpResponse {
    if let Some(resp) = off(&state) {
        return resp;
    }
    // Each registration stores a client: limited per address like sign-ups, so an
    // open endpoint cannot be flooded.
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Signup) {
        return limited;
    }
    let cx = state.ctx();
    let result = async {
        let token = header_token(&req)?;
        require_json(&req)?;
        registration::register(&cx, token.as_deref(), &body, &guard::ip_text(&req, &state)).await
    }
    .await;
    match result {
        Ok(info) => json_answer(StatusCode::CREATED, &info),
        Err(e) => refused(&e),
    }
}

/// The registration access token of an RFC 7592 request; the refusal is `None` when
/// none was sent at all (a 401 with a bare challenge, RFC 6750 §3.1).
fn access_token(req: &HttpRequest) -> Result<String, Option<OAuthError>> {
    match header_token(req) {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(None),
        Err(e) => Err(Some(e)),
    }
}

fn config_guard(req: &HttpRequest, state: &AppState) -> Option<HttpResponse> {
    off(state).or_else(|| guard::limit_json(req, state, Bucket::Token))
}

/// `GET /register/{client_id}` (RFC 7592 §2.1).
pub async fn read(req: HttpRequest, state: Data, id: web::Path<String>) -> HttpResponse {
    if let Some(resp) = config_guard(&req, &state) {
        return resp;
    }
    let token = match access_token(&req) {
        Ok(t) => t,
        Err(e) => return errors::bearer(e.as_ref()),
    };
    match registration::read(&state.ctx(), &id, Some(&token)).await {
        Ok(info) => json_answer(StatusCode::OK, &info),
        Err(e) => refused(&e),
    }
}

/// `PUT /register/{client_id}` (RFC 7592 §2.2).
pub async fn update(req: HttpRequest, state: Data, id: web::Path<String>, body: Bytes) -> HttpResponse {
    if let Some(resp) = config_guard(&req, &state) {
        return resp;
    }
    let token = match access_token(&req) {
        Ok(t) => t,
        Err(e) => return errors::bearer(e.as_ref()),
    };
    let cx = state.ctx();
    let result = async {
        require_json(&req)?;
        registration::update(&cx, &id, Some(&token), &body, &guard::ip_text(&req, &state)).await
    }
    .await;
    match result {
        Ok(info) => json_answer(StatusCode::OK, &info),
        Err(e) => refused(&e),
    }
}

/// `DELETE /register/{client_id}` (RFC 7592 §2.3): 204 when deleted.
pub async fn delete(req: HttpRequest, state: Data, id: web::Path<String>) -> HttpResponse {
    if let Some(resp) = config_guard(&req, &state) {
        return resp;
    }
    let token = match access_token(&req) {
        Ok(t) => t,
        Err(e) => return errors::bearer(e.as_ref()),
    };
    let ip = guard::ip_text(&req, &state);
    match registration::delete(&state.ctx(), &id, Some(&token), &ip).await {
        Ok(()) => {
            let mut b = HttpResponse::NoContent();
            errors::no_store(&mut b);
            b.finish()
        }
        Err(e) => refused(&e),
    }
}

/// The routes of this file.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/register", web::post().to(register))
        .route("/register/{client_id}", web::get().to(read))
        .route("/register/{client_id}", web::put().to(update))
        .route("/register/{client_id}", web::delete().to(delete));
}
