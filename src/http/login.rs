//! The sign-in forms' targets: password, then the second factor when the account has
//! one, then the step the sign-in was for (an authorization, a device, Tessera's own
//! pages); and the consent form.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::authorize::{bad_request_page, client_name, denied, respond, show_consent};
use super::guard::{ip_text, user_agent};
use super::{cookies, errors, guard, pages, params};
use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::auth::login::{authenticate, LoginError, Outcome};
use crate::auth::mfa::{self, MfaError, SecondFactor};
use crate::crypto::TokenHash;
use crate::oidc::interaction::{self, AfterLogin, Pending, ResumeError, SignIn, AMR_PASSWORD, AMR_PASSWORD_OTP};
use crate::oidc::Ctx;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "mfa.html")]
struct MfaPage<'a> {
    request_id: &'a str,
    csrf: &'a str,
    error: Option<&'a str>,
}

fn read_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

/// What the login form says the sign-in is for.
async fn purpose(state: &AppState, pending: &Pending) -> String {
    match pending {
        Pending::Login(r) => client_name(state, &r.client_id).await,
        Pending::Portal(_) => "your Tessera account".to_string(),
        _ => "your device".to_string(),
    }
}

pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page("The sign-in form was not submitted correctly.");
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let pending = match interaction::resume(&cx, request_id, csrf, browser.as_ref()).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))) => p,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let username = params::field(&form, "username");
    // Per-account limits come before any password is hashed.
    if let Some(limited) = guard::limit_account(&state, username) {
        return limited;
    }
    let (result, outcome) = authenticate(
        &state.db,
        &state.hasher,
        username,
        params::field(&form, "password"),
        state.settings.lockout,
        cx.now,
    )
    .await;
    // A correct password counts as a sign-in only once any second factor is passed.
    let (counter, event) = match outcome {
        Outcome::Ok => (None, "login.password_ok"),
        Outcome::Failed | Outcome::Unknown => (Some(&state.metrics.logins_failed), "login.failed"),
        Outcome::Locked => (Some(&state.metrics.logins_locked), "login.locked"),
    };
    if let Some(c) = counter {
        c.fetch_add(1, Ordering::Relaxed);
    }
    let ip = ip_text(&req, &state);
    let attempted = match outcome {
        Outcome::Unknown => state.log_key.pseudonym(username.trim()),
        _ => username.trim().chars().take(64).collect(),
    };
    let user = match result {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => {
            Event::new(event).actor(attempted).ip(Some(ip)).log(&state).await;
            let page = pages::LoginPage {
                client_name: &purpose(&state, &pending).await,
                request_id,
                csrf,
                username,
                error: Some("Invalid username or password."),
            };
            return pages::render(StatusCode::UNAUTHORIZED, &page);
        }
        Err(LoginError::Server(e)) => return errors::server_page(e),
    };
    let Some(browser) = browser else {
        return resume_error(ResumeError::Forged);
    };
    match mfa::enabled(&state, user.id).await {
        Ok(true) => {
            Event::new(event).actor(&user.username).ip(Some(ip)).log(&state).await;
            return match interaction::park_mfa(&cx, request_id, user.id, pending, &browser).await {
                Ok(parked) => mfa_page(StatusCode::OK, parked.request_id.expose(), parked.csrf.expose(), None),
                Err(e) => resume_error(e),
            };
        }
        Ok(false) => {}
        Err(e) => return errors::server_page(e),
    }
    let who = SignIn {
        user_id: user.id,
        amr: AMR_PASSWORD,
        user_agent: user_agent(&req),
        ip: Some(ip),
    };
    complete_sign_in(
        &req,
        &state,
        &cx,
        Resumed {
            request_id,
            pending,
            browser: &browser,
        },
        &who,
        &user.username,
    )
    .await
}

/// The parked request a sign-in resumes: its id, what it was for, and the browser
/// binding it was parked with.
pub struct Resumed<'a> {
    pub request_id: &'a str,
    pub pending: Pending,
    pub browser: &'a TokenHash,
}

/// Counts and audits a completed sign-in, then continues with what it was for.
pub async fn complete_sign_in(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
    username: &str,
) -> HttpResponse {
    state.metrics.logins_ok.fetch_add(1, Ordering::Relaxed);
    Event::new("login.ok")
        .actor(username)
        .ip(who.ip.clone())
        .detail(serde_json::json!({"amr": who.amr}))
        .log(state)
        .await;
    complete(req, state, cx, resumed, who).await
}

fn mfa_page(status: StatusCode, request_id: &str, csrf: &str, error: Option<&str>) -> HttpResponse {
    pages::render(
        status,
        &MfaPage {
            request_id,
            csrf,
            error,
        },
    )
}

/// The second factor (RFC 6238): a wrong code counts toward the account's lockout
/// like a wrong password, and a locked account must start over.
pub async fn mfa(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page("The verification form was not submitted correctly.");
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let (user_id, then) = match interaction::resume(&cx, request_id, csrf, browser.as_ref()).await {
        Ok(Pending::Mfa { user_id, then }) => (user_id, *then),
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let Some(browser) = browser else {
        return resume_error(ResumeError::Forged);
    };
    if let Some(limited) = guard::limit_second_factor(&state, user_id) {
        return limited;
    }
    let ip = ip_text(&req, &state);
    let user = match mfa::second_factor(&state, user_id, params::field(&form, "code"), &ip).await {
        Ok(SecondFactor::Passed { user, .. }) => user,
        Ok(SecondFactor::Wrong { .. }) => {
            state.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            return mfa_page(
                StatusCode::UNAUTHORIZED,
                request_id,
                csrf,
                Some("That code is not valid. Check your authenticator app and try again."),
            );
        }
        Ok(SecondFactor::Locked { user, by_this_code }) => {
            if by_this_code {
                state.metrics.logins_failed.fetch_add(1, Ordering::Relaxed);
            }
            return locked_out(&state, request_id, &user.username, ip).await;
        }
        Ok(SecondFactor::Gone) => return resume_error(ResumeError::Expired),
        Err(MfaError::Server(e)) => return errors::server_page(e),
        Err(e) => {
            tracing::error!(error = %e, user_id, "second factor could not be checked");
            return errors::server_page(crate::error::Internal::Failed);
        }
    };
    let who = SignIn {
        user_id,
        amr: AMR_PASSWORD_OTP,
        user_agent: user_agent(&req),
        ip: Some(ip),
    };
    complete_sign_in(
        &req,
        &state,
        &cx,
        Resumed {
            request_id,
            pending: then,
            browser: &browser,
        },
        &who,
        &user.username,
    )
    .await
}

async fn locked_out(state: &AppState, request_id: &str, username: &str, ip: String) -> HttpResponse {
    let cx = state.ctx();
    state.metrics.logins_locked.fetch_add(1, Ordering::Relaxed);
    Event::new("login.locked").actor(username).ip(Some(ip)).log(state).await;
    let _ = interaction::consume(&cx, request_id).await;
    pages::error_page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many attempts",
        "There were too many wrong codes for this account.",
        "Wait a few minutes, then sign in again from the start.",
    )
}

/// Opens the session and continues with what the sign-in was for.
async fn complete(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    resumed: Resumed<'_>,
    who: &SignIn,
) -> HttpResponse {
    let Resumed {
        request_id,
        pending,
        browser,
    } = resumed;
    let previous = params::cookie(req, cookies::session_name(state)).map(|v| TokenHash::of(&v));
    let request = match pending {
        Pending::Login(r) => r,
        Pending::DeviceLogin(code) => {
            return match interaction::finish_session_only(cx, request_id, who, previous).await {
                Ok((cookie, _)) => with_session(state, super::device::after_login(&code), cookie.expose()),
                Err(e) => resume_error(e),
            };
        }
        Pending::Portal(path) => {
            return match interaction::finish_session_only(cx, request_id, who, previous).await {
                Ok((cookie, _)) => with_session(state, errors::redirect(&path), cookie.expose()),
                Err(e) => resume_error(e),
            };
        }
        _ => return resume_error(ResumeError::Expired),
    };
    let done = match interaction::finish(cx, request_id, &request, who, previous, browser).await {
        Ok(done) => done,
        Err(e) => return resume_error(e),
    };
    let resp = match &done.next {
        AfterLogin::Respond(r) if !r.form_post => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, r.url()))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        AfterLogin::Respond(r) => respond(r),
        AfterLogin::Consent(parked) => show_consent(state, &request, who.user_id, parked).await,
        AfterLogin::Denied(r) => denied(state, &request.client_id, r).await,
    };
    with_session(state, resp, done.session_cookie.expose())
}

fn with_session(state: &AppState, mut resp: HttpResponse, cookie: &str) -> HttpResponse {
    let _ = resp.add_cookie(&cookies::session(state, cookie.to_string()));
    resp
}

pub async fn consent(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page("The consent form was not submitted correctly.");
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let request = match interaction::resume(&cx, request_id, csrf, browser.as_ref()).await {
        Ok(Pending::Consent(r)) => r,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let approve = match params::field(&form, "decision") {
        "allow" => true,
        "deny" => false,
        _ => return bad_request_page("The consent form did not say allow or deny."),
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let session = match interaction::current_session(&cx, cookie.as_deref()).await {
        Ok(Some(s)) => s,
        Ok(None) => return resume_error(ResumeError::Expired),
        Err(e) => return errors::server_page(e),
    };
    match interaction::decide_consent(&cx, request_id, &request, &session, approve).await {
        Ok(r) => {
            // The consent is stored: whatever happens now, the user goes on.
            let name = crate::account::actor_name(&state, session.user_id).await;
            Event::new(if approve { "consent.granted" } else { "consent.denied" })
                .actor(name)
                .target(format!("client:{}", request.client_id))
                .ip(Some(ip_text(&req, &state)))
                .detail(serde_json::json!({"scope": request.scope}))
                .log(&state)
                .await;
            respond(&r)
        }
        Err(e) => resume_error(e),
    }
}

pub use super::errors::resume_page as resume_error;
