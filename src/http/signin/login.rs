//! The sign-in forms' targets: the password (or a link or code by mail, `signin_link`),
//! the second factor with "Send a new code", the login form's own posts (the language
//! picker, the username step) and the consent form. Each reads its form, makes one call
//! into the sign-in journey (`crate::signin`) and renders the step it answers.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::crypto::TokenHash;
use crate::http::errors::{respond, resume_page as resume_error};
use crate::http::pages::bad_request_page;
use crate::http::signin::login_form::{about, buttons, purpose};
use crate::http::signin::steps::{browser, mfa_page, next, refused, unverified_page};
use crate::http::{cookies, errors, guard, pages, params};
use crate::lifecycle::email_mfa::Sent;
use crate::signin::consent::Decision;
use crate::signin::first::{NotSignedIn, PasswordForm};
use crate::signin::second::CodeForm;
use crate::signin::Pending;
use crate::state::AppState;

fn read_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_signin_form);
    };
    let password = PasswordForm {
        request_id: params::field(&form, "request_id"),
        csrf: params::field(&form, "csrf"),
        username: params::field(&form, "username"),
        password: params::field(&form, "password"),
    };
    match crate::signin::first::password(&state.limits, &state.ctx(), &password, &browser(&req, &state)).await {
        Ok(step) => next(&state, step).await,
        Err(NotSignedIn::Invalid { pending, named }) => {
            let pending = *pending;
            let step = named.map_or(pages::LoginStep::Both, pages::LoginStep::named);
            let error = Some(crate::i18n::t().signin_invalid);
            let mut resp = login_form(&state, &form, &pending, password.username, step, error).await;
            *resp.status_mut() = StatusCode::UNAUTHORIZED;
            resp
        }
        Err(NotSignedIn::Unverified { sent }) => unverified_page(sent),
        Err(NotSignedIn::Refused(e)) => refused(e),
    }
}

/// The second factor (RFC 6238, or a code sent by mail).
pub async fn mfa(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_verification_form);
    };
    let code = CodeForm {
        request_id: params::field(&form, "request_id"),
        csrf: params::field(&form, "csrf"),
        code: params::field(&form, "code"),
        remember: params::field(&form, "remember") == "on",
    };
    match crate::signin::second::check_code(&state.limits, &state.ctx(), &code, &browser(&req, &state)).await {
        Ok(step) => next(&state, step).await,
        Err(e) => refused(e),
    }
}

/// The login form's own posts that show it again (the picker, the username step):
/// the form, after the origin and rate checks, and its parked sign-in, peeked, not
/// used up.
async fn reposted(
    req: &HttpRequest,
    state: &AppState,
    body: &Bytes,
) -> Result<(HashMap<String, String>, Pending), HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state).or_else(|| guard::limit_page(req, state, Bucket::Login)) {
        return Err(refused);
    }
    let form = read_form(req, body).ok_or_else(|| bad_request_page(crate::i18n::t().err_signin_form))?;
    let browser = params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v));
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    match crate::signin::resume_login(&state.ctx(), (request_id, csrf), browser.as_ref()).await {
        Ok(p) => Ok((form, p)),
        Err(e) => Err(resume_error(e)),
    }
}

/// The login page again for a parked sign-in, at `step`.
async fn login_form(
    state: &AppState,
    form: &HashMap<String, String>,
    pending: &Pending,
    username: &str,
    step: pages::LoginStep,
    error: Option<&str>,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: about(state, pending).await,
        client_name: &purpose(state, pending).await,
        request_id: params::field(form, "request_id"),
        csrf: params::field(form, "csrf"),
        username,
        error,
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: buttons(state).await,
        cancel: None,
        step,
    };
    pages::render(StatusCode::OK, &page)
}

/// The login page's language picker: the same parked sign-in shown again in the
/// picked language, which this browser then keeps (a cookie that outranks the
/// application's `ui_locales` and the browser's `Accept-Language`).
pub async fn language(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (form, pending) = match reposted(&req, &state, &body).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let Some(picked) = crate::i18n::Locale::from_tag(params::field(&form, "lang")) else {
        return bad_request_page(crate::i18n::t().err_language);
    };
    crate::i18n::prefer(Some(picked), crate::i18n::Source::Picked);
    let mut resp = login_form(
        &state,
        &form,
        &pending,
        "",
        pages::LoginStep::first(&state.settings),
        None,
    )
    .await;
    let _ = resp.add_cookie(&crate::http::lang::cookie(&state, picked));
    resp
}

/// `--passkey-mode username-first` (and `passkey-only`): the username alone, then the
/// step for that account: its passkey first when it has one (its password remaining
/// the alternative when it has one), else its password. An empty username (another account) asks for the username again.
pub async fn username(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (form, pending) = match reposted(&req, &state, &body).await {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    let username = params::field(&form, "username").trim();
    let step = if username.is_empty() {
        pages::LoginStep::Username
    } else {
        match crate::auth::passkeys::named(&state.ctx(), username).await {
            Ok(named) => pages::LoginStep::named(named),
            Err(e) => return errors::server_page(e),
        }
    };
    login_form(&state, &form, &pending, username, step, None).await
}

/// "Send a new code" on the second-factor page: a refusal says how long to wait.
pub async fn resend(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    match crate::signin::second::resend(&state.ctx(), request_id, csrf, &browser(&req, &state)).await {
        Ok(page) => {
            let status = match page.unsent {
                None => StatusCode::OK,
                Some(Sent::Unverified) => StatusCode::CONFLICT,
                Some(_) => StatusCode::TOO_MANY_REQUESTS,
            };
            mfa_page(&page, status)
        }
        Err(e) => refused(e),
    }
}

/// The consent form's answer.
pub async fn consent(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return bad_request_page(crate::i18n::t().err_consent_form);
    };
    let approve = match params::field(&form, "decision") {
        "allow" => true,
        "deny" => false,
        _ => return bad_request_page(crate::i18n::t().err_consent_choice),
    };
    let decision = Decision {
        request_id: params::field(&form, "request_id"),
        csrf: params::field(&form, "csrf"),
        approve,
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let cx = state.ctx();
    match crate::signin::consent::decide(&cx, &decision, &browser(&req, &state), cookie.as_deref()).await {
        Ok(r) => respond(&r),
        Err(e) => resume_error(e),
    }
}
