//! `/account/totp`: enrolling an authenticator app (QR code drawn on the server, a
//! first code to confirm, recovery codes shown once) and turning it off.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::audit::Event;
use crate::auth::limits::Bucket;
use crate::auth::{mfa, totp};
use crate::domain::Problems;
use crate::http::account::forms::posted;
use crate::http::account::reauth::{confirm_url, password_ok, recently_authenticated};
use crate::http::account::view::{back, render};
use crate::http::params;
use crate::http::signin::portal::{self, Viewer};
use crate::http::{errors, guard, pages};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "totp.html")]
struct TotpPage<'a> {
    csrf: &'a str,
    qr_svg: &'a str,
    secret: &'a str,
    error: Option<&'a str>,
    recovery_codes: Option<Vec<String>>,
}

async fn totp_page(state: &AppState, v: &Viewer, status: StatusCode, error: Option<&str>) -> HttpResponse {
    let secret = match mfa::begin(&state.ctx(), v.user.id).await {
        Ok(Some(s)) => s,
        Ok(None) => return errors::redirect("/account"),
        Err(mfa::MfaError::Server(e)) => return errors::server_page(e),
        Err(e) => {
            tracing::error!(error = %e, "authenticator enrolment failed");
            return errors::server_page(crate::error::Internal::Failed);
        }
    };
    let label = url::Url::parse(&state.issuer)
        .ok()
        .and_then(|u| u.host_str().map(|h| format!("Tessera {h}")))
        .unwrap_or_else(|| "Tessera".into());
    let uri = totp::otpauth_uri(&label, &v.user.username, &secret);
    let svg = totp::qr_svg(&uri).unwrap_or_default();
    pages::render(
        status,
        &TotpPage {
            csrf: &v.csrf,
            qr_svg: &svg,
            secret: &secret,
            error,
            recovery_codes: None,
        },
    )
}

pub async fn totp_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match portal::require(&req, &state).await {
        Ok(v) if !recently_authenticated(&state, &v) => errors::redirect(&confirm_url("totp")),
        Ok(v) => totp_page(&state, &v, StatusCode::OK, None).await,
        Err(resp) => resp,
    }
}

pub async fn totp_confirm(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    if !recently_authenticated(&state, &v) {
        return errors::redirect(&confirm_url("totp"));
    }
    match mfa::confirm(&state.ctx(), v.user.id, params::field(&form, "code")).await {
        Ok(codes) => {
            Event::new("mfa.enrolled")
                .actor(&v.user.username)
                .target(&v.user.username)
                .ip(Some(crate::http::guard::ip_text(&req, &state)))
                .log(&state.db, state.clock.now())
                .await;
            pages::render(
                StatusCode::OK,
                &TotpPage {
                    csrf: &v.csrf,
                    qr_svg: "",
                    secret: "",
                    error: None,
                    recovery_codes: Some(codes),
                },
            )
        }
        Err(mfa::MfaError::InvalidCode) => {
            let msg = crate::i18n::t().acct_totp_invalid;
            totp_page(&state, &v, StatusCode::BAD_REQUEST, Some(msg)).await
        }
        Err(mfa::MfaError::NotStarted) => errors::redirect("/account/totp"),
        Err(mfa::MfaError::Server(e)) => errors::server_page(e),
    }
}

pub async fn totp_disable(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let (v, form) = match posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match password_ok(&state, &v, params::field(&form, "password")).await {
        Ok(true) => {}
        Ok(false) => {
            let wrong = crate::i18n::t().acct_error_not_current_password;
            let problems = Problems::from([("disable".into(), wrong.into())]);
            return render(&state, &v, StatusCode::BAD_REQUEST, None, problems, None).await;
        }
        Err(resp) => return resp,
    }
    if let Err(e) = mfa::disable(&state.ctx(), v.user.id).await {
        return errors::server_page(e);
    }
    Event::new("mfa.disabled")
        .actor(&v.user.username)
        .target(&v.user.username)
        .ip(Some(crate::http::guard::ip_text(&req, &state)))
        .log(&state.db, state.clock.now())
        .await;
    back("totp-off")
}
