//! `/account`: the signed-in user's own profile, password, sessions, passkeys and the
//! applications they allowed (the authenticator app is in `account_totp`). Every form
//! carries the session's CSRF token.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::portal::{self, Viewer};
use super::{errors, guard, pages, params};
use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::db::{self, sessions::SessionInfo};
use crate::domain::{Email, NewPassword};
use crate::oidc::logout;
use crate::state::AppState;

pub use crate::domain::Problems;

/// A session as one table row.
pub struct SessionRow {
    pub sid: String,
    pub device: String,
    pub ip: String,
    pub when: String,
    pub amr: String,
    pub current: bool,
}

/// How a session was signed in, in words.
fn method_label(amr: &str) -> &str {
    match amr {
        crate::oidc::interaction::AMR_PASSWORD => "password",
        crate::oidc::interaction::AMR_PASSWORD_OTP => "password and code",
        crate::oidc::interaction::AMR_PASSKEY => "passkey",
        other => other,
    }
}

impl SessionRow {
    pub fn of(s: &SessionInfo, current_sid: &str) -> Self {
        Self {
            sid: s.sid.clone(),
            device: s.user_agent.clone().unwrap_or_else(|| "unknown".into()),
            ip: s.ip.clone().unwrap_or_default(),
            when: portal::when(s.created_at),
            amr: method_label(&s.amr).to_string(),
            current: s.sid == current_sid,
        }
    }
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    user: &'a db::users::User,
    csrf: &'a str,
    name: &'a str,
    email: &'a str,
    problems: Problems,
    totp_on: bool,
    /// When the authenticator app was added.
    totp_since: String,
    recovery_left: i64,
    sessions: Vec<SessionRow>,
    passkeys: Vec<PasskeyRow>,
    apps: Vec<AppRow>,
}

/// An application the user allowed: its name, what it may see, and since when.
struct AppRow {
    client_id: String,
    name: String,
    scopes: String,
    since: String,
}

struct PasskeyRow {
    id: i64,
    name: String,
    added: String,
    used: String,
}

/// Messages after a successful change, named in the redirect so a reload repeats nothing.
fn flash_text(code: &str) -> Option<&'static str> {
    Some(match code {
        "profile" => "Your profile was saved.",
        "password" => "Your password was changed. Other sessions were signed out and their access ended.",
        "session" => "That session was signed out.",
        "others" => "All other sessions were signed out.",
        "totp-off" => "Two-step verification was turned off.",
        "passkey" => "The passkey was added. You can sign in with it now.",
        "passkey-removed" => "The passkey was removed.",
        "app-removed" => "The application's access was removed; it must ask again.",
        _ => return None,
    })
}

/// The viewer as the account operations know them.
pub(super) fn me<'a>(req: &HttpRequest, state: &AppState, v: &'a Viewer) -> crate::account::Me<'a> {
    crate::account::Me {
        user: &v.user,
        sid: &v.session.sid,
        ip: super::guard::ip_text(req, state),
    }
}

/// Form fields, the viewer and a verified CSRF token, or the response that refuses.
pub async fn posted(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
) -> Result<(Viewer, HashMap<String, String>), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let viewer = portal::require(req, state).await?;
    let form = params::require_form(req)
        .and_then(|_| params::unique_form(body))
        .map_err(|_| portal::csrf_refused())?;
    if !portal::csrf_ok(&viewer, form.get("csrf").map(String::as_str).unwrap_or_default()) {
        return Err(portal::csrf_refused());
    }
    Ok((viewer, form))
}

pub(super) async fn render(
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    flash: Option<&str>,
    problems: Problems,
    fields: Option<(&str, &str)>,
) -> HttpResponse {
    let crate::account::Overview {
        sessions,
        totp,
        recovery_left,
        passkeys,
        apps,
    } = match crate::account::overview(state, v.user.id).await {
        Ok(o) => o,
        Err(e) => return errors::server_page(e),
    };
    let (name, email) = fields.unwrap_or((
        v.user.name.as_deref().unwrap_or_default(),
        v.user.email.as_deref().unwrap_or_default(),
    ));
    let page = AccountPage {
        is_admin: v.user.is_admin,
        flash,
        user: &v.user,
        csrf: &v.csrf,
        name,
        email,
        problems,
        totp_on: totp.is_some(),
        totp_since: totp.and_then(|t| t.confirmed_at).map(portal::when).unwrap_or_default(),
        recovery_left,
        sessions: sessions.iter().map(|s| SessionRow::of(s, &v.session.sid)).collect(),
        passkeys: passkeys
            .into_iter()
            .map(|p| PasskeyRow {
                id: p.id,
                name: p.name,
                added: portal::when(p.created_at),
                used: p.last_used_at.map(portal::when).unwrap_or_else(|| "never".into()),
            })
            .collect(),
        apps: apps
            .into_iter()
            .map(|g| AppRow {
                scopes: g
                    .scope
                    .split(' ')
                    .filter_map(pages::describe_scope)
                    .collect::<Vec<_>>()
                    .join("; "),
                since: portal::when(g.granted_at),
                client_id: g.client_id,
                name: g.client_name,
            })
            .collect(),
    };
    pages::render(status, &page)
}

pub(super) fn back(flash: &str) -> HttpResponse {
    errors::redirect(&format!("/account?done={flash}"))
}

pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let done = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "done")
        .and_then(|(_, v)| flash_text(&v));
    render(&state, &v, StatusCode::OK, done, Problems::default(), None).await
}

pub async fn profile(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let (name, email) = (
        params::field(&form, "name").trim(),
        params::field(&form, "email").trim(),
    );
    let mut problems = Problems::default();
    if name.chars().count() > 200 {
        problems.insert("name".into(), "use at most 200 characters".into());
    }
    if !email.is_empty() {
        if let Err(e) = Email::parse(email) {
            problems.insert("email".into(), e.0);
        }
    }
    if problems.contains_key("name") || problems.contains_key("email") {
        return render(&state, &v, StatusCode::BAD_REQUEST, None, problems, Some((name, email))).await;
    }
    let (n, e) = (
        (!name.is_empty()).then(|| name.to_string()),
        (!email.is_empty()).then(|| email.to_string()),
    );
    let result = crate::account::update_profile(&state, &me(&req, &state, &v), n, e).await;
    match result {
        Ok(()) => back("profile"),
        Err(e) => errors::server_page(e),
    }
}

/// Checks the account's current password as a sign-in does: the per-account limit
/// first, and a wrong password counted toward the lockout, so that a stolen session
/// is no password oracle.
pub(super) async fn password_ok(state: &AppState, v: &Viewer, password: &str) -> Result<bool, HttpResponse> {
    if let Some(limited) = guard::limit_account(state, &v.user.username) {
        return Err(limited);
    }
    use crate::auth::login::{reauthenticate, LoginError, Reauth};
    let (lockout, now) = (state.settings.lockout, state.clock.now());
    match reauthenticate(&state.db, &state.hasher, &v.user, password, lockout, now).await {
        Ok(Reauth::Confirmed) => Ok(true),
        Ok(Reauth::Wrong) => Ok(false),
        Ok(Reauth::Locked) => Err(pages::error_page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many wrong passwords",
            "Your password was entered wrongly too often, so it is not checked for now.",
            "Wait a few minutes, then try again.",
        )),
        Err(LoginError::Server(e)) => Err(errors::server_page(e)),
        Err(LoginError::InvalidCredentials) => Err(errors::server_page(crate::error::Internal::Failed)),
    }
}

pub async fn password(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let mut problems = Problems::default();
    let new = match NewPassword::parse(params::field(&form, "password")) {
        Ok(p) => Some(p),
        Err(e) => {
            problems.insert("password".into(), e.0);
            None
        }
    };
    if params::field(&form, "password") != params::field(&form, "confirm") {
        problems.insert("confirm".into(), "the two passwords differ".into());
    }
    match password_ok(&state, &v, params::field(&form, "current")).await {
        Ok(true) => {}
        Ok(false) => {
            problems.insert("current".into(), "this is not your current password".into());
        }
        Err(resp) => return resp,
    }
    let Some(new) = new.filter(|_| !problems.contains_key("current") && !problems.contains_key("confirm")) else {
        return render(&state, &v, StatusCode::BAD_REQUEST, None, problems, None).await;
    };
    let hash = match state.hasher.hash(new.expose()).await {
        Ok(h) => h,
        Err(e) => return errors::server_page(e),
    };
    let remove_passkeys = params::field(&form, "remove_passkeys") == "on";
    let saved = crate::account::change_password(&state, &me(&req, &state, &v), hash, remove_passkeys).await;
    if let Err(e) = saved {
        return errors::server_page(e);
    }
    // A changed password ends every other session: whoever knew the old one is out.
    match end_sessions(&state, &v, |s| s.sid != v.session.sid).await {
        Ok(_) => back("password"),
        Err(resp) => resp,
    }
}

/// Ends the viewer's sessions that `pick` selects (with back-channel logout).
async fn end_sessions(
    state: &AppState,
    v: &Viewer,
    pick: impl Fn(&SessionInfo) -> bool,
) -> Result<usize, HttpResponse> {
    let cx = state.ctx();
    let sessions = crate::account::sessions(state, v.user.id)
        .await
        .map_err(errors::server_page)?;
    let chosen: Vec<_> = sessions.into_iter().filter(|s| pick(s)).collect();
    logout::end_listed(&cx, &chosen).await.map_err(errors::server_page)?;
    Ok(chosen.len())
}

pub async fn end_one(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let sid = params::field(&form, "sid");
    // Only the viewer's own sessions are listed, so another user's sid matches nothing.
    match end_sessions(&state, &v, |s| s.sid == sid && s.sid != v.session.sid).await {
        Ok(0) => pages::error_page(
            StatusCode::NOT_FOUND,
            "Session not found",
            "That session has already ended, or is not yours.",
            "Return to your account page.",
        ),
        Ok(_) => {
            Event::new("session.ended")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(super::guard::ip_text(&req, &state)))
                .log(&state)
                .await;
            back("session")
        }
        Err(resp) => resp,
    }
}

pub async fn end_others(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, _) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match end_sessions(&state, &v, |s| s.sid != v.session.sid).await {
        Ok(n) => {
            Event::new("session.ended_others")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(super::guard::ip_text(&req, &state)))
                .detail(serde_json::json!({"count": n}))
                .log(&state)
                .await;
            back("others")
        }
        Err(resp) => resp,
    }
}

/// Withdraws consent for an application: its grants for this user end at once and
/// it must ask again next time.
pub async fn revoke_consent(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let client_id = params::field(&form, "client_id");
    let revoked = crate::account::revoke_consent(&state, &me(&req, &state, &v), client_id).await;
    match revoked {
        Ok(true) => back("app-removed"),
        Ok(false) => pages::error_page(
            StatusCode::NOT_FOUND,
            "Application not found",
            "You had not allowed that application, or its access was already removed.",
            "Return to your account page.",
        ),
        Err(e) => errors::server_page(e),
    }
}
