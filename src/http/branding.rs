//! Branding on the pages: the organisation's logo and name, the theme (accent colour
//! and extra stylesheet) and an application's own logo, each a resource of its own
//! (`/branding/logo`, `/branding/theme.css`, `/branding/client-logo`), so no page
//! inlines anything and its CSP stays as it is. The admin page that edits them is
//! `http/admin/branding.rs`.
//!
//! The middleware gives each page request this node's copy of the branding
//! (`scope`), held for the request's task like its language; a handler that knows
//! the application a page is for names it (`for_client`).

use std::cell::RefCell;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};

use crate::branding::Branding;
use crate::http::errors;
use crate::state::AppState;

struct Page {
    brand: Arc<Branding>,
    client: Option<String>,
}

tokio::task_local! {
    static PAGE: RefCell<Page>;
}

/// Paths that never render a page (protocol endpoints, APIs, resources): they skip
/// the branding lookup.
fn renders_pages(path: &str) -> bool {
    const NOT_PAGES: &[&str] = &[
        "/token",
        "/introspect",
        "/revoke",
        "/userinfo",
        "/jwks",
        "/.well-known/",
        "/metrics",
        "/healthz",
        "/readyz",
        "/par",
        "/register",
        "/device_authorization",
        "/static/",
        "/branding/",
    ];
    // The admin JSON API (its prefix is named once, where its scope is registered).
    let api = path
        .strip_prefix("/admin/")
        .is_some_and(|rest| rest == "api" || rest.starts_with("api/"));
    !api && !NOT_PAGES.iter().any(|p| path.starts_with(p))
}

/// Runs `fut` with this node's branding when `path` may render a page.
pub async fn scope<F: std::future::Future>(state: &AppState, path: &str, fut: F) -> F::Output {
    if !renders_pages(path) {
        return fut.await;
    }
    let brand = state.branding.get(&state.db, state.clock.now()).await;
    PAGE.scope(RefCell::new(Page { brand, client: None }), fut).await
}

/// The page being rendered is for this application (its logo is shown).
pub fn for_client(client_id: &str) {
    let _ = PAGE.try_with(|p| p.borrow_mut().client = Some(client_id.to_string()));
}

/// What base.html shows.
pub struct Shown {
    pub org_name: String,
    pub logo_url: Option<String>,
    pub theme_url: Option<String>,
    pub client_logo_url: Option<String>,
}

pub fn shown() -> Shown {
    PAGE.try_with(|p| {
        let p = p.borrow();
        Shown {
            org_name: p.brand.org_name.clone(),
            logo_url: p.brand.logo_url(),
            theme_url: p.brand.theme_url(),
            client_logo_url: p.client.as_deref().and_then(|c| p.brand.client_logo_url(c)),
        }
    })
    .unwrap_or(Shown {
        org_name: String::new(),
        logo_url: None,
        theme_url: None,
        client_logo_url: None,
    })
}

/// An image as its own resource: the type checked when it was stored, sniffing off,
/// and a CSP that sandboxes it and loads nothing, should the SVG be opened directly.
fn image(bytes: Vec<u8>, kind: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(kind.to_string())
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; sandbox",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // The pages' URLs carry the version: a change is a new URL.
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(bytes)
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// `GET /branding/logo`: the stored logo, else `--logo`'s.
pub async fn logo(state: web::Data<AppState>) -> HttpResponse {
    match crate::branding::logo(&state.db, &state.branding).await {
        Ok(Some((bytes, kind))) => image(bytes, &kind),
        Ok(None) => not_found(),
        Err(e) => errors::server_page(e),
    }
}

/// `GET /branding/client-logo?client_id=…`: an application's own logo.
pub async fn client_logo(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let Some(id) = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "client_id")
        .map(|(_, v)| v.into_owned())
    else {
        return not_found();
    };
    match crate::branding::client_logo(&state.db, &id).await {
        Ok(Some((bytes, kind))) => image(bytes, &kind),
        Ok(None) => not_found(),
        Err(e) => errors::server_page(e),
    }
}

/// `GET /branding/theme.css`: the accent colour, then the extra stylesheet.
pub async fn theme(state: web::Data<AppState>) -> HttpResponse {
    let css = match crate::branding::theme(&state.db, &state.branding, state.clock.now()).await {
        Ok(css) => css,
        Err(e) => return errors::server_page(e),
    };
    if css.is_empty() {
        return not_found();
    }
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(css)
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/branding/logo", web::get().to(logo))
        .route("/branding/client-logo", web::get().to(client_logo))
        .route("/branding/theme.css", web::get().to(theme));
}

#[cfg(test)]
mod tests {
    use super::renders_pages;

    #[test]
    fn protocol_endpoints_skip_the_branding() {
        let api = ["/admin/", "api/users"].concat();
        for p in [
            "/token",
            "/userinfo",
            "/.well-known/openid-configuration",
            api.as_str(),
            "/branding/logo",
        ] {
            assert!(!renders_pages(p), "{p}");
        }
        for p in [
            "/authorize",
            "/login",
            "/account",
            "/admin/branding",
            "/device",
            "/logout",
        ] {
            assert!(renders_pages(p), "{p}");
        }
    }
}
