//! Forward-auth applications in administration: the pages `/admin/apps` (list, add
//! form, details, delete) and the JSON API `/admin/api/apps` (docs/ADMIN_API.md), both
//! through `admin::apps`, so validation and the audit log are the same either way.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, apps::AppSpec, AdminError, ListQuery, Problems};
use crate::db::apps::App;
use crate::http::admin::api::run;
use crate::http::admin::{answer, done, error_page, flash, Form, Posted};
use crate::http::pages;
use crate::http::signin::portal::{self, Viewer};
use crate::i18n::t;
use crate::state::AppState;

type Data = web::Data<AppState>;
type Id = web::Path<String>;

#[derive(Template)]
#[template(path = "admin_apps.html")]
struct AppsPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    apps: Vec<App>,
    /// How many apps, for the plural.
    count: i64,
    cookie_domain: &'a str,
    forward_auth_url: String,
    auth_request_url: String,
    spec: AppSpec,
    problems: Problems,
}

async fn apps_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    spec: AppSpec,
    problems: Problems,
) -> HttpResponse {
    let apps = match admin::apps::list(&state.ctx()).await {
        Ok(all) => all,
        Err(e) => return error_page(&e),
    };
    let page = AppsPage {
        is_admin: true,
        flash: flash(req),
        csrf: &v.csrf,
        count: i64::try_from(apps.len()).unwrap_or(i64::MAX),
        apps,
        cookie_domain: state.settings.forward_auth_cookie_domain.as_deref().unwrap_or(""),
        forward_auth_url: state.url("/authz/forward-auth"),
        auth_request_url: state.url("/authz/auth-request"),
        spec,
        problems,
    };
    pages::render(status, &page)
}

pub async fn apps(req: HttpRequest, state: Data) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => apps_page(&req, &state, &v, StatusCode::OK, AppSpec::default(), Problems::new()).await,
        Err(resp) => resp,
    }
}

/// The add form as a specification: groups one a line.
fn spec_from(form: &Form) -> AppSpec {
    AppSpec {
        id: form.get("id").trim().to_string(),
        url: form.get("url").trim().to_string(),
        allowed_groups: form
            .get("allowed_groups")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        require_mfa: form.checked("require_mfa"),
        header_prefix: Some(form.get("header_prefix").trim().to_string()).filter(|s| !s.is_empty()),
    }
}

pub async fn app_create(req: HttpRequest, state: Data, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let spec = spec_from(&form);
    let result = admin::apps::create(&state.ctx(), &actor, &spec).await;
    answer(
        result,
        |a| ready(done(&format!("/admin/apps/{}", a.id), "created")),
        |problems| apps_page(&req, &state, &v, StatusCode::BAD_REQUEST, spec, problems),
    )
    .await
}

#[derive(Template)]
#[template(path = "admin_app.html")]
struct AppPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    app: App,
    created: String,
}

pub async fn app(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match admin::apps::get(&state.ctx(), &id).await {
        Ok(app) => {
            let page = AppPage {
                is_admin: true,
                flash: flash(&req),
                csrf: &v.csrf,
                created: t().datetime(app.created_at),
                app,
            };
            pages::render(StatusCode::OK, &page)
        }
        Err(e) => error_page(&e),
    }
}

pub async fn app_action(state: Data, path: web::Path<(String, String)>, post: Posted) -> HttpResponse {
    let Posted { form, actor, .. } = post;
    let (id, action) = path.into_inner();
    match action.as_str() {
        "delete" if !form.checked("confirm") => error_page(&admin::invalid("confirm", t().apps_tick_to_confirm)),
        "delete" => match admin::apps::delete(&state.ctx(), &actor, &id).await {
            Ok(()) => done("/admin/apps", "deleted"),
            Err(e) => error_page(&e),
        },
        _ => error_page(&AdminError::NotFound("action")),
    }
}

pub async fn api_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::apps::listed(&state.ctx(), &ListQuery::parse(req.query_string())?).await
    })
    .await
}

pub async fn api_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let spec: AppSpec = crate::http::admin::api::body(&bytes)?;
        Ok(admin::apps::view(&admin::apps::create(&s.ctx(), &a, &spec).await?))
    })
    .await
}

pub async fn api_get(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        Ok(admin::apps::view(&admin::apps::get(&state.ctx(), &id).await?))
    })
    .await
}

pub async fn api_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::apps::delete(&s.ctx(), &a, &id).await
    })
    .await
}

/// Registers the pages and the API routes, before the `/admin/api` scope's catch-all.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api/apps", web::get().to(api_list))
        .route("/admin/api/apps", web::post().to(api_create))
        .route("/admin/api/apps/{id}", web::get().to(api_get))
        .route("/admin/api/apps/{id}", web::delete().to(api_delete))
        .route("/admin/apps", web::get().to(apps))
        .route("/admin/apps", web::post().to(app_create))
        .route("/admin/apps/{id}", web::get().to(app))
        .route("/admin/apps/{id}/{action}", web::post().to(app_action));
}
