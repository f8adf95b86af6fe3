//! Discovery, JWKS, health and the embedded stylesheet.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::oidc::discovery;
use crate::state::AppState;

pub async fn discovery(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(discovery::document(&state))
}

pub async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    let keys = state.keys.current();
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(keys.jwks_json().to_string())
}

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ "status": "ok" }))
}

const STYLESHEET: &str = include_str!("../../static/tessera.css");

pub async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(STYLESHEET)
}
