//! The login and consent forms' targets.

use std::collections::HashMap;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::authorize::{bad_request_page, client_name, respond, show_consent};
use super::{cookies, errors, guard, pages, params};
use crate::auth::limits::Bucket;
use crate::auth::login::{authenticate, LoginError, Outcome};
use crate::crypto::TokenHash;
use crate::oidc::login::{self, AfterLogin, Pending, ResumeError};
use crate::oidc::OAuthError;
use crate::state::AppState;

fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map(String::as_str).unwrap_or_default()
}

fn read_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page("The sign-in form was not submitted correctly.");
    };
    let (request_id, csrf) = (field(&form, "request_id"), field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let pending = match login::resume(&state, request_id, csrf, browser.as_ref()).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_))) => p,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let username = field(&form, "username");
    // Per-account limits come before any password is hashed.
    if let Some(limited) = guard::limit_account(&state, username) {
        return limited;
    }
    let (result, outcome) = authenticate(
        &state.db,
        &state.hasher,
        username,
        field(&form, "password"),
        state.settings.lockout,
        state.clock.now(),
    )
    .await;
    let counter = match outcome {
        Outcome::Ok => &state.metrics.logins_ok,
        Outcome::Failed => &state.metrics.logins_failed,
        Outcome::Locked => &state.metrics.logins_locked,
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let user = match result {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => {
            let client_name = match &pending {
                Pending::Login(r) => client_name(&state, &r.client_id).await,
                _ => "your device".to_string(),
            };
            let page = pages::LoginPage {
                client_name: &client_name,
                request_id,
                csrf,
                username,
                error: Some("Invalid username or password."),
            };
            return pages::render(StatusCode::UNAUTHORIZED, &page);
        }
        Err(LoginError::Hashing(e)) => return errors::server_page(&OAuthError::from(e)),
        Err(LoginError::Db(e)) => return errors::server_page(&OAuthError::from(e)),
    };
    let previous = params::cookie(&req, cookies::session_name(&state)).map(|v| TokenHash::of(&v));
    let request = match pending {
        Pending::Login(r) => r,
        Pending::DeviceLogin(code) => {
            return match login::finish_session_only(&state, request_id, user.id, previous).await {
                Ok((cookie, _)) => {
                    let mut resp = super::device::after_login(&code);
                    let _ = resp.add_cookie(&cookies::session(&state, cookie.expose().to_string()));
                    resp
                }
                Err(e) => resume_error(e),
            };
        }
        _ => return resume_error(ResumeError::Expired),
    };
    let Some(browser) = browser else {
        return resume_error(ResumeError::Forged);
    };
    let done = match login::finish(&state, request_id, &request, user.id, previous, &browser).await {
        Ok(done) => done,
        Err(e) => return resume_error(e),
    };
    let mut resp = match &done.next {
        AfterLogin::Respond(r) if !r.form_post => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, r.url()))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        AfterLogin::Respond(r) => respond(r),
        AfterLogin::Consent(parked) => show_consent(&state, &request, user.id, parked).await,
    };
    let _ = resp.add_cookie(&cookies::session(&state, done.session_cookie.expose().to_string()));
    resp
}

pub async fn consent(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page("The consent form was not submitted correctly.");
    };
    let (request_id, csrf) = (field(&form, "request_id"), field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let request = match login::resume(&state, request_id, csrf, browser.as_ref()).await {
        Ok(Pending::Consent(r)) => r,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let approve = match field(&form, "decision") {
        "allow" => true,
        "deny" => false,
        _ => return bad_request_page("The consent form did not say allow or deny."),
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let session = match login::current_session(&state, cookie.as_deref()).await {
        Ok(Some(s)) => s,
        Ok(None) => return resume_error(ResumeError::Expired),
        Err(e) => return errors::server_page(&e),
    };
    match login::decide_consent(&state, request_id, &request, &session, approve).await {
        Ok(r) => respond(&r),
        Err(e) => resume_error(e),
    }
}

pub fn resume_error(e: ResumeError) -> HttpResponse {
    match e {
        ResumeError::Expired => pages::error_page(
            StatusCode::BAD_REQUEST,
            "Sign-in expired",
            "This page has expired or was already used.",
            "Return to the application and sign in again.",
        ),
        ResumeError::Forged => pages::error_page(
            StatusCode::FORBIDDEN,
            "Sign-in refused",
            "The form could not be verified for this browser.",
            "Make sure cookies are enabled, then return to the application and sign in again.",
        ),
        ResumeError::Server(e) => errors::server_page(&e),
    }
}
