//! `/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4) and `/jwks`
//! (RFC 7517): what relying parties fetch to configure themselves and verify tokens.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::oidc::discovery;
use crate::state::AppState;

pub async fn discovery(state: web::Data<AppState>) -> HttpResponse {
    let cx = state.ctx();
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(discovery::document(&cx))
}

pub async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    let keys = state.keys.current();
    // Cached no longer than a key reload interval: a rotated key signs three
    // intervals after it is stored (`Settings::key_publish_delay`), by when every
    // cached copy lists it.
    let cache = format!("public, max-age={}", state.settings.key_reload_every);
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, cache))
        .body(keys.jwks_json().to_string())
}
