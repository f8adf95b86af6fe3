//! A client's claim mapping, token preview and test sign-in in administration: the API
//! `/admin/api/clients/{id}/claims` and `/admin/api/clients/{id}/preview`
//! (docs/ADMIN_API.md), the rule forms of the client page, the preview page
//! `/admin/clients/{id}/preview` and the "Test sign-in" button. All go through
//! `admin::claims`, so validation and the audit log are the same either way.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde_json::Value;

use crate::admin::{
    self,
    claims::{GroupValue, RuleSpec},
    AdminError,
};
use crate::http::admin::api::{body, run};
use crate::http::admin::{done, error_page, Form, Posted};
use crate::http::pages;
use crate::http::signin::portal;
use crate::i18n::t;
use crate::oidc::self_test::TestRun;
use crate::state::AppState;

type Data = web::Data<AppState>;
type Id = web::Path<String>;
type IdClaim = web::Path<(String, String)>;

/// The body of `PUT /admin/api/clients/{id}/claims`: the whole table, as `GET` gives it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    items: Vec<RuleSpec>,
}

pub async fn api_list(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    run(&req, &state, StatusCode::OK, |_| async {
        Ok(admin::claims::listed(&admin::claims::list(&state.ctx(), &id).await?))
    })
    .await
}

pub async fn api_replace(req: HttpRequest, state: Data, id: Id, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    run(&req, s, StatusCode::OK, |a| async move {
        let table: Table = body(&bytes)?;
        Ok(admin::claims::listed(
            &admin::claims::replace(&s.ctx(), &s.clients, &a, &id, &table.items).await?,
        ))
    })
    .await
}

pub async fn api_put(req: HttpRequest, state: Data, path: IdClaim, bytes: Bytes) -> HttpResponse {
    let s = state.get_ref();
    let (id, claim) = path.into_inner();
    run(&req, s, StatusCode::OK, |a| async move {
        let mut spec: RuleSpec = body(&bytes)?;
        if !spec.claim.is_empty() && spec.claim != claim {
            return Err(admin::invalid("claim", "the body names another claim than the path"));
        }
        spec.claim = claim;
        Ok(admin::claims::listed(
            &admin::claims::put(&s.ctx(), &s.clients, &a, &id, &spec).await?,
        ))
    })
    .await
}

pub async fn api_delete(req: HttpRequest, state: Data, path: IdClaim) -> HttpResponse {
    let s = state.get_ref();
    let (id, claim) = path.into_inner();
    run(&req, s, StatusCode::NO_CONTENT, |a| async move {
        admin::claims::delete(&s.ctx(), &s.clients, &a, &id, &claim).await
    })
    .await
}

/// `user` and `scope` of a preview's query.
fn preview_query(req: &HttpRequest) -> (Option<String>, Option<String>) {
    let mut user = None;
    let mut scope = None;
    for (k, v) in url::form_urlencoded::parse(req.query_string().as_bytes()) {
        match k.as_ref() {
            "user" => user = Some(v.trim().to_string()).filter(|v| !v.is_empty()),
            "scope" => scope = Some(v.trim().to_string()).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    (user, scope)
}

pub async fn api_preview(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    let (user, scope) = preview_query(&req);
    run(&req, &state, StatusCode::OK, |_| async {
        let user = user.ok_or_else(|| admin::invalid("user", "the username to preview, as ?user=NAME"))?;
        admin::claims::preview(&state.ctx(), &id, &user, scope.as_deref()).await
    })
    .await
}

/// The rule form of the client page as a specification (`values`: one GROUP=VALUE a line).
fn rule_from(form: &Form) -> Result<RuleSpec, AdminError> {
    let mut values = Vec::new();
    for line in form.get("values").lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.split_once('=') {
            Some((g, v)) if !g.trim().is_empty() && !v.trim().is_empty() => values.push(GroupValue {
                group: g.trim().to_string(),
                value: v.trim().to_string(),
            }),
            _ => {
                return Err(admin::invalid(
                    "values",
                    t().fill(t().apps_claims_not_group_value, "line", line),
                ))
            }
        }
    }
    let text = |name: &str| Some(form.get(name).trim().to_string()).filter(|s| !s.is_empty());
    Ok(RuleSpec {
        claim: form.get("claim").trim().to_string(),
        source: form.get("source").trim().to_string(),
        scope: text("scope"),
        targets: form.all("in"),
        values,
        default: text("default"),
    })
}

pub async fn rule_add(state: Data, id: Id, post: Posted) -> HttpResponse {
    let Posted { form, actor, .. } = post;
    let result = match rule_from(&form) {
        Ok(spec) => admin::claims::put(&state.ctx(), &state.clients, &actor, &id, &spec).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => done(&format!("/admin/clients/{id}"), "saved"),
        Err(e) => error_page(&e),
    }
}

pub async fn rule_delete(state: Data, path: IdClaim, post: Posted) -> HttpResponse {
    let Posted { actor, .. } = post;
    let (id, claim) = path.into_inner();
    match admin::claims::delete(&state.ctx(), &state.clients, &actor, &id, &claim).await {
        Ok(()) => done(&format!("/admin/clients/{id}"), "deleted"),
        Err(e) => error_page(&e),
    }
}

/// One claim of a target on the preview page.
struct ClaimRow {
    name: String,
    value: String,
    why: String,
}

struct Target {
    id: &'static str,
    title: &'static str,
    rows: Vec<ClaimRow>,
}

#[derive(Template)]
#[template(path = "admin_client_preview.html")]
struct PreviewPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    client_id: &'a str,
    user: &'a str,
    scope: &'a str,
    targets: Vec<Target>,
    refused: Vec<(String, String)>,
    /// Whether a preview was asked for (a user given).
    shown: bool,
}

fn rows(preview: &Value, target: &str) -> Vec<ClaimRow> {
    let claims = preview[target].as_object().cloned().unwrap_or_default();
    claims
        .into_iter()
        .map(|(name, value)| ClaimRow {
            why: preview["reasons"][target][&name]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            value: value.to_string(),
            name,
        })
        .collect()
}

pub async fn preview_page(req: HttpRequest, state: Data, id: Id) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    let (user, scope) = preview_query(&req);
    let preview = match &user {
        Some(u) => match admin::claims::preview(&state.ctx(), &id, u, scope.as_deref()).await {
            Ok(p) => Some(p),
            Err(e) => return error_page(&e),
        },
        None => match admin::clients::get(&state.ctx(), &id).await {
            Ok(_) => None,
            Err(e) => return error_page(&e),
        },
    };
    let t = t();
    let targets = [
        ("id-token", t.apps_id_token, "id_token"),
        ("access-token", t.apps_access_token, "access_token"),
        ("userinfo", t.apps_userinfo, "userinfo"),
    ]
    .into_iter()
    .map(|(html_id, title, key)| Target {
        id: html_id,
        title,
        rows: preview.as_ref().map(|p| rows(p, key)).unwrap_or_default(),
    })
    .collect();
    let refused = preview
        .as_ref()
        .and_then(|p| p["refused"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (text("what"), text("why"))
        })
        .collect();
    let page = PreviewPage {
        is_admin: true,
        flash: None,
        client_id: &id,
        user: user.as_deref().unwrap_or(""),
        scope: scope.as_deref().unwrap_or(admin::claims::PREVIEW_SCOPE),
        targets,
        refused,
        shown: preview.is_some(),
    };
    pages::render(StatusCode::OK, &page)
}

#[derive(Template)]
#[template(path = "admin_client_test.html")]
struct TestPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    client_id: &'a str,
    run: TestRun,
    passed: bool,
}

/// "Test sign-in": a real authorization for the signed-in administrator.
pub async fn test_sign_in(state: Data, id: Id, post: Posted) -> HttpResponse {
    let Posted { viewer, actor, .. } = post;
    match admin::claims::test_sign_in(&state.ctx(), &actor, &id, &viewer.session).await {
        Ok(run) => {
            // The test ran, whatever it found: the page says what passed and what not.
            let passed = run.all_passed();
            pages::render(
                StatusCode::OK,
                &TestPage {
                    is_admin: true,
                    flash: None,
                    client_id: &id,
                    run,
                    passed,
                },
            )
        }
        Err(e) => error_page(&e),
    }
}

/// Registers the routes; they go in before the `/admin/api` scope and the client
/// page's `/admin/clients/{id}/{action}`, which would answer them otherwise.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api/clients/{id}/claims", web::get().to(api_list))
        .route("/admin/api/clients/{id}/claims", web::put().to(api_replace))
        .route("/admin/api/clients/{id}/claims/{claim}", web::put().to(api_put))
        .route("/admin/api/clients/{id}/claims/{claim}", web::delete().to(api_delete))
        .route("/admin/api/clients/{id}/preview", web::get().to(api_preview))
        .route("/admin/clients/{id}/claims", web::post().to(rule_add))
        .route("/admin/clients/{id}/claims/{claim}/delete", web::post().to(rule_delete))
        .route("/admin/clients/{id}/preview", web::get().to(preview_page))
        .route("/admin/clients/{id}/test", web::post().to(test_sign_in));
}
