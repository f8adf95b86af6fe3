//! App presets in administration: the page "Add an application"
//! (`/admin/clients/new-app`: pick a preset, give the app's URL, get the client and
//! the configuration to paste, shown once since it holds the secret) and the JSON API
//! `GET /admin/api/presets`, `POST /admin/api/clients/from-preset` (docs/ADMIN_API.md).

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::presets::{self, Preset, PresetRequest, Registered, PRESETS};
use crate::admin::Problems;
use crate::http::admin::api::{body, run};
use crate::http::admin::{answer, Form, Posted};
use crate::http::pages;
use crate::http::signin::portal::{self, Viewer};
use crate::state::AppState;

type Data = web::Data<AppState>;

/// The outcome shown once.
struct Done {
    app: &'static str,
    client_id: String,
    secret: Option<String>,
    redirect_uris: Vec<String>,
    created_groups: Vec<String>,
    paste_into: &'static str,
    docs_url: &'static str,
    snippet: String,
}

impl From<Registered> for Done {
    fn from(r: Registered) -> Self {
        Self {
            app: r.preset.app,
            client_id: r.client.client_id.clone(),
            secret: r.secret.as_ref().map(|s| s.expose().to_string()),
            redirect_uris: r.client.redirect_uris.clone(),
            created_groups: r.created_groups.clone(),
            paste_into: r.preset.paste_into,
            docs_url: r.preset.docs_url,
            snippet: r.snippet,
        }
    }
}

#[derive(Template)]
#[template(path = "admin_client_new_app.html")]
struct NewAppPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    presets: &'static [Preset],
    req: PresetRequest,
    problems: Problems,
    /// Problems with no field of their own on this form (the client's own checks).
    others: Vec<String>,
    done: Option<Done>,
}

const FIELDS: &[&str] = &["preset", "app_url", "client_id", "app_key"];

fn page(v: &Viewer, status: StatusCode, req: PresetRequest, problems: Problems, done: Option<Done>) -> HttpResponse {
    let others = problems
        .iter()
        .filter(|(k, _)| !FIELDS.contains(&k.as_str()))
        .map(|(k, m)| format!("{k}: {m}"))
        .collect();
    let page = NewAppPage {
        is_admin: true,
        flash: None,
        csrf: &v.csrf,
        presets: PRESETS,
        req,
        problems,
        others,
        done,
    };
    pages::render(status, &page)
}

pub async fn new_app(req: HttpRequest, state: Data) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => page(&v, StatusCode::OK, PresetRequest::default(), Problems::new(), None),
        Err(resp) => resp,
    }
}

fn request_from(form: &Form) -> PresetRequest {
    let text = |name: &str| Some(form.get(name).trim().to_string()).filter(|s| !s.is_empty());
    PresetRequest {
        preset: form.get("preset").trim().to_string(),
        client_id: form.get("client_id").trim().to_string(),
        app_url: form.get("app_url").trim().to_string(),
        app_key: text("app_key"),
        name: text("name"),
    }
}

pub async fn new_app_create(state: Data, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let asked = request_from(&form);
    let result = presets::register(&state.ctx(), &actor, &asked, |_| {}).await;
    let shown = asked.clone();
    answer(
        result,
        // The secret exists only in this response (no-store, like every page).
        |r| ready(page(&v, StatusCode::CREATED, shown, Problems::new(), Some(r.into()))),
        |problems| ready(page(&v, StatusCode::BAD_REQUEST, asked, problems, None)),
    )
    .await
}

/// `GET /admin/api/presets`.
pub async fn api_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        let items: Vec<_> = PRESETS.iter().map(presets::summary).collect();
        Ok(serde_json::json!({ "items": items }))
    })
    .await
}

/// `POST /admin/api/clients/from-preset`: `{client_id, preset, app_url[, app_key, name]}`.
pub async fn api_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let asked: PresetRequest = body(&bytes)?;
        Ok(presets::register(&s.ctx(), &a, &asked, |_| {}).await?.view())
    })
    .await
}

/// Before the clients' `/admin/clients/{id}` and the `/admin/api` scope's catch-all,
/// which would answer these paths otherwise.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api/presets", web::get().to(api_list))
        .route("/admin/api/clients/from-preset", web::post().to(api_create))
        .route("/admin/clients/new-app", web::get().to(new_app))
        .route("/admin/clients/new-app", web::post().to(new_app_create));
}
