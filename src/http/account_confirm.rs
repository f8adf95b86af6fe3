//! `/account/confirm`: the current password asked again before a credential is added
//! (an authenticator app, a passkey, a link to an upstream account), so that a stolen session cannot plant a way
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
}

fn page(v: &Viewer, status: StatusCode, next: &str, error: Option<&str>) -> HttpResponse {
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
    page(&v, StatusCode::OK, &next, None)
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
                &v,
                StatusCode::UNAUTHORIZED,
                &next,
                Some(crate::i18n::t().acct_confirm_wrong),
            );
        }
        Err(resp) => return resp,
    }
    let marked = crate::account::mark_reauthenticated(&state, &super::account::me(&req, &state, &v)).await;
    match marked {
        Ok(()) => errors::redirect(next_path(&next)),
        Err(e) => errors::server_page(e),
    }
}
