//! `/account`: the signed-in user's own profile, password, sessions, passkeys, codes
//! by mail, trusted devices, notices and the applications they allowed (the
//! authenticator app is in `account_totp`). Every form carries the session's CSRF token.

pub mod confirm;
pub mod invite;
pub mod reset;
pub mod setup;
pub mod totp;

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::db::{self, sessions::SessionInfo};
use crate::domain::{Email, NewPassword};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, pages, params};
use crate::i18n::t;
use crate::oidc::logout;
use crate::state::AppState;

pub use crate::domain::Problems;

/// A sentence as HTML with its `{name}` placeholder filled by `value` in an element of
/// its own (`<tag id="id">`), for a value that tests and scripts find by its id:
/// `fill_strong` with the element named. Rendered with `|safe`.
pub fn fill_tag(text: &str, name: &str, value: impl std::fmt::Display, tag: &str, id: &str) -> String {
    crate::i18n::markup(text, &format!("{tag} id=\"{id}\""), &[(name, &value)])
}

/// A sentence as HTML with two placeholders filled by values in bold (`fill_strong`
/// for two). Rendered with `|safe`.
pub fn fill_strong2(
    text: &str,
    a: &str,
    a_value: impl std::fmt::Display,
    b: &str,
    b_value: impl std::fmt::Display,
) -> String {
    crate::i18n::markup(text, "strong", &[(a, &a_value), (b, &b_value)])
}

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
        crate::oidc::interaction::AMR_PASSWORD => t().acct_method_password,
        crate::oidc::interaction::AMR_PASSWORD_OTP => t().acct_method_password_code,
        crate::oidc::interaction::AMR_PASSKEY => t().acct_method_passkey,
        crate::lifecycle::signin::AMR_EMAIL => t().acct_method_email,
        crate::lifecycle::signin::AMR_EMAIL_TOTP => t().acct_method_email_code,
        other => other,
    }
}

impl SessionRow {
    pub fn of(s: &SessionInfo, current_sid: &str) -> Self {
        Self {
            sid: s.sid.clone(),
            device: s.user_agent.clone().unwrap_or_else(|| t().acct_unknown.into()),
            ip: s.ip.clone().unwrap_or_default(),
            when: t().datetime(s.created_at),
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
    signin: SignInSection,
    sessions: Vec<SessionRow>,
    passkeys: Vec<PasskeyRow>,
    apps: Vec<AppRow>,
    deletion: DeletionSection,
    /// A new address waiting for its link to be confirmed.
    pending_email: Option<String>,
    /// Upstream providers, linked or not.
    links: Vec<LinkRow>,
    /// A federated-only account has none (a reset by mail sets one).
    has_password: bool,
    /// Mail is on (a reset can set a password).
    mail: bool,
}

/// An upstream provider on the account page.
struct LinkRow {
    id: String,
    name: String,
    /// The address it reported and since when, when linked.
    linked: Option<(String, String)>,
}

/// The "Delete your account" section: whether deleting needs an administrator's
/// approval, and when this account asked, if it has a request waiting.
struct DeletionSection {
    approval: bool,
    requested: Option<String>,
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

/// Codes by mail at sign-in, trusted browsers and the new-browser notice.
struct SignInSection {
    mail: bool,
    email_mfa: bool,
    /// Why codes by mail cannot be turned on now, if they cannot.
    email_mfa_blocked: Option<&'static str>,
    notify_new_device: bool,
    devices: Vec<DeviceRow>,
}

/// A browser trusted to skip the second factor.
struct DeviceRow {
    id: i64,
    label: String,
    first_seen: String,
    until: String,
}

impl SignInSection {
    fn new(
        state: &AppState,
        user: &db::users::User,
        c: crate::account::security::Choices,
        totp: bool,
        passkeys: bool,
    ) -> Self {
        let email_mfa_blocked = if state.settings.smtp.is_none() {
            Some(t().acct_email_mfa_blocked_mail)
        } else if totp {
            Some(t().acct_email_mfa_blocked_totp)
        } else if passkeys {
            Some(t().acct_email_mfa_blocked_passkey)
        } else if !user.email_verified || user.email.as_deref().is_none_or(|e| e.trim().is_empty()) {
            Some(t().acct_email_mfa_blocked_unverified)
        } else {
            None
        };
        Self {
            mail: state.settings.smtp.is_some(),
            email_mfa: c.lifecycle.email_mfa,
            email_mfa_blocked,
            notify_new_device: c.lifecycle.notify_new_device,
            devices: c
                .trusted
                .into_iter()
                .map(|d| DeviceRow {
                    id: d.id,
                    label: crate::lifecycle::devices::shown(&d.label),
                    first_seen: t().datetime(d.created_at),
                    until: t().datetime(d.trusted_until),
                })
                .collect(),
        }
    }
}

/// Messages after a successful change, named in the redirect so a reload repeats nothing.
fn flash_text(code: &str) -> Option<&'static str> {
    let t = t();
    Some(match code {
        "profile" => t.acct_done_profile,
        "profile-verify" => t.acct_done_profile_verify,
        "confirmed-email" => t.acct_done_confirmed_email,
        "password" => t.acct_done_password,
        "session" => t.acct_done_session,
        "others" => t.acct_done_others,
        "totp-off" => t.acct_done_totp_off,
        "passkey" => t.acct_done_passkey,
        "passkey-removed" => t.acct_done_passkey_removed,
        "app-removed" => t.acct_done_app_removed,
        "email-mfa-on" => t.acct_done_email_mfa_on,
        "email-mfa-off" => t.acct_done_email_mfa_off,
        "device-removed" => t.acct_done_device_removed,
        "notifications" => t.acct_done_notifications,
        "deletion-requested" => t.acct_done_deletion_requested,
        "deletion-withdrawn" => t.acct_done_deletion_withdrawn,
        "linked" => t.acct_done_linked,
        "unlinked" => t.acct_done_unlinked,
        "link-elsewhere" => t.acct_done_link_elsewhere,
        "link-already" => t.acct_done_link_already,
        "link-failed" => t.acct_done_link_failed,
        "link-unavailable" => t.acct_done_link_unavailable,
        "link-reauth" => t.acct_done_link_reauth,
        "unlink-last" => t.acct_done_unlink_last,
        _ => return None,
    })
}

/// The viewer as the account operations know them.
pub(crate) fn me<'a>(req: &HttpRequest, state: &AppState, v: &'a Viewer) -> crate::account::Me<'a> {
    crate::account::Me {
        user: &v.user,
        sid: &v.session.sid,
        ip: crate::http::guard::ip_text(req, state),
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

pub(crate) async fn render(
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
        pending_email,
    } = match crate::account::overview(&state.ctx(), v.user.id).await {
        Ok(o) => o,
        Err(e) => return errors::server_page(e),
    };
    let signin = match crate::account::security::choices(&state.ctx(), v.user.id).await {
        Ok(c) => SignInSection::new(state, &v.user, c, totp.is_some(), !passkeys.is_empty()),
        Err(e) => return errors::server_page(e),
    };
    let (name, email) = fields.unwrap_or((
        v.user.name.as_deref().unwrap_or_default(),
        v.user.email.as_deref().unwrap_or_default(),
    ));
    let deletion = match crate::admin::deletion::requested_at(&state.ctx(), v.user.id).await {
        Ok(at) => DeletionSection {
            approval: state.settings.account_deletion == crate::config::AccountDeletion::Approval,
            requested: at.map(|at| t().datetime(at)),
        },
        Err(e) => return errors::server_page(e),
    };
    let links = match crate::federation::account_links(&state.ctx(), v.user.id).await {
        Ok(l) => l
            .into_iter()
            .map(|l| LinkRow {
                linked: l
                    .linked
                    .map(|i| (i.email.unwrap_or_default(), t().datetime(i.created_at))),
                id: l.id,
                name: l.name,
            })
            .collect(),
        Err(e) => return errors::server_page(e),
    };
    let page = AccountPage {
        links,
        has_password: crate::crypto::password::has_password(&v.user.password_hash),
        mail: state.settings.smtp.is_some(),
        deletion,
        pending_email,
        is_admin: v.user.is_admin,
        flash,
        user: &v.user,
        csrf: &v.csrf,
        name,
        email,
        problems,
        totp_on: totp.is_some(),
        totp_since: totp
            .and_then(|totp| totp.confirmed_at)
            .map(|at| t().datetime(at))
            .unwrap_or_default(),
        recovery_left,
        signin,
        sessions: sessions.iter().map(|s| SessionRow::of(s, &v.session.sid)).collect(),
        passkeys: passkeys
            .into_iter()
            .map(|p| PasskeyRow {
                id: p.id,
                name: p.name,
                added: t().datetime(p.created_at),
                used: p
                    .last_used_at
                    .map(|at| t().datetime(at))
                    .unwrap_or_else(|| t().acct_never.into()),
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
                since: t().datetime(g.granted_at),
                client_id: g.client_id,
                name: g.client_name,
            })
            .collect(),
    };
    pages::render(status, &page)
}

pub(crate) fn back(flash: &str) -> HttpResponse {
    errors::redirect(&format!("/account?done={flash}"))
}

pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let done = params::field(&query, "done");
    // Back from confirming a change of address: the profile form as it was typed.
    let carried = crate::http::account::confirm::Carried::read(query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let typed = (done == "confirmed-email").then_some((carried.name.as_str(), carried.email.as_str()));
    render(&state, &v, StatusCode::OK, flash_text(done), Problems::default(), typed).await
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
        problems.insert("name".into(), t().acct_error_name_too_long.into());
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
    // Where resets and sign-in links go is a way into the account: a change (a removal
    // included) needs a recent sign-in or the password again, as adding a credential does.
    if e != v.user.email && !crate::http::account::confirm::recently_authenticated(&state, &v) {
        let carried = crate::http::account::confirm::Carried {
            name: name.to_string(),
            email: email.to_string(),
        };
        return errors::redirect(&carried.confirm_url());
    }
    let result = crate::account::update_profile(&state.ctx(), &me(&req, &state, &v), n, e).await;
    match result {
        Ok(false) => back("profile"),
        Ok(true) => back("profile-verify"),
        Err(e) => errors::server_page(e),
    }
}

/// Checks the account's current password as a sign-in does: the per-account limit
/// first, and a wrong password counted toward the lockout, so that a stolen session
/// is no password oracle.
pub(crate) async fn password_ok(state: &AppState, v: &Viewer, password: &str) -> Result<bool, HttpResponse> {
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
            t().acct_locked_title,
            t().acct_locked,
            t().acct_locked_hint,
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
        problems.insert("confirm".into(), t().acct_error_passwords_differ.into());
    }
    match password_ok(&state, &v, params::field(&form, "current")).await {
        Ok(true) => {}
        Ok(false) => {
            problems.insert("current".into(), t().acct_error_not_current_password.into());
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
    let saved = crate::account::change_password(&state.ctx(), &me(&req, &state, &v), hash, remove_passkeys).await;
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
    let sessions = crate::account::sessions(&state.ctx(), v.user.id)
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
            t().acct_session_missing_title,
            t().acct_session_missing,
            t().acct_return_to_account_page,
        ),
        Ok(_) => {
            Event::new("session.ended")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(crate::http::guard::ip_text(&req, &state)))
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
                .ip(Some(crate::http::guard::ip_text(&req, &state)))
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
    let revoked = crate::account::revoke_consent(&state.ctx(), &me(&req, &state, &v), client_id).await;
    match revoked {
        Ok(true) => back("app-removed"),
        Ok(false) => pages::error_page(
            StatusCode::NOT_FOUND,
            t().acct_app_missing_title,
            t().acct_app_missing,
            t().acct_return_to_account_page,
        ),
        Err(e) => errors::server_page(e),
    }
}

#[derive(Template)]
#[template(path = "account_deleted.html")]
struct DeletedPage;

/// "Delete your account": with the current password, the account is deleted at once
/// (every session ended with back-channel logout, the session cookie cleared), or,
/// with `--account-deletion approval`, a request is recorded; `action=withdraw`
/// withdraws a request.
/// How recent a sign-in must be to delete an account that has no password.
const RECENT_SIGN_IN: i64 = 600;

pub async fn delete(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    use crate::admin::deletion::{self, Outcome};
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let ip = guard::ip_text(&req, &state);
    if params::field(&form, "action") == "withdraw" {
        return match deletion::withdraw(&state.ctx(), &v.user, ip).await {
            Ok(_) => back("deletion-withdrawn"),
            Err(e) => errors::server_page(e),
        };
    }
    let refuse = |msg: &str, status| {
        let problems = Problems::from([("delete".to_string(), msg.to_string())]);
        render(&state, &v, status, None, problems, None)
    };
    if crate::crypto::password::has_password(&v.user.password_hash) {
        match password_ok(&state, &v, params::field(&form, "password")).await {
            Ok(true) => {}
            Ok(false) => return refuse(t().acct_error_not_current_password, StatusCode::BAD_REQUEST).await,
            Err(resp) => return resp,
        }
    } else {
        // No password to confirm with (an account made through an upstream provider):
        // a sign-in in the last ten minutes, and the username typed out.
        if state.clock.now() - v.session.last_authenticated() > RECENT_SIGN_IN {
            return refuse(t().acct_error_delete_reauth, StatusCode::FORBIDDEN).await;
        }
        if params::field(&form, "username").trim() != v.user.username {
            return refuse(t().acct_error_type_username, StatusCode::BAD_REQUEST).await;
        }
    }
    match deletion::delete_own(&state.ctx(), &v.user, ip).await {
        Ok(Outcome::Requested) => back("deletion-requested"),
        Ok(Outcome::LastAdmin) => refuse(crate::admin::users::LAST_ADMIN, StatusCode::CONFLICT).await,
        Ok(Outcome::Deleted | Outcome::Gone) => {
            let mut resp = pages::render(StatusCode::OK, &DeletedPage);
            let clear = actix_web::cookie::Cookie::build(crate::http::cookies::session_name(&state), "")
                .path("/")
                .http_only(true)
                .secure(state.secure_cookies())
                .max_age(actix_web::cookie::time::Duration::ZERO)
                .finish();
            let _ = resp.add_cookie(&clear);
            resp
        }
        Err(e) => errors::server_page(e),
    }
}

/// Codes by mail as the second factor, on or off, with the current password (as
/// turning off the authenticator app needs).
pub async fn email_mfa(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    use crate::account::security::{set_email_codes, Refused};
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let on = match params::field(&form, "action") {
        "on" => true,
        "off" => false,
        _ => return crate::http::protocol::authorize::bad_request_page(t().acct_error_on_off),
    };
    let refuse = |msg: &str, status| {
        let problems = Problems::from([("email_mfa".to_string(), msg.to_string())]);
        render(&state, &v, status, None, problems, None)
    };
    match password_ok(&state, &v, params::field(&form, "password")).await {
        Ok(true) => {}
        Ok(false) => return refuse(t().acct_error_not_current_password, StatusCode::BAD_REQUEST).await,
        Err(resp) => return resp,
    }
    match set_email_codes(&state.ctx(), &me(&req, &state, &v), on).await {
        Ok(Ok(())) => back(if on { "email-mfa-on" } else { "email-mfa-off" }),
        Ok(Err(why)) => {
            let msg = match why {
                Refused::NoVerifiedEmail => t().acct_error_email_mfa_unverified,
                Refused::OtherFactor => t().acct_error_email_mfa_other,
                Refused::MailOff => t().acct_error_email_mfa_mail,
            };
            refuse(msg, StatusCode::CONFLICT).await
        }
        Err(e) => errors::server_page(e),
    }
}

/// The mail on each sign-in from a browser new to the account: on (the default) or off.
pub async fn notifications(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let on = params::field(&form, "new_device") == "on";
    match crate::account::security::set_notify(&state.ctx(), &me(&req, &state, &v), on).await {
        Ok(()) => back("notifications"),
        Err(e) => errors::server_page(e),
    }
}

/// Stops trusting one of the viewer's browsers: it is asked for the second step again.
pub async fn untrust_device(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let id = params::field(&form, "id").parse().unwrap_or(-1);
    match crate::account::security::untrust(&state.ctx(), &me(&req, &state, &v), id).await {
        Ok(true) => back("device-removed"),
        Ok(false) => pages::error_page(
            StatusCode::NOT_FOUND,
            t().acct_device_missing_title,
            t().acct_device_missing,
            t().acct_return_to_account_page,
        ),
        Err(e) => errors::server_page(e),
    }
}
