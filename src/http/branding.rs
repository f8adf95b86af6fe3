//! Branding on the pages: the organisation's logo and name, the theme (accent colour
//! and extra stylesheet) and an application's own logo, each a resource of its own
//! (`/branding/logo`, `/branding/theme.css`, `/branding/client-logo`), so no page
//! inlines anything and its CSP stays as it is; and the admin page that edits them.
//!
//! The middleware gives each page request this node's copy of the branding
//! (`scope`), held for the request's task like its language; a handler that knows
//! the application a page is for names it (`for_client`).

use std::cell::RefCell;
use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, branding::Edit, Actor, AdminError, Problems};
use crate::branding::Branding;
use crate::http::guard::{self, ip_text};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{admin::multipart, errors, pages};
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

#[derive(Template)]
#[template(path = "admin_branding.html")]
struct BrandingPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    org_name: String,
    accent_color: String,
    stylesheet: String,
    has_logo: bool,
    /// What the flags give, shown as what an empty field falls back to.
    default_name: &'a str,
    default_accent: &'a str,
    logo_url: Option<String>,
    clients: Vec<ClientRow>,
    problems: Problems,
}

struct ClientRow {
    id: String,
    name: String,
    logo_url: Option<String>,
}

async fn page(state: &AppState, req: &HttpRequest, v: &Viewer, status: StatusCode, problems: Problems) -> HttpResponse {
    state.branding.forget();
    let brand = state.branding.get(&state.db, state.clock.now()).await;
    let stored = match crate::branding::stored(&state.db).await {
        Ok(s) => s,
        Err(e) => return errors::server_page(e),
    };
    let clients = match admin::clients::all(&state.ctx()).await {
        Ok(c) => c,
        Err(e) => return errors::admin_page(&e),
    };
    let clients = clients
        .into_iter()
        .map(|c| ClientRow {
            logo_url: brand.client_logo_url(&c.client_id),
            id: c.client_id,
            name: c.name,
        })
        .collect();
    let flash = url::form_urlencoded::parse(req.query_string().as_bytes())
        .any(|(k, _)| k == "done")
        .then_some(crate::i18n::t().brand_saved);
    pages::render(
        status,
        &BrandingPage {
            is_admin: true,
            flash,
            csrf: &v.csrf,
            org_name: stored.org_name.unwrap_or_default(),
            accent_color: stored.accent_color.unwrap_or_default(),
            stylesheet: stored.stylesheet.unwrap_or_default(),
            has_logo: stored.logo_type.is_some(),
            default_name: &state.settings.org_name,
            default_accent: state.branding.defaults().accent_color.as_deref().unwrap_or("#2f5bd3"),
            logo_url: brand.logo_url(),
            clients,
            problems,
        },
    )
}

/// `GET /admin/branding`.
pub async fn admin_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => page(&state, &req, &v, StatusCode::OK, Problems::new()).await,
        Err(resp) => resp,
    }
}

/// An upload form's parts, after the same checks `admin::posted` makes of a form.
async fn uploaded<'a>(
    req: &HttpRequest,
    state: &AppState,
    body: &'a Bytes,
) -> Result<(Viewer, Vec<multipart::Part<'a>>, Actor), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let viewer = portal::require_admin(req, state).await?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let parts = multipart::parse(content_type, body).ok_or_else(portal::csrf_refused)?;
    if !portal::csrf_ok(&viewer, multipart::text(&parts, "csrf")) {
        return Err(portal::csrf_refused());
    }
    let actor = Actor {
        name: viewer.user.username.clone(),
        ip: Some(ip_text(req, state)),
        user_id: Some(viewer.user.id),
    };
    Ok((viewer, parts, actor))
}

/// `POST /admin/branding`: the name, colour, stylesheet and logo.
pub async fn admin_save(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, parts, actor) = match uploaded(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let edit = Edit {
        org_name: Some(multipart::text(&parts, "org_name")),
        accent_color: Some(multipart::text(&parts, "accent_color")),
        stylesheet: Some(multipart::text(&parts, "stylesheet")),
        logo: multipart::file(&parts, "logo"),
        remove_logo: multipart::text(&parts, "remove_logo") == "on",
    };
    match admin::branding::update(&state.ctx(), &state.branding, &actor, &edit).await {
        Ok(_) => errors::redirect("/admin/branding?done=saved"),
        Err(AdminError::Invalid(p)) => page(&state, &req, &v, StatusCode::BAD_REQUEST, p).await,
        Err(e) => errors::admin_page(&e),
    }
}

/// `POST /admin/branding/client-logo`: an application's logo, set or removed.
pub async fn admin_client_logo(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, parts, actor) = match uploaded(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let client_id = multipart::text(&parts, "client_id");
    let logo = multipart::file(&parts, "logo");
    if logo.is_none() && multipart::text(&parts, "remove") != "on" {
        let p = Problems::from([(
            "client_logo".to_string(),
            crate::i18n::t().brand_choose_file.to_string(),
        )]);
        return page(&state, &req, &v, StatusCode::BAD_REQUEST, p).await;
    }
    match admin::branding::set_client_logo(&state.ctx(), &state.branding, &actor, client_id, logo).await {
        Ok(()) => errors::redirect("/admin/branding?done=saved"),
        Err(AdminError::Invalid(p)) => {
            let p = p
                .into_values()
                .map(|m| ("client_logo".to_string(), format!("{client_id}: {m}")))
                .collect();
            page(&state, &req, &v, StatusCode::BAD_REQUEST, p).await
        }
        Err(e) => errors::admin_page(&e),
    }
}

/// The routes; the upload forms take a logo and some text, so their bodies may be a
/// little over `branding::MAX_LOGO`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    let upload = web::PayloadConfig::new(crate::branding::MAX_LOGO + crate::branding::MAX_STYLESHEET + 16 * 1024);
    cfg.route("/branding/logo", web::get().to(logo))
        .route("/branding/client-logo", web::get().to(client_logo))
        .route("/branding/theme.css", web::get().to(theme))
        .service(
            web::resource("/admin/branding")
                .app_data(upload.clone())
                .route(web::get().to(admin_page))
                .route(web::post().to(admin_save)),
        )
        .service(
            web::resource("/admin/branding/client-logo")
                .app_data(upload)
                .route(web::post().to(admin_client_logo)),
        );
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
