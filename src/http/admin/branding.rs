//! `/admin/branding`: the page that edits the organisation's name, accent colour,
//! stylesheet and logo, and each application's logo (uploads as multipart forms).

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, branding::Edit, Actor, AdminError, Problems};
use crate::http::guard::{self, ip_text};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{admin::multipart, errors, pages};
use crate::state::AppState;

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
    cfg.service(
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
