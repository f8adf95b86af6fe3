//! `/account/confirm`: the current password (or one of the account's passkeys) asked
//! again before a credential is added (an authenticator app, a passkey, a link to an
//! upstream account), so that a stolen session cannot plant a way
//! back in that outlives a password change. A confirmation holds for
//! `REAUTH_WINDOW` seconds.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::account::{password_ok, posted};
use super::params;
use super::portal::{self, Viewer};
use super::{errors, guard, pages};
use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::state::AppState;

/// Seconds after a sign-in or a password confirmation during which credentials may
/// be added.
pub const REAUTH_WINDOW: i64 = 300;

/// Where a confirmation leads back to: the step that asked for it.
fn next_path(next: &str) -> &'static str {
    match next {
        "totp" => "/account/totp",
        "link" => "/account#linked-accounts",
        _ => "/account#passkeys-h",
    }
}

/// Whether the viewer proved who they are recently enough to add a credential.
pub fn recently_authenticated(state: &AppState, v: &Viewer) -> bool {
    state.clock.now() - v.session.last_authenticated() <= REAUTH_WINDOW
}

/// The confirmation page's address for a step (`totp`, `link` or `passkey`).
pub fn confirm_url(next: &str) -> String {
    format!(
        "/account/confirm?next={}",
        match next {
            "totp" | "link" => next,
            _ => "passkey",
        }
    )
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage<'a> {
    csrf: &'a str,
    next: &'a str,
    error: Option<&'a str>,
    /// The account has a password to confirm with.
    password: bool,
    /// The account has a passkey to confirm with.
    passkey: bool,
}

async fn page(state: &AppState, v: &Viewer, status: StatusCode, next: &str, error: Option<&str>) -> HttpResponse {
    let passkey = match crate::auth::passkeys::list(state, v.user.id).await {
        Ok(keys) => !keys.is_empty(),
        Err(e) => return errors::server_page(e),
    };
    let next = match next {
        "totp" => "totp",
        "link" => "link",
        _ => "passkey",
    };
    pages::render(
        status,
        &ConfirmPage {
            csrf: &v.csrf,
            next,
            error,
            password: crate::auth::password::has_password(&v.user.password_hash),
            passkey,
        },
    )
}

pub async fn confirm_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let next = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "next")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    page(&state, &v, StatusCode::OK, &next, None).await
}

pub async fn confirm_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let next = params::field(&form, "next").to_string();
    let ip = super::guard::ip_text(&req, &state);
    match password_ok(&state, &v, params::field(&form, "password")).await {
        Ok(true) => {}
        Ok(false) => {
            Event::new("account.reauth_failed")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(ip))
                .log(&state)
                .await;
            return page(
                &state,
                &v,
                StatusCode::UNAUTHORIZED,
                &next,
                Some(crate::i18n::t().acct_confirm_wrong),
            )
            .await;
        }
        Err(resp) => return resp,
    }
    let marked = crate::account::mark_reauthenticated(&state, &super::account::me(&req, &state, &v)).await;
    match marked {
        Ok(()) => errors::redirect(next_path(&next)),
        Err(e) => errors::server_page(e),
    }
}

/// `POST /account/confirm/passkey/options`: the challenge for confirming with one of
/// the account's own passkeys (the page's script asks, with the CSRF header).
pub async fn passkey_options(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Login) {
        return limited;
    }
    let v = match super::passkeys::json_viewer(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match crate::auth::passkeys::reauth_options(&state, &v.user).await {
        Ok(options) => super::passkeys::options_json(Some(options)),
        Err(e) => errors::passkey_json(e),
    }
}

/// `POST /account/confirm/passkey`: a confirmation with one of the account's passkeys,
/// the way an account without a password confirms (a passkey with user verification
/// proves as much as the password does).
pub async fn passkey_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let get = |n: &str| params::field(&form, n);
    let next = get("next").to_string();
    let assertion = crate::auth::passkeys::Assertion {
        credential_id: get("credential_id"),
        client_data: get("client_data"),
        authenticator_data: get("authenticator_data"),
        signature: get("signature"),
    };
    match crate::auth::passkeys::reauthenticate(&state, &v.user, &assertion).await {
        Ok(()) => {}
        Err(crate::auth::passkeys::PasskeyError::Refused(why)) => {
            Event::new("account.reauth_failed")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(super::guard::ip_text(&req, &state)))
                .detail(serde_json::json!({"method": "passkey", "reason": why}))
                .log(&state)
                .await;
            return page(&state, &v, StatusCode::UNAUTHORIZED, &next, Some(why)).await;
        }
        Err(crate::auth::passkeys::PasskeyError::Server(e)) => return errors::server_page(e),
    }
    let marked = crate::account::mark_reauthenticated(&state, &super::account::me(&req, &state, &v)).await;
    match marked {
        Ok(()) => errors::redirect(next_path(&next)),
        Err(e) => errors::server_page(e),
    }
}
