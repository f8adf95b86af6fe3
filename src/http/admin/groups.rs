//! `/admin/groups`: creating, renaming and deleting groups, and their members.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, groups::GroupView, AdminError, Problems};
use crate::db::groups::Group;
use crate::http::admin::{answer, done, error_page, flash, record_id, Posted};
use crate::http::pages;
use crate::http::signin::portal::{self, Viewer};
use crate::i18n::t;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "admin_groups.html")]
struct GroupsPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    groups: Vec<Group>,
    name: &'a str,
    problems: Problems,
}

async fn groups_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    name: &str,
    problems: Problems,
) -> HttpResponse {
    match admin::groups::list(&state.ctx()).await {
        Ok(groups) => pages::render(
            status,
            &GroupsPage {
                is_admin: true,
                flash: flash(req),
                csrf: &v.csrf,
                groups,
                name,
                problems,
            },
        ),
        Err(e) => error_page(&e),
    }
}

pub async fn groups(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => groups_page(&req, &state, &v, StatusCode::OK, "", Problems::new()).await,
        Err(resp) => resp,
    }
}

pub async fn group_create(req: HttpRequest, state: web::Data<AppState>, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let result = admin::groups::create(&state.ctx(), &actor, form.get("name")).await;
    answer(
        result,
        |g| ready(done(&format!("/admin/groups/{}", g.group.id), "created")),
        |p| groups_page(&req, &state, &v, StatusCode::BAD_REQUEST, form.get("name"), p),
    )
    .await
}

#[derive(Template)]
#[template(path = "admin_group.html")]
struct GroupPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    group: GroupView,
    problems: Problems,
}

fn group_id(raw: &str) -> Result<i64, AdminError> {
    raw.parse().map_err(|_| AdminError::NotFound("group"))
}

async fn group_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    id: i64,
    status: StatusCode,
    problems: Problems,
) -> HttpResponse {
    match admin::groups::get(&state.ctx(), id).await {
        Ok(group) => pages::render(
            status,
            &GroupPage {
                is_admin: true,
                flash: flash(req),
                csrf: &v.csrf,
                group,
                problems,
            },
        ),
        Err(e) => error_page(&e),
    }
}

pub async fn group(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match group_id(&id) {
        Ok(id) => group_page(&req, &state, &v, id, StatusCode::OK, Problems::new()).await,
        Err(e) => error_page(&e),
    }
}

/// Rename (the group's own path), `members/add`, `members/remove` (the path's last
/// segment) and `delete`.
pub async fn group_action(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    post: Posted,
) -> HttpResponse {
    let (raw, action) = path.into_inner();
    let Posted { viewer: v, form, actor } = post;
    let id = match record_id(&raw, "group") {
        Ok(id) => id,
        Err(e) => return error_page(&e),
    };
    let here = format!("/admin/groups/{id}");
    let result = match action.as_str() {
        "rename" => admin::groups::rename(&state.ctx(), &actor, id, form.get("name"))
            .await
            .map(|_| "saved"),
        "add" => admin::groups::set_member(&state.ctx(), &actor, id, form.get("username"), true)
            .await
            .map(|_| "saved"),
        "remove" => admin::groups::set_member(&state.ctx(), &actor, id, form.get("username"), false)
            .await
            .map(|_| "saved"),
        "delete" if !form.checked("confirm") => Err(admin::invalid("confirm", t().adm_group_delete_unconfirmed)),
        "delete" => {
            return match admin::groups::delete(&state.ctx(), &actor, id).await {
                Ok(()) => done("/admin/groups", "deleted"),
                Err(e) => error_page(&e),
            }
        }
        _ => Err(AdminError::NotFound("action")),
    };
    answer(
        result,
        |code| ready(done(&here, code)),
        |p| group_page(&req, &state, &v, id, StatusCode::BAD_REQUEST, p),
    )
    .await
}

pub async fn group_rename(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    post: Posted,
) -> HttpResponse {
    group_action(
        req,
        state,
        web::Path::from((id.into_inner(), "rename".to_string())),
        post,
    )
    .await
}
