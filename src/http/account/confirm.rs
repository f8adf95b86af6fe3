//! `/account/confirm`: the current password (or one of the account's passkeys) asked
//! again before a credential is added (an authenticator app, a passkey, a link to an
//! upstream account) or the email address is changed, so that a stolen session cannot
//! plant a way back in that outlives a password change. A confirmation holds for
//! `reauth::REAUTH_WINDOW` seconds. A change of address carries the typed values through the
//! confirmation, back to the profile form.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::http::account::forms::{me, posted};
use crate::http::account::reauth::{password_ok, Carried};
use crate::http::params;
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, pages};
use crate::state::AppState;

/// Where a confirmation leads back to: the step that asked for it (for a change of
/// address, the profile form with the typed values: `Carried::back`).
fn next_path(next: &str) -> &'static str {
    match next {
        "totp" => "/account/totp",
        "link" => "/account#linked-accounts",
        _ => "/account#passkeys-h",
    }
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
    /// For a change of address: what was typed.
    carried: Carried,
}

async fn page(
    state: &AppState,
    v: &Viewer,
    status: StatusCode,
    (next, carried): (&str, Carried),
    error: Option<&str>,
) -> HttpResponse {
    let passkey = match crate::auth::passkeys::list(&state.ctx(), v.user.id).await {
        Ok(keys) => !keys.is_empty(),
        Err(e) => return errors::server_page(e),
    };
    let next = match next {
        "totp" => "totp",
        "link" => "link",
        "email" => "email",
        _ => "passkey",
    };
    pages::render(
        status,
        &ConfirmPage {
            csrf: &v.csrf,
            next,
            error,
            password: crate::crypto::password::has_password(&v.user.password_hash),
            passkey,
            carried,
        },
    )
}

/// Where a successful confirmation for `next` goes.
fn onward(next: &str, form: &std::collections::HashMap<String, String>) -> HttpResponse {
    if next == "email" {
        let carried = Carried::read(form.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        return errors::redirect(&carried.back());
    }
    errors::redirect(next_path(next))
}

fn carried_in(next: &str, form: &std::collections::HashMap<String, String>) -> (String, Carried) {
    let carried = match next {
        "email" => Carried::read(form.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        _ => Carried::default(),
    };
    (next.to_string(), carried)
}

pub async fn confirm_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let query: std::collections::HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let (next, carried) = carried_in(params::field(&query, "next"), &query);
    page(&state, &v, StatusCode::OK, (&next, carried), None).await
}

pub async fn confirm_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let (next, carried) = carried_in(params::field(&form, "next"), &form);
    let ip = crate::http::guard::ip_text(&req, &state);
    match password_ok(&state, &v, params::field(&form, "password")).await {
        Ok(true) => {}
        Ok(false) => {
            Event::new("account.reauth_failed")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(ip))
                .log(&state.db, state.clock.now())
                .await;
            return page(
                &state,
                &v,
                StatusCode::UNAUTHORIZED,
                (&next, carried),
                Some(crate::i18n::t().acct_confirm_wrong),
            )
            .await;
        }
        Err(resp) => return resp,
    }
    let marked = crate::account::mark_reauthenticated(&state.ctx(), &me(&req, &state, &v)).await;
    match marked {
        Ok(()) => onward(&next, &form),
        Err(e) => errors::server_page(e),
    }
}

/// `POST /account/confirm/passkey/options`: the challenge for confirming with one of
/// the account's own passkeys (the page's script asks, with the CSRF header).
pub async fn passkey_options(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Login) {
        return limited;
    }
    let v = match crate::http::signin::passkey_forms::json_viewer(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    match crate::auth::passkeys::reauth_options(&state.ctx(), &v.user).await {
        Ok(options) => crate::http::signin::passkey_forms::options_json(Some(options)),
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
    let (next, carried) = carried_in(get("next"), &form);
    let assertion = crate::auth::passkeys::Assertion {
        credential_id: get("credential_id"),
        client_data: get("client_data"),
        authenticator_data: get("authenticator_data"),
        signature: get("signature"),
    };
    match crate::auth::passkeys::reauthenticate(&state.ctx(), &v.user, &assertion).await {
        Ok(()) => {}
        Err(crate::auth::passkeys::PasskeyError::Refused(why)) => {
            Event::new("account.reauth_failed")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(crate::http::guard::ip_text(&req, &state)))
                .detail(serde_json::json!({"method": "passkey", "reason": why}))
                .log(&state.db, state.clock.now())
                .await;
            return page(&state, &v, StatusCode::UNAUTHORIZED, (&next, carried), Some(why)).await;
        }
        Err(crate::auth::passkeys::PasskeyError::Server(e)) => return errors::server_page(e),
    }
    let marked = crate::account::mark_reauthenticated(&state.ctx(), &me(&req, &state, &v)).await;
    match marked {
        Ok(()) => onward(&next, &form),
        Err(e) => errors::server_page(e),
    }
}
