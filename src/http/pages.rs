//! HTML pages: one view struct per askama template, and the headers every page gets.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;
use askama::Template;

#[derive(Template)]
#[template(path = "login.html")]
pub struct LoginPage<'a> {
    pub client_name: &'a str,
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub username: &'a str,
    pub error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
    pub hint: &'a str,
}

/// No scripts, no framing, no referrer: the login page is the front door.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'";

/// A response builder for an HTML page with the security headers set.
pub fn html(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut b = HttpResponse::build(status);
    b.content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    b
}

/// Renders a template into a finished response; a rendering failure (a bug, not
/// input) is logged and answered with a plain page.
pub fn render(status: StatusCode, page: &impl Template) -> HttpResponse {
    render_with(html(status), page)
}

pub fn render_with(mut builder: actix_web::HttpResponseBuilder, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => builder.body(body),
        Err(e) => {
            tracing::error!(error = %e, "template rendering failed");
            html(StatusCode::INTERNAL_SERVER_ERROR).body("Internal error")
        }
    }
}

pub fn error_page(status: StatusCode, title: &str, message: &str, hint: &str) -> HttpResponse {
    render(status, &ErrorPage { title, message, hint })
}
