//! `/password/forgot` and `/password/reset`: asking for a reset link by mail, and the
//! link's page that sets a new password, or makes a passkey for a passkey-only account.
//! Shown only when mail is on.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::auth::limits::Bucket;
use crate::auth::passkeys::PasskeyError;
use crate::http::{errors, guard, pages, params, signin::passkey_forms};
use crate::i18n::t;
use crate::lifecycle::reset::{self, Kind, Outcome};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "forgot.html")]
struct ForgotPage<'a> {
    sent: bool,
    who: &'a str,
}

#[derive(Template)]
#[template(path = "reset.html")]
struct ResetPage<'a> {
    done: Option<&'a str>,
    token: &'a str,
    field: &'a str,
    error: &'a str,
    /// The link makes a passkey instead of a password.
    passkey: bool,
    /// The account's authenticator app is asked too.
    code: bool,
}

impl ResetPage<'_> {
    /// The field outside the passkey form copied into it (the code, when asked).
    fn enrol_copy(&self) -> &'static str {
        if self.code {
            "code"
        } else {
            ""
        }
    }

    /// Why the code was refused, shown beside it.
    fn code_error(&self) -> &str {
        if self.field == "code" {
            self.error
        } else {
            ""
        }
    }

    /// Why the passkey was refused, shown beside its button.
    fn passkey_error(&self) -> &str {
        if self.field == "passkey" {
            self.error
        } else {
            ""
        }
    }
}

fn mail_off() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::NOT_FOUND,
        t.acct_not_available,
        t.acct_reset_off,
        t.acct_reset_off_hint,
    )
}

fn dead_link() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::GONE,
        t.acct_reset_dead_title,
        t.acct_reset_dead,
        t.acct_reset_dead_hint,
    )
}

pub async fn forgot_page(state: web::Data<AppState>) -> HttpResponse {
    if state.settings.smtp.is_none() {
        return mail_off();
    }
    pages::render(StatusCode::OK, &ForgotPage { sent: false, who: "" })
}

/// The same page follows every request, whether or not an account matched.
pub async fn forgot_submit(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if state.settings.smtp.is_none() {
        return mail_off();
    }
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return pages::bad_request_page(t().acct_error_form);
    };
    let who = params::field(&form, "who");
    if who.trim().is_empty() {
        return pages::render(StatusCode::BAD_REQUEST, &ForgotPage { sent: false, who: "" });
    }
    if let Err(e) = reset::request(&state.ctx(), who, &guard::ip_text(&req, &state)).await {
        return errors::server_page(e);
    }
    pages::render(StatusCode::OK, &ForgotPage { sent: true, who: "" })
}

pub async fn reset_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    // A live link works whether or not mail is on: `tessera apply` prints one for an
    // account it creates when there is no mail to send it by.
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let token = params::link_token(&req);
    match reset::usable(&state.ctx(), &token).await {
        Ok(Some(form)) => pages::render(
            StatusCode::OK,
            &ResetPage {
                done: None,
                token: &token,
                field: "",
                error: "",
                passkey: form.kind == Kind::Passkey,
                code: form.code,
            },
        ),
        Ok(None) => dead_link(),
        Err(e) => errors::server_page(e),
    }
}

pub async fn reset_submit(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    // A live link works whether or not mail is on: `tessera apply` prints one for an
    // account it creates when there is no mail to send it by.
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return dead_link();
    };
    let get = |n: &str| params::field(&form, n);
    let token = get("token");
    let ip = guard::ip_text(&req, &state);
    let chosen = reset::Chosen {
        password: get("password"),
        confirm: get("confirm"),
        code: get("code"),
    };
    let result = reset::finish(&state.ctx(), token, &chosen, &ip).await;
    answer(&state, token, result).await
}

/// `POST /password/reset/passkey/options`: the passkey a reset link makes.
pub async fn passkey_options(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_json(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = passkey_forms::link_form(&req, &body) else {
        return passkey_forms::bad_json();
    };
    match reset::passkey_options(&state.ctx(), params::field(&form, "token")).await {
        Ok(options) => passkey_forms::options_json(options),
        Err(e) => errors::passkey_json(e),
    }
}

/// `POST /password/reset/passkey`: the reset page's form with the passkey made.
pub async fn passkey_submit(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(form) = passkey_forms::link_form(&req, &body) else {
        return dead_link();
    };
    let token = params::field(&form, "token");
    let ip = guard::ip_text(&req, &state);
    let result = match passkey_forms::made(&state, &form) {
        Ok(made) => reset::finish_with_passkey(&state.ctx(), token, made, params::field(&form, "code"), &ip).await,
        Err(PasskeyError::Refused(why)) => Ok(Outcome::Invalid("passkey", why.to_string())),
        Err(PasskeyError::Server(e)) => return errors::server_page(e),
    };
    answer(&state, token, result).await
}

/// The page after a reset: done, or the form again with what to correct.
async fn answer(state: &AppState, token: &str, result: Result<Outcome, crate::error::Internal>) -> HttpResponse {
    match result {
        Ok(Outcome::Done(username)) => pages::render(
            StatusCode::OK,
            &ResetPage {
                done: Some(&username),
                token: "",
                field: "",
                error: "",
                passkey: false,
                code: false,
            },
        ),
        Ok(Outcome::Invalid(field, message)) => {
            let form = match reset::usable(&state.ctx(), token).await {
                Ok(Some(form)) => form,
                Ok(None) => return dead_link(),
                Err(e) => return errors::server_page(e),
            };
            pages::render(
                StatusCode::BAD_REQUEST,
                &ResetPage {
                    done: None,
                    token,
                    field,
                    error: &message,
                    passkey: form.kind == Kind::Passkey,
                    code: form.code,
                },
            )
        }
        Ok(Outcome::Dead) => dead_link(),
        Err(e) => errors::server_page(e),
    }
}
