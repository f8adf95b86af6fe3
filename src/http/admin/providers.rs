//! Upstream identity providers in administration: the pages `/admin/providers` (list,
//! add form, details with the redirect URI to register at the upstream, delete) and
//! the JSON API `/admin/api/providers` (docs/ADMIN_API.md), and a user's links to
//! providers in the API (`/admin/api/users/{id}/identities`). Pages and API go through
//! `admin::providers`, so validation and the audit log are the same either way.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, providers::ProviderSpec, AdminError, ListQuery, Problems};
use crate::db::providers::Provider;
use crate::http::admin::api::run;
use crate::http::admin::{answer, done, error_page, flash, Form, Posted};
use crate::http::pages;
use crate::http::signin::portal::{self, Viewer};
use crate::i18n::t;
use crate::state::AppState;

type Data = web::Data<AppState>;
type Id = web::Path<String>;

/// One line of the list.
struct Row {
    id: String,
    kind: String,
    name: String,
    issuer: String,
    linked: i64,
}

#[derive(Template)]
#[template(path = "admin_providers.html")]
struct ProvidersPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    providers: Vec<Row>,
    /// How many providers, for the plural.
    count: i64,
    /// The add form's values (the secret is never sent back).
    spec: ProviderSpec,
    problems: Problems,
}

async fn providers_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    spec: ProviderSpec,
    problems: Problems,
) -> HttpResponse {
    let all = match admin::providers::list_linked(&state.ctx()).await {
        Ok(all) => all,
        Err(e) => return error_page(&e),
    };
    let providers: Vec<Row> = all
        .into_iter()
        .map(|(p, linked)| Row {
            issuer: p.issuer.unwrap_or_else(|| "github.com".into()),
            id: p.id,
            kind: p.kind,
            name: p.name,
            linked,
        })
        .collect();
    let page = ProvidersPage {
        is_admin: true,
        flash: flash(req),
        csrf: &v.csrf,
        count: i64::try_from(providers.len()).unwrap_or(i64::MAX),
        providers,
        spec: ProviderSpec {
            client_secret: String::new(),
            ..spec
        },
        problems,
    };
    pages::render(status, &page)
}

pub async fn providers(req: HttpRequest, state: Data) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => {
            let spec = ProviderSpec {
                kind: "oidc".into(),
                ..ProviderSpec::default()
            };
            providers_page(&req, &state, &v, StatusCode::OK, spec, Problems::new()).await
        }
        Err(resp) => resp,
    }
}

/// The add form as a specification: empty fields are absent, mappings one a line.
fn spec_from(form: &Form) -> ProviderSpec {
    let text = |name: &str| Some(form.get(name).trim().to_string()).filter(|s| !s.is_empty());
    ProviderSpec {
        id: form.get("id").trim().to_string(),
        kind: form.get("kind").trim().to_string(),
        name: text("name"),
        issuer: text("issuer"),
        client_id: form.get("client_id").trim().to_string(),
        client_secret: form.get("client_secret").trim().to_string(),
        scope: text("scope"),
        jit: form.checked("jit"),
        link_by_email: form.checked("link_by_email"),
        group_claim: text("group_claim"),
        map_group: form
            .get("map_group")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        require_local_mfa: form.checked("require_local_mfa"),
    }
}

pub async fn provider_create(req: HttpRequest, state: Data, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let spec = spec_from(&form);
    let result = admin::providers::create(&state.ctx(), &state.upstreams, &actor, &spec).await;
    answer(
        result,
        |p| ready(done(&format!("/admin/providers/{}", p.id), "created")),
        |problems| providers_page(&req, &state, &v, StatusCode::BAD_REQUEST, spec, problems),
    )
    .await
}

#[derive(Template)]
#[template(path = "admin_provider.html")]
struct ProviderPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    p: Provider,
    issuer: String,
    redirect_uri: String,
    backchannel_uri: String,
    linked: i64,
    created: String,
}

pub async fn provider(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let found = match admin::providers::get(&state.ctx(), &id).await {
        Ok(p) => admin::providers::linked_accounts(&state.ctx(), &p.id)
            .await
            .map(|n| (p, n)),
        Err(e) => Err(e),
    };
    let (p, linked) = match found {
        Ok(found) => found,
        Err(e) => return error_page(&e),
    };
    let page = ProviderPage {
        is_admin: true,
        flash: flash(&req),
        csrf: &v.csrf,
        issuer: p.issuer.clone().unwrap_or_else(|| "github.com".into()),
        redirect_uri: crate::federation::callback_url(&state.ctx(), &p.id),
        backchannel_uri: crate::federation::backchannel_url(&state.ctx(), &p.id),
        linked,
        created: t().datetime(p.created_at),
        p,
    };
    pages::render(StatusCode::OK, &page)
}

pub async fn provider_action(state: Data, path: web::Path<(String, String)>, post: Posted) -> HttpResponse {
    let Posted { form, actor, .. } = post;
    let (id, action) = path.into_inner();
    match action.as_str() {
        "delete" if !form.checked("confirm") => error_page(&admin::invalid("confirm", t().apps_tick_to_confirm)),
        "delete" => match admin::providers::delete(&state.ctx(), &state.upstreams, &actor, &id).await {
            Ok(()) => done("/admin/providers", "deleted"),
            Err(e) => error_page(&e),
        },
        "secret" => {
            match admin::providers::replace_secret(&state.ctx(), &actor, &id, form.get("client_secret")).await {
                Ok(()) => done(&format!("/admin/providers/{id}"), "saved"),
                Err(e) => error_page(&e),
            }
        }
        _ => error_page(&AdminError::NotFound("action")),
    }
}

pub async fn api_list(req: HttpRequest, state: Data) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::providers::listed(&state.ctx(), &ListQuery::parse(req.query_string())?).await
    })
    .await
}

pub async fn api_create(req: HttpRequest, state: Data, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::CREATED, |a| async move {
        let spec: ProviderSpec = crate::http::admin::api::body(&bytes)?;
        let p = admin::providers::create(&s.ctx(), &s.upstreams, &a, &spec).await?;
        admin::providers::detail(&s.ctx(), &p).await
    })
    .await
}

pub async fn api_get(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        admin::providers::detail(&state.ctx(), &admin::providers::get(&state.ctx(), &id).await?).await
    })
    .await
}

pub async fn api_delete(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::providers::delete(&s.ctx(), &s.upstreams, &a, &id).await
    })
    .await
}

/// The body of `PUT /admin/api/providers/{id}/secret`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSecret {
    client_secret: String,
}

pub async fn api_secret(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        let body: NewSecret = crate::http::admin::api::body(&bytes)?;
        admin::providers::replace_secret(&s.ctx(), &a, &id, &body.client_secret).await
    })
    .await
}

/// A user id from the path; one that is not a number names no user.
fn user_id(raw: &str) -> Result<i64, AdminError> {
    raw.parse().map_err(|_| AdminError::NotFound("user"))
}

/// `GET /admin/api/users/{id}/identities`: the user's links to upstream providers.
pub async fn api_user_identities(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        let items = admin::providers::links_of(&state.ctx(), user_id(&id)?).await?;
        Ok(serde_json::json!({ "items": items }))
    })
    .await
}

/// `DELETE /admin/api/users/{id}/identities/{provider}`: removes one link.
pub async fn api_user_unlink(req: HttpRequest, state: Data, path: web::Path<(String, String)>) -> HttpResponse {
    let s = state.get_ref();
    let (raw, provider) = path.into_inner();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::providers::unlink(&s.ctx(), &a, user_id(&raw)?, &provider).await
    })
    .await
}

/// Registers the pages and the API routes. The API routes go in before the
/// `/admin/api` scope, whose catch-all would answer them otherwise.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api/providers", web::get().to(api_list))
        .route("/admin/api/providers", web::post().to(api_create))
        .route("/admin/api/providers/{id}", web::get().to(api_get))
        .route("/admin/api/providers/{id}", web::delete().to(api_delete))
        .route("/admin/api/providers/{id}/secret", web::put().to(api_secret))
        .route("/admin/api/users/{id}/identities", web::get().to(api_user_identities))
        .route(
            "/admin/api/users/{id}/identities/{provider}",
            web::delete().to(api_user_unlink),
        )
        .route("/admin/providers", web::get().to(providers))
        .route("/admin/providers", web::post().to(provider_create))
        .route("/admin/providers/{id}", web::get().to(provider))
        .route("/admin/providers/{id}/{action}", web::post().to(provider_action));
}
