//! `/.well-known/webfinger` (RFC 7033, OpenID Connect Discovery 1.0 §2).

use actix_web::http::{header, StatusCode};
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use crate::http::params;
use crate::oidc::webfinger::{self, Refusal};
use crate::state::AppState;

/// The routes of this file.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/.well-known/webfinger", web::get().to(webfinger));
}

/// RFC 7033 §4: `resource` once, `rel` any number of times. Every answer, errors too,
/// may be read from any origin (§5: the information is public, and browser-based
/// relying parties need it).
async fn webfinger(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let answer = match params::pairs(req.query_string().as_bytes()) {
        Err(_) => Err(Refusal::BadRequest("the query has too many parameters")),
        Ok(pairs) => {
            let resources: Vec<&str> = pairs
                .iter()
                .filter(|(k, _)| k == "resource")
                .map(|(_, v)| v.as_str())
                .collect();
            let rels: Vec<&str> = pairs
                .iter()
                .filter(|(k, _)| k == "rel")
                .map(|(_, v)| v.as_str())
                .collect();
            if resources.len() > 1 {
                Err(Refusal::BadRequest("the resource parameter is repeated"))
            } else {
                webfinger::answer(&state.issuer, resources.first().copied(), &rels)
            }
        }
    };
    let (status, body) = match answer {
        Ok(jrd) => (StatusCode::OK, jrd),
        Err(Refusal::BadRequest(why)) => (
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "error_description": why}),
        ),
        Err(Refusal::NotFound) => (
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "error_description": "nothing is known about this resource"}),
        ),
    };
    let content_type = if status == StatusCode::OK {
        "application/jrd+json"
    } else {
        "application/json"
    };
    HttpResponse::build(status)
        .content_type(content_type)
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        // The answer for a resource never changes while the issuer stays the same.
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(body.to_string())
}
