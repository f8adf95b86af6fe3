//! `/admin/users`: the user list (search, sort, pages), creating a user, and one
//! user's page with every action on the account.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, users::UserInput, users::UserView, AdminError, ListQuery, Problems};
use crate::db::groups::Group;
use crate::http::account::view::SessionRow;
use crate::http::admin::{answer, done, error_page, flash, pager, record_id, Posted};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, pages};
use crate::i18n::t;
use crate::state::AppState;

#[derive(Default)]
struct NewUserForm {
    username: String,
    email: String,
    name: String,
    is_admin: bool,
}

#[derive(Template)]
#[template(path = "admin_users.html")]
struct UsersPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    q: &'a str,
    sort: &'a str,
    sorts: Vec<(&'static str, &'static str)>,
    users: Vec<UserView>,
    total: i64,
    prev: Option<String>,
    next: Option<String>,
    form: NewUserForm,
    problems: Problems,
}

/// The orders the list offers: the `sort` value and its label.
fn user_sorts() -> Vec<(&'static str, &'static str)> {
    let t = t();
    vec![
        ("username", t.adm_username),
        ("name", t.adm_name),
        ("email", t.adm_email),
        ("-created_at", t.adm_sort_newest),
        ("created_at", t.adm_sort_oldest),
    ]
}

async fn users_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    form: NewUserForm,
    problems: Problems,
) -> HttpResponse {
    let q = match ListQuery::parse(if req.method() == actix_web::http::Method::GET {
        req.query_string()
    } else {
        ""
    }) {
        Ok(q) => q,
        Err(e) => return error_page(&e),
    };
    let listed = match admin::users::list(&state.ctx(), &q).await {
        Ok(l) => l,
        Err(e) => return error_page(&e),
    };
    let sort = if q.sort.is_empty() {
        "username".to_string()
    } else if q.descending {
        format!("-{}", q.sort)
    } else {
        q.sort.clone()
    };
    let text = q.q.clone().unwrap_or_default();
    let (prev, next) = pager(
        "/admin/users",
        &[("q", &text), ("sort", &sort)],
        q.limit,
        q.offset,
        listed.total,
    );
    pages::render(
        status,
        &UsersPage {
            is_admin: true,
            flash: flash(req),
            csrf: &v.csrf,
            q: &text,
            sort: &sort,
            sorts: user_sorts(),
            users: listed.items,
            total: listed.total,
            prev,
            next,
            form,
            problems,
        },
    )
}

pub async fn users(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match portal::require_admin(&req, &state).await {
        Ok(v) => {
            users_page(
                &req,
                &state,
                &v,
                StatusCode::OK,
                NewUserForm::default(),
                Problems::new(),
            )
            .await
        }
        Err(resp) => resp,
    }
}

pub async fn user_create(req: HttpRequest, state: web::Data<AppState>, post: Posted) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let input = UserInput {
        username: Some(form.get("username").to_string()),
        email: Some(form.get("email").to_string()),
        name: Some(form.get("name").to_string()),
        password: Some(form.get("password").to_string()).filter(|p| !p.is_empty()),
        is_admin: Some(form.checked("is_admin")),
        ..UserInput::default()
    };
    let result = admin::users::create(&state.ctx(), &actor, input).await;
    let again = NewUserForm {
        username: form.get("username").into(),
        email: form.get("email").into(),
        name: form.get("name").into(),
        is_admin: form.checked("is_admin"),
    };
    answer(
        result,
        |u| ready(done(&format!("/admin/users/{}", u.id), "created")),
        |problems| users_page(&req, &state, &v, StatusCode::BAD_REQUEST, again, problems),
    )
    .await
}

#[derive(Template)]
#[template(path = "admin_user.html")]
struct UserPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    user: UserView,
    locked: Option<String>,
    claims: String,
    groups: Vec<Group>,
    sessions: Vec<SessionRow>,
    problems: Problems,
    /// When the user asked for their account to be deleted, if a request waits.
    deletion_requested: Option<String>,
    /// Links to upstream providers, with when each was made and last used.
    links: Vec<(admin::providers::Link, String, String)>,
}

async fn user_page(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    id: i64,
    status: StatusCode,
    problems: Problems,
) -> HttpResponse {
    let loaded = async {
        let user = admin::users::get(&state.ctx(), id).await?;
        let sessions = admin::users::sessions(&state.ctx(), id).await?;
        let groups = admin::groups::list(&state.ctx()).await?;
        let links = admin::providers::links(&state.ctx(), id).await?;
        Ok::<_, AdminError>((user, sessions, groups, links))
    };
    let (user, sessions, groups, links) = match loaded.await {
        Ok(l) => l,
        Err(e) => return error_page(&e),
    };
    let now = state.clock.now();
    let page = UserPage {
        is_admin: true,
        flash: flash(req).or_else(|| unlinked_flash(req)),
        csrf: &v.csrf,
        locked: user.locked_until.filter(|at| *at > now).map(|at| t().datetime(at)),
        deletion_requested: user.deletion_requested_at.map(|at| t().datetime(at)),
        claims: if user.claims.is_empty() {
            String::new()
        } else {
            serde_json::Value::Object(user.claims.clone()).to_string()
        },
        user,
        groups,
        sessions: sessions
            .iter()
            .map(|s| SessionRow {
                when: t().datetime(s.created_at),
                ..SessionRow::of(s, "")
            })
            .collect(),
        problems,
        links: links
            .into_iter()
            .map(|l| {
                let made = t().datetime(l.created_at);
                let used = l
                    .last_used_at
                    .map_or_else(|| t().adm_never.to_string(), |at| t().datetime(at));
                (l, made, used)
            })
            .collect(),
    };
    pages::render(status, &page)
}

/// The flash after an unlink (`?done=unlinked`), a message of this page alone.
fn unlinked_flash(req: &HttpRequest) -> Option<&'static str> {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .any(|(k, v)| k == "done" && v == "unlinked")
        .then_some(t().adm_flash_unlinked)
}

fn path_id(raw: &str) -> Result<i64, AdminError> {
    raw.parse().map_err(|_| AdminError::NotFound("user"))
}

pub async fn user(req: HttpRequest, state: web::Data<AppState>, id: web::Path<String>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match path_id(&id) {
        Ok(id) => user_page(&req, &state, &v, id, StatusCode::OK, Problems::new()).await,
        Err(e) => error_page(&e),
    }
}

pub async fn user_update(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    post: Posted,
) -> HttpResponse {
    let Posted { viewer: v, form, actor } = post;
    let id = match record_id(&id, "user") {
        Ok(id) => id,
        Err(e) => return error_page(&e),
    };
    let claims = match form.get("claims").trim() {
        "" => Some(serde_json::Map::new()),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => {
                let like = t().fill(t().adm_user_claims_invalid, "example", r#"{"given_name": "Ada"}"#);
                let bad = admin::invalid("claims", like);
                return outcome(&req, &state, &v, id, Err(bad)).await;
            }
        },
    };
    let input = UserInput {
        email: Some(form.get("email").to_string()),
        name: Some(form.get("name").to_string()),
        is_admin: Some(form.checked("is_admin")),
        email_verified: Some(form.checked("email_verified")),
        groups: Some(form.all("groups")),
        claims,
        ..UserInput::default()
    };
    let result = admin::users::update(&state.ctx(), &actor, id, input).await;
    outcome(
        &req,
        &state,
        &v,
        id,
        result.map(|_| format!("/admin/users/{id}?done=saved")),
    )
    .await
}

/// Where a change leads: on to `location`, or back to the user's page with what was
/// wrong marked (a field, or the whole action).
async fn outcome(
    req: &HttpRequest,
    state: &AppState,
    v: &Viewer,
    id: i64,
    result: Result<String, AdminError>,
) -> HttpResponse {
    match result {
        Ok(location) => errors::redirect(&location),
        Err(AdminError::Invalid(p)) => user_page(req, state, v, id, StatusCode::BAD_REQUEST, p).await,
        Err(AdminError::Conflict(msg)) => {
            let p = Problems::from([("action".to_string(), msg)]);
            user_page(req, state, v, id, StatusCode::CONFLICT, p).await
        }
        Err(e) => error_page(&e),
    }
}

/// One-button actions on a user: the path's last segment names it.
pub async fn user_action(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    post: Posted,
) -> HttpResponse {
    let (raw, action) = path.into_inner();
    let Posted { viewer: v, form, actor } = post;
    let id = match record_id(&raw, "user") {
        Ok(id) => id,
        Err(e) => return error_page(&e),
    };
    let result = match action.as_str() {
        "password" => admin::users::set_password(&state.ctx(), &actor, id, form.get("password"))
            .await
            .map(|_| "password"),
        "disable" => admin::users::set_disabled(&state.ctx(), &actor, id, true)
            .await
            .map(|_| "disabled"),
        "enable" => admin::users::set_disabled(&state.ctx(), &actor, id, false)
            .await
            .map(|_| "enabled"),
        "unlock" => admin::users::unlock(&state.ctx(), &actor, id).await.map(|_| "unlocked"),
        "mfa-reset" => admin::users::reset_mfa(&state.ctx(), &actor, id).await.map(|_| "mfa"),
        "delete" if !form.checked("confirm") => Err(admin::invalid("action", t().adm_user_delete_unconfirmed)),
        "delete" => {
            let deleted = admin::users::delete(&state.ctx(), &actor, id).await;
            return outcome(
                &req,
                &state,
                &v,
                id,
                deleted.map(|()| "/admin/users?done=deleted".into()),
            )
            .await;
        }
        "deletion-approve" => {
            let deleted = crate::admin::deletion::approve(&state.ctx(), &actor, id).await;
            return outcome(
                &req,
                &state,
                &v,
                id,
                deleted.map(|()| "/admin/users?done=deleted".into()),
            )
            .await;
        }
        "deletion-reject" => crate::admin::deletion::reject(&state.ctx(), &actor, id)
            .await
            .map(|()| "saved"),
        "unlink" => admin::providers::unlink(&state.ctx(), &actor, id, form.get("provider"))
            .await
            .map(|()| "unlinked"),
        "sessions" => {
            let sid = Some(form.get("sid")).filter(|s| !s.is_empty());
            admin::users::end_sessions(&state.ctx(), &actor, id, sid)
                .await
                .map(|_| "sessions")
        }
        _ => Err(AdminError::NotFound("action")),
    };
    let location = result.map(|code| format!("/admin/users/{id}?done={code}"));
    outcome(&req, &state, &v, id, location).await
}

/// `/admin/users/{id}/sessions/end` posts to the `sessions` action.
pub async fn user_sessions_end(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    post: Posted,
) -> HttpResponse {
    let path = web::Path::from((id.into_inner(), "sessions".to_string()));
    user_action(req, state, path, post).await
}
