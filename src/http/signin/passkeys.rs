//! Passkey endpoints: the account page's registration (JSON, CSRF in `X-CSRF-Token`)
//! and removal, and signing in with a passkey from the login page.

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use serde_json::json;

use crate::auth::limits::Bucket;
use crate::auth::passkeys::{self, Assertion};
use crate::crypto::TokenHash;
use crate::http::errors::resume_page as resume_error;
use crate::http::signin::passkey_forms::{form_of, json_error, json_viewer};
use crate::http::{cookies, errors, guard, pages, params};
use crate::signin::passkey::Refusal;
use crate::state::AppState;

pub async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(include_str!("../../../static/passkey.js"))
}

/// Adding a passkey needs a recent sign-in or password confirmation; the page's
/// script follows `confirm` to the confirmation page.
fn reauth_required() -> HttpResponse {
    let mut b = HttpResponse::build(StatusCode::FORBIDDEN);
    errors::no_store(&mut b);
    b.json(json!({
        "error": "reauthentication_required",
        "error_description": "confirm your password first",
        "confirm": crate::http::account::reauth::confirm_url("passkey"),
    }))
}

pub async fn registration_options(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match json_viewer(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    if !crate::http::account::reauth::recently_authenticated(&state, &v) {
        return reauth_required();
    }
    match passkeys::registration_options(&state.ctx(), &v.user).await {
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
    if !crate::http::account::reauth::recently_authenticated(&state, &v) {
        return reauth_required();
    }
    let Ok(r) = serde_json::from_slice::<Registration>(&body) else {
        return json_error(StatusCode::BAD_REQUEST, "the passkey was not sent correctly");
    };
    match passkeys::register(&state.ctx(), &v.user, &r.name, &r.client_data, &r.attestation_object).await {
        Ok(()) => {
            let mut b = HttpResponse::Created();
            errors::no_store(&mut b);
            b.json(json!({"ok": true}))
        }
        Err(e) => errors::passkey_json(e),
    }
}

pub async fn remove(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match crate::http::account::forms::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let id = form.get("id").and_then(|i| i.parse().ok()).unwrap_or(-1);
    match passkeys::remove(&state.ctx(), &v.user, id).await {
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
    if crate::signin::resume_login(&cx, (get("request_id"), get("csrf")), browser.as_ref())
        .await
        .is_err()
    {
        return json_error(StatusCode::BAD_REQUEST, "this sign-in page has expired; reload it");
    }
    match passkeys::login_options(&state.ctx(), get("request_id")).await {
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
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = form_of(&req, &body) else {
        return pages::bad_request_page(crate::i18n::t().passkey_bad_form);
    };
    let get = |n: &str| params::field(&form, n);
    let assertion = Assertion {
        credential_id: get("credential_id"),
        client_data: get("client_data"),
        authenticator_data: get("authenticator_data"),
        signature: get("signature"),
    };
    let browser = crate::http::signin::steps::browser(&req, &state);
    let names = (get("request_id"), get("csrf"));
    let t = crate::i18n::t();
    match crate::signin::passkey::sign_in(&state.ctx(), names, &assertion, &browser).await {
        Ok(done) => crate::http::signin::steps::signed_in(&state, done).await,
        Err(Refusal::Resume(e)) => resume_error(e),
        Err(Refusal::Assertion(why)) => pages::error_page(
            StatusCode::UNAUTHORIZED,
            t.passkey_refused_title,
            &t.fill(t.passkey_refused, "why", why),
            t.passkey_failed_hint,
        ),
        Err(Refusal::Account) => pages::error_page(
            StatusCode::UNAUTHORIZED,
            t.passkey_refused_title,
            t.passkey_cannot,
            t.common_ask_admin,
        ),
        Err(Refusal::Server(e)) => errors::server_page(e),
    }
}
