//! `/admin`: the administration pages for people — dashboard, users, signing keys and
//! the audit log. Clients and groups are in `admin_pages`. Every change is a form
//! with the session's CSRF token, handled by the same operations as the JSON API.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::account::SessionRow;
use super::portal::{self, Viewer};
use super::{errors, guard, login::ip_text, pages, params};
use crate::admin::{self, overview::Stats, users::UserInput, users::UserView, Actor, AdminError, ListQuery, Problems};
use crate::db::groups::Group;
use crate::state::AppState;

/// A submitted form that may repeat a name (checkbox groups).
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    }
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
    pub fn checked(&self, name: &str) -> bool {
        !self.get(name).is_empty()
    }
}

/// An administrator's form submission with a verified CSRF token, or the refusal.
pub async fn posted(req: &HttpRequest, state: &AppState, body: &Bytes) -> Result<(Viewer, Form, Actor), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let viewer = portal::require_admin(req, state).await?;
    let pairs = params::require_form(req)
        .and_then(|_| params::pairs(body))
        .map_err(|_| portal::csrf_refused())?;
    let form = Form(pairs);
    if !portal::csrf_ok(&viewer, form.get("csrf")) {
        return Err(portal::csrf_refused());
    }
    let actor = Actor {
        name: viewer.user.username.clone(),
        ip: Some(ip_text(req, state)),
        user_id: Some(viewer.user.id),
    };
    Ok((viewer, form, actor))
}

/// A failed operation as a page (form errors are shown on the form instead).
pub fn error_page(e: &AdminError) -> HttpResponse {
    match e {
        AdminError::NotFound(what) => pages::error_page(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("There is no such {what}."),
            "Go back to the list and try again.",
        ),
        AdminError::Conflict(msg) => {
            pages::error_page(StatusCode::CONFLICT, "Not possible", msg, "Nothing was changed.")
        }
        AdminError::Invalid(p) => {
            let msg = p
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join("; ");
            pages::error_page(
                StatusCode::BAD_REQUEST,
                "Not valid",
                &msg,
                "Go back and correct the form.",
            )
        }
        AdminError::Server(e) => errors::server_page(e),
    }
}

/// `posted`, plus the numeric id of the record the path names (`what` for the 404).
pub async fn posted_to(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
    raw_id: &str,
    what: &'static str,
) -> Result<(Viewer, Form, Actor, i64), HttpResponse> {
    let (v, form, actor) = posted(req, state, body).await?;
    let id = raw_id.parse().map_err(|_| error_page(&AdminError::NotFound(what)))?;
    Ok((v, form, actor, id))
}

pub fn done(path: &str, code: &str) -> HttpResponse {
    errors::redirect(&format!("{path}?done={code}"))
}

/// The message for a `done` code in the query.
pub fn flash(req: &HttpRequest) -> Option<&'static str> {
    let code = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "done")?
        .1;
    Some(match code.as_ref() {
        "created" => "Created.",
        "saved" => "Saved.",
        "password" => "The password was set.",
        "disabled" => "The account was disabled; its sessions and tokens ended.",
        "enabled" => "The account was enabled.",
        "unlocked" => "The account was unlocked.",
        "mfa" => "The authenticator was removed.",
        "deleted" => "Deleted.",
        "sessions" => "Signed out.",
        "rotated" => "A new key was created.",
        _ => return None,
    })
}

/// Previous and next page links for a list.
pub fn pager(
    path: &str,
    keep: &[(&str, &str)],
    limit: i64,
    offset: i64,
    total: i64,
) -> (Option<String>, Option<String>) {
    let link = |off: i64| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
            q.append_pair(k, v);
        }
        q.append_pair("offset", &off.to_string());
        format!("{path}?{}", q.finish())
    };
    let prev = (offset > 0).then(|| link((offset - limit).max(0)));
    let next = (offset + limit < total).then(|| link(offset + limit));
    (prev, next)
}

#[derive(Template)]
#[template(path = "admin_dashboard.html")]
struct Dashboard<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    stats: Stats,
}

pub async fn dashboard(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    match admin::overview::stats(&state).await {
        Ok(stats) => pages::render(
            StatusCode::OK,
            &Dashboard {
                is_admin: true,
                flash: flash(&req),
                stats,
            },
        ),
        Err(e) => error_page(&e),
    }
}

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
    sorts: &'static [(&'static str, &'static str)],
    users: Vec<UserView>,
    total: i64,
    prev: Option<String>,
    next: Option<String>,
    form: NewUserForm,
    problems: Problems,
}

const USER_SORTS: &[(&str, &str)] = &[
    ("username", "Username"),
    ("name", "Name"),
    ("email", "Email"),
    ("-created_at", "Newest"),
    ("created_at", "Oldest"),
];

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
    let listed = match admin::users::list(state, &q).await {
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
            sorts: USER_SORTS,
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

pub async fn user_create(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form, actor) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let input = UserInput {
        username: Some(form.get("username").to_string()),
        email: Some(form.get("email").to_string()),
        name: Some(form.get("name").to_string()),
        password: Some(form.get("password").to_string()).filter(|p| !p.is_empty()),
        is_admin: Some(form.checked("is_admin")),
        ..UserInput::default()
    };
    match admin::users::create(&state, &actor, input).await {
        Ok(u) => done(&format!("/admin/users/{}", u.id), "created"),
        Err(AdminError::Invalid(problems)) => {
            let again = NewUserForm {
                username: form.get("username").into(),
                email: form.get("email").into(),
                name: form.get("name").into(),
                is_admin: form.checked("is_admin"),
            };
            users_page(&req, &state, &v, StatusCode::BAD_REQUEST, again, problems).await
        }
        Err(e) => error_page(&e),
    }
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
        let user = admin::users::get(state, id).await?;
        let sessions = admin::users::sessions(state, id).await?;
        let groups = admin::groups::list(state).await?;
        Ok::<_, AdminError>((user, sessions, groups))
    };
    let (user, sessions, groups) = match loaded.await {
        Ok(l) => l,
        Err(e) => return error_page(&e),
    };
    let now = state.clock.now();
    let page = UserPage {
        is_admin: true,
        flash: flash(req),
        csrf: &v.csrf,
        locked: user.locked_until.filter(|t| *t > now).map(portal::when),
        claims: if user.claims.is_empty() {
            String::new()
        } else {
            serde_json::Value::Object(user.claims.clone()).to_string()
        },
        user,
        groups,
        sessions: sessions.iter().map(|s| SessionRow::of(s, "")).collect(),
        problems,
    };
    pages::render(status, &page)
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
    body: Bytes,
) -> HttpResponse {
    let (v, form, actor, id) = match posted_to(&req, &state, &body, &id, "user").await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let claims = match form.get("claims").trim() {
        "" => Some(serde_json::Map::new()),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => {
                let p = Problems::from([(
                    "claims".to_string(),
                    "a JSON object, like {\"given_name\": \"Ada\"}".to_string(),
                )]);
                return user_page(&req, &state, &v, id, StatusCode::BAD_REQUEST, p).await;
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
    match admin::users::update(&state, &actor, id, input).await {
        Ok(_) => done(&format!("/admin/users/{id}"), "saved"),
        Err(AdminError::Invalid(p)) => user_page(&req, &state, &v, id, StatusCode::BAD_REQUEST, p).await,
        Err(AdminError::Conflict(msg)) => {
            let p = Problems::from([("action".to_string(), msg)]);
            user_page(&req, &state, &v, id, StatusCode::CONFLICT, p).await
        }
        Err(e) => error_page(&e),
    }
}

/// One-button actions on a user: the path's last segment names it.
pub async fn user_action(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> HttpResponse {
    let (raw, action) = path.into_inner();
    let (v, form, actor, id) = match posted_to(&req, &state, &body, &raw, "user").await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let here = format!("/admin/users/{id}");
    let result = match action.as_str() {
        "password" => admin::users::set_password(&state, &actor, id, form.get("password"))
            .await
            .map(|_| "password"),
        "disable" => admin::users::set_disabled(&state, &actor, id, true)
            .await
            .map(|_| "disabled"),
        "enable" => admin::users::set_disabled(&state, &actor, id, false)
            .await
            .map(|_| "enabled"),
        "unlock" => admin::users::unlock(&state, &actor, id).await.map(|_| "unlocked"),
        "mfa-reset" => admin::users::reset_mfa(&state, &actor, id).await.map(|_| "mfa"),
        "delete" if !form.checked("confirm") => Err(admin::invalid("action", "tick the box to confirm the deletion")),
        "delete" => {
            return match admin::users::delete(&state, &actor, id).await {
                Ok(()) => done("/admin/users", "deleted"),
                Err(AdminError::Conflict(msg)) => {
                    let p = Problems::from([("action".to_string(), msg)]);
                    user_page(&req, &state, &v, id, StatusCode::CONFLICT, p).await
                }
                Err(e) => error_page(&e),
            }
        }
        "sessions" => {
            let sid = Some(form.get("sid")).filter(|s| !s.is_empty());
            admin::users::end_sessions(&state, &actor, id, sid)
                .await
                .map(|_| "sessions")
        }
        _ => Err(AdminError::NotFound("action")),
    };
    match result {
        Ok(code) => done(&here, code),
        Err(AdminError::Invalid(p)) => user_page(&req, &state, &v, id, StatusCode::BAD_REQUEST, p).await,
        Err(AdminError::Conflict(msg)) => {
            let p = Problems::from([("action".to_string(), msg)]);
            user_page(&req, &state, &v, id, StatusCode::CONFLICT, p).await
        }
        Err(e) => error_page(&e),
    }
}

/// `/admin/users/{id}/sessions/end` posts to the `sessions` action.
pub async fn user_sessions_end(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    let path = web::Path::from((id.into_inner(), "sessions".to_string()));
    user_action(req, state, path, body).await
}

#[derive(Template)]
#[template(path = "admin_keys.html")]
struct KeysPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    keys: Vec<(String, String, String, String)>,
}

pub async fn keys(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let keys = match admin::overview::keys(&state).await {
        Ok(k) => k,
        Err(e) => return error_page(&e),
    };
    let rows = keys
        .iter()
        .rev()
        .map(|k| {
            let status = match k["retired_at"].as_i64() {
                None => "signing".to_string(),
                Some(t) => format!("retired {}", portal::when(t)),
            };
            (
                k["kid"].as_str().unwrap_or_default().to_string(),
                k["alg"].as_str().unwrap_or_default().to_string(),
                portal::when(k["created_at"].as_i64().unwrap_or_default()),
                status,
            )
        })
        .collect();
    pages::render(
        StatusCode::OK,
        &KeysPage {
            is_admin: true,
            flash: flash(&req),
            csrf: &v.csrf,
            keys: rows,
        },
    )
}

pub async fn keys_rotate(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (_, form, actor) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match admin::overview::rotate_key(&state, &actor, form.get("alg")).await {
        Ok(_) => done("/admin/keys", "rotated"),
        Err(e) => error_page(&e),
    }
}

#[derive(Template)]
#[template(path = "admin_audit.html")]
struct AuditPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    event: &'a str,
    who: &'a str,
    from: &'a str,
    to: &'a str,
    error: Option<String>,
    retention: String,
    total: i64,
    entries: Vec<(String, String, String, String, String, String)>,
    prev: Option<String>,
    next: Option<String>,
}

pub async fn audit(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    // Date inputs become the API's `since`/`until` (Unix seconds; `to` is inclusive).
    let q = ListQuery::parse(req.query_string()).and_then(|mut q| {
        for (field, key, extra) in [("from", "since", 0), ("to", "until", 86_400)] {
            if let Some(text) = q.filters.get(field).cloned() {
                let at = portal::parse_date(&text).ok_or_else(|| admin::invalid(field, "a date like 2026-11-29"))?;
                q.filters.insert(key.to_string(), (at + extra).to_string());
            }
        }
        Ok(q)
    });
    let (listed, error) = match &q {
        Ok(q) => match admin::overview::audit(&state, q).await {
            Ok(l) => (Some(l), None),
            Err(AdminError::Invalid(p)) => (None, p.values().next().cloned()),
            Err(e) => return error_page(&e),
        },
        Err(AdminError::Invalid(p)) => (None, p.values().next().cloned()),
        Err(e) => return error_page(e),
    };
    let q = q.unwrap_or_default();
    let event = q.filters.get("event").cloned().unwrap_or_default();
    let who = q.filters.get("who").cloned().unwrap_or_default();
    let (from, to) = (
        q.filters.get("from").cloned().unwrap_or_default(),
        q.filters.get("to").cloned().unwrap_or_default(),
    );
    let (entries, total) = listed.map(|l| (l.items, l.total)).unwrap_or_default();
    let keep = [
        ("event", event.as_str()),
        ("who", who.as_str()),
        ("from", from.as_str()),
        ("to", to.as_str()),
    ];
    let (prev, next) = pager("/admin/audit", &keep, q.limit, q.offset, total);
    let days = state.settings.audit_retention_days;
    let page = AuditPage {
        is_admin: true,
        flash: None,
        event: &event,
        who: &who,
        from: &from,
        to: &to,
        error,
        retention: if days == 0 {
            "forever".into()
        } else {
            format!("{days} days")
        },
        total,
        entries: entries
            .into_iter()
            .map(|e| {
                (
                    portal::when(e.at),
                    e.event,
                    e.actor.unwrap_or_default(),
                    e.target.unwrap_or_default(),
                    e.ip.unwrap_or_default(),
                    e.detail.to_string().chars().take(300).collect(),
                )
            })
            .collect(),
        prev,
        next,
    };
    pages::render(StatusCode::OK, &page)
}
