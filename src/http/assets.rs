//! The embedded stylesheet, served as its own resource so that pages need no inline
//! style (the CSP allows `style-src 'self'` only).

use actix_web::http::header;
use actix_web::HttpResponse;

const STYLESHEET: &str = include_str!("../../static/tessera.css");

pub async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(STYLESHEET)
}
