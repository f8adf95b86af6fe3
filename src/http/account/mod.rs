//! `/account`: the signed-in user's own profile, password, sessions, passkeys, codes
//! by mail, trusted devices, notices and the applications they allowed (the
//! authenticator app is in `account_totp`). Every form carries the session's CSRF token.

pub mod confirm;
pub mod forms;
pub mod invite;
pub mod reauth;
pub mod reset;
pub mod setup;
pub mod totp;
pub(crate) mod view;

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::db::sessions::SessionInfo;
use crate::domain::{Email, NewPassword};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, pages, params};
use crate::i18n::t;
use crate::oidc::logout;
use crate::state::AppState;
use forms::{me, posted};
use reauth::{password_ok, recently_authenticated, Carried};

pub use crate::domain::Problems;
pub(crate) use view::{back, render};
pub use view::{fill_strong2, fill_tag, SessionRow};

use view::flash_text;

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
    let carried = Carried::read(query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
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
    if e != v.user.email && !recently_authenticated(&state, &v) {
        let carried = Carried {
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
                .log(&state.db, state.clock.now())
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
                .log(&state.db, state.clock.now())
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
        _ => return pages::bad_request_page(t().acct_error_on_off),
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
