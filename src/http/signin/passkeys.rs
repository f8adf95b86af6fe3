//! Passkey endpoints: the account page's registration (JSON, CSRF in `X-CSRF-Token`)
//! and removal, and signing in with a passkey from the login page.

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use std::collections::HashMap;

use serde_json::{json, Value};

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::auth::passkeys::{self, Assertion, Made, PasskeyError};
use crate::crypto::TokenHash;
use crate::domain::Problems;
use crate::http::guard::{ip_text, user_agent};
use crate::http::signin::login::{complete_sign_in, resume_error, Resumed};
use crate::http::signin::portal::{self, Viewer};
use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::interaction::{self, Pending, SignIn, AMR_PASSKEY};
use crate::state::AppState;

pub async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(include_str!("../../../static/passkey.js"))
}

fn json_error(status: StatusCode, description: &str) -> HttpResponse {
    errors::json_error(status, "invalid_request", description, None)
}

/// Adding a passkey needs a recent sign-in or password confirmation; the page's
/// script follows `confirm` to the confirmation page.
fn reauth_required() -> HttpResponse {
    let mut b = HttpResponse::build(StatusCode::FORBIDDEN);
    errors::no_store(&mut b);
    b.json(json!({
        "error": "reauthentication_required",
        "error_description": "confirm your password first",
        "confirm": crate::http::account::confirm::confirm_url("passkey"),
    }))
}

/// The signed-in viewer of a JSON call with the session's CSRF token in the header.
pub(crate) async fn json_viewer(req: &HttpRequest, state: &AppState) -> Result<Viewer, HttpResponse> {
    if let Some(refused) = guard::cross_origin(req, state) {
        return Err(refused);
    }
    let Some(v) = portal::viewer(req, state).await? else {
        return Err(json_error(
            StatusCode::UNAUTHORIZED,
            "your session has ended; sign in again",
        ));
    };
    if !portal::csrf_header_ok(req, &v) {
        return Err(json_error(
            StatusCode::FORBIDDEN,
            "the request could not be verified; reload the page",
        ));
    }
    Ok(v)
}

pub async fn registration_options(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match json_viewer(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    if !crate::http::account::confirm::recently_authenticated(&state, &v) {
        return reauth_required();
    }
    match passkeys::registration_options(&state, &v.user).await {
        Ok(options) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(options)
        }
        Err(e) => errors::passkey_json(e),
    }
}

#[derive(serde::Deserialize)]
struct Registration {
    #[serde(default)]
    name: String,
    client_data: String,
    attestation_object: String,
}

pub async fn register(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let v = match json_viewer(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    if !crate::http::account::confirm::recently_authenticated(&state, &v) {
        return reauth_required();
    }
    let Ok(r) = serde_json::from_slice::<Registration>(&body) else {
        return json_error(StatusCode::BAD_REQUEST, "the passkey was not sent correctly");
    };
    match passkeys::register(&state, &v.user, &r.name, &r.client_data, &r.attestation_object).await {
        Ok(()) => {
            let mut b = HttpResponse::Created();
            errors::no_store(&mut b);
            b.json(json!({"ok": true}))
        }
        Err(e) => errors::passkey_json(e),
    }
}

pub async fn remove(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match crate::http::account::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let id = form.get("id").and_then(|i| i.parse().ok()).unwrap_or(-1);
    match passkeys::remove(&state, &v.user, id).await {
        Ok(passkeys::Removed::Done(_)) => errors::redirect("/account?done=passkey-removed"),
        Ok(passkeys::Removed::LastWayIn) => pages::error_page(
            StatusCode::CONFLICT,
            crate::i18n::t().passkey_last_title,
            crate::i18n::t().passkey_last,
            crate::i18n::t().passkey_last_hint,
        ),
        Ok(passkeys::Removed::NotFound) => pages::error_page(
            StatusCode::NOT_FOUND,
            crate::i18n::t().passkey_not_found_title,
            crate::i18n::t().passkey_gone,
            crate::i18n::t().passkey_gone_hint,
        ),
        Err(e) => errors::server_page(e),
    }
}

/// The form of a page that makes a passkey through a mailed link.
pub fn link_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    form_of(req, body)
}

/// A link page's options request that was not a form.
pub fn bad_json() -> HttpResponse {
    json_error(
        StatusCode::BAD_REQUEST,
        "the form was not sent correctly; reload the page",
    )
}

/// Options for a passkey made through a mailed link, or `None` for a dead link.
pub fn options_json(options: Option<Value>) -> HttpResponse {
    match options {
        Some(o) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(o)
        }
        None => json_error(StatusCode::GONE, crate::i18n::t().acct_passkey_link_dead),
    }
}

/// The first thing to correct before a passkey can be made (a username, say), for the
/// page's script to show.
pub fn problem_json(problems: &Problems) -> HttpResponse {
    let said = problems.values().next().map(String::as_str).unwrap_or_default();
    json_error(StatusCode::BAD_REQUEST, said)
}

/// The new credential a link page posted, verified (its challenge is spent with the
/// use case's own changes).
pub fn made(state: &AppState, form: &HashMap<String, String>) -> Result<Made, PasskeyError> {
    let get = |n: &str| params::field(form, n);
    passkeys::verify_creation(state, get("name"), get("client_data"), get("attestation_object"))
}

fn form_of(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

/// Options for signing in with a passkey, bound to the login form's parked request.
pub async fn login_options(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_json(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = form_of(&req, &body) else {
        return json_error(StatusCode::BAD_REQUEST, "the sign-in form was not sent correctly");
    };
    let get = |n: &str| params::field(&form, n);
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    match interaction::resume(&cx, get("request_id"), get("csrf"), browser.as_ref()).await {
        Ok(Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_)) => {}
        _ => return json_error(StatusCode::BAD_REQUEST, "this sign-in page has expired; reload it"),
    }
    match passkeys::login_options(&state, get("request_id")).await {
        Ok(options) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(options)
        }
        Err(e) => errors::passkey_json(e),
    }
}

/// The passkey form's target: a verified assertion signs the user in (a passkey with
/// user verification is two factors), then continues like a password sign-in.
pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = form_of(&req, &body) else {
        return crate::http::protocol::authorize::bad_request_page(crate::i18n::t().passkey_bad_form);
    };
    let get = |n: &str| params::field(&form, n);
    let request_id = get("request_id");
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let pending = match interaction::resume(&cx, request_id, get("csrf"), browser.as_ref()).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))) => p,
        Ok(_) => return resume_error(interaction::ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let Some(browser) = browser else {
        return resume_error(interaction::ResumeError::Forged);
    };
    let assertion = Assertion {
        credential_id: get("credential_id"),
        client_data: get("client_data"),
        authenticator_data: get("authenticator_data"),
        signature: get("signature"),
    };
    let ip = ip_text(&req, &state);
    let user_id = match passkeys::authenticate(&state, request_id, &assertion).await {
        Ok(uid) => uid,
        Err(PasskeyError::Refused(why)) => {
            Event::new("login.failed")
                .ip(Some(ip))
                .detail(json!({"method": "passkey", "reason": why}))
                .log(&state)
                .await;
            return pages::error_page(
                StatusCode::UNAUTHORIZED,
                crate::i18n::t().passkey_refused_title,
                &crate::i18n::t().fill(crate::i18n::t().passkey_refused, "why", why),
                crate::i18n::t().passkey_failed_hint,
            );
        }
        Err(PasskeyError::Server(e)) => return errors::server_page(e),
    };
    let user = match crate::account::signed_in_user(&state.ctx(), user_id).await {
        Ok(Some(u)) if !u.disabled => u,
        Ok(_) => {
            return pages::error_page(
                StatusCode::UNAUTHORIZED,
                crate::i18n::t().passkey_refused_title,
                crate::i18n::t().passkey_cannot,
                crate::i18n::t().common_ask_admin,
            )
        }
        Err(e) => return errors::server_page(e),
    };
    let who = SignIn {
        user_id,
        amr: AMR_PASSKEY.into(),
        user_agent: user_agent(&req),
        ip: Some(ip.clone()),
        federated: None,
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
