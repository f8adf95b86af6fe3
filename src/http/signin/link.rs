//! `/login/email…`: signing in with a link or a code sent by mail, from the login
//! page's "Email me a sign-in link": asking for it, typing the code, and opening the
//! link (a GET that only shows a button, since mail scanners fetch links). Then the
//! sign-in goes on as after a password: the second factor, then what it was for.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::auth::limits::Bucket;
use crate::crypto::TokenHash;
use crate::http::errors::resume_page as resume_error;
use crate::http::guard::ip_text;
use crate::http::pages::bad_request_page;
use crate::http::signin::steps;
use crate::http::{cookies, errors, guard, pages, params};
use crate::i18n::t;
use crate::signin::link::{self as signin, LinkView};
use crate::signin::mailed::{self, Mailed};
use crate::signin::{Pending, ResumeError};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "signin_link.html")]
struct AskPage<'a> {
    request_id: &'a str,
    csrf: &'a str,
    who: &'a str,
    error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "signin_link_sent.html")]
struct SentPage<'a> {
    request_id: &'a str,
    csrf: &'a str,
    error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "signin_link_confirm.html")]
struct ConfirmPage<'a> {
    token: &'a str,
    username: &'a str,
}

fn mail_off() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::NOT_FOUND,
        t.acct_not_available,
        t.acct_signin_off,
        t.acct_signin_off_hint,
    )
}

fn dead_link() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::GONE,
        t.acct_signin_dead_title,
        t.acct_signin_dead,
        t.acct_signin_dead_hint,
    )
}

fn other_browser() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::FORBIDDEN,
        t.acct_signin_other_browser_title,
        t.acct_signin_other_browser,
        t.acct_signin_other_browser_hint,
    )
}

fn too_many() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::TOO_MANY_REQUESTS,
        t.acct_signin_too_many_title,
        t.acct_signin_too_many,
        t.acct_signin_too_many_hint,
    )
}

/// A form post refused before it is read: mail off, another site's form, too many.
fn refused(req: &HttpRequest, state: &AppState) -> Option<HttpResponse> {
    if state.settings.smtp.is_none() {
        return Some(mail_off());
    }
    guard::cross_origin(req, state).or_else(|| guard::limit_page(req, state, Bucket::Login))
}

fn read_form(req: &HttpRequest, body: &Bytes) -> Option<HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

fn form_refused() -> HttpResponse {
    bad_request_page(t().acct_error_signin_form)
}

fn browser_of(req: &HttpRequest, state: &AppState) -> Option<TokenHash> {
    params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v))
}

/// The login step the form names, resumed for this browser.
async fn resume_login(
    req: &HttpRequest,
    state: &AppState,
    form: &HashMap<String, String>,
) -> Result<(Pending, TokenHash), HttpResponse> {
    let (request_id, csrf) = (params::field(form, "request_id"), params::field(form, "csrf"));
    let browser = browser_of(req, state);
    match crate::signin::resume_login(&state.ctx(), (request_id, csrf), browser.as_ref()).await {
        Ok(p) => match browser {
            Some(b) => Ok((p, b)),
            None => Err(resume_error(ResumeError::Forged)),
        },
        Err(e) => Err(resume_error(e)),
    }
}

/// `POST /login/email`: the form asking who to mail.
pub async fn start(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = refused(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return form_refused();
    };
    if let Err(resp) = resume_login(&req, &state, &form).await {
        return resp;
    }
    let page = AskPage {
        request_id: params::field(&form, "request_id"),
        csrf: params::field(&form, "csrf"),
        who: "",
        error: None,
    };
    pages::render(StatusCode::OK, &page)
}

/// `POST /login/email/send`: the same page follows whether or not an account matched.
pub async fn send(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = refused(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return form_refused();
    };
    let (pending, browser) = match resume_login(&req, &state, &form).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let who = params::field(&form, "who").trim();
    if who.is_empty() {
        let page = AskPage {
            request_id,
            csrf,
            who: "",
            error: Some(t().acct_signin_who),
        };
        return pages::render(StatusCode::BAD_REQUEST, &page);
    }
    if let Some(limited) = guard::limit_account(&state, who) {
        return limited;
    }
    let ip = ip_text(&req, &state);
    match signin::send(&state.ctx(), request_id, &pending, &browser, who, &ip).await {
        Ok(Some(parked)) => sent_page(StatusCode::OK, parked.request_id.expose(), parked.csrf.expose(), None),
        Ok(None) => resume_error(ResumeError::Expired),
        Err(e) => errors::server_page(e),
    }
}

fn sent_page(status: StatusCode, request_id: &str, csrf: &str, error: Option<&str>) -> HttpResponse {
    pages::render(
        status,
        &SentPage {
            request_id,
            csrf,
            error,
        },
    )
}

/// `POST /login/email/code`: the code typed on the page of the parked request.
pub async fn code(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = refused(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return form_refused();
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let browser = steps::browser(&req, &state);
    let typed = params::field(&form, "code");
    let again = |error| AskPage {
        request_id,
        csrf,
        who: "",
        error: Some(error),
    };
    match mailed::code(&state.ctx(), (request_id, csrf), typed, &browser).await {
        Ok(Mailed::Next(step)) => steps::next(&state, *step).await,
        Ok(Mailed::Wrong) => {
            let error = t().acct_signin_code_wrong;
            sent_page(StatusCode::UNAUTHORIZED, request_id, csrf, Some(error))
        }
        Ok(Mailed::Spent) => pages::render(StatusCode::BAD_REQUEST, &again(t().acct_signin_code_spent)),
        Ok(Mailed::Dead | Mailed::OtherBrowser) => {
            pages::render(StatusCode::BAD_REQUEST, &again(t().acct_signin_code_dead))
        }
        Ok(Mailed::Locked) => too_many(),
        Err(e) => steps::refused(e),
    }
}

/// `GET /login/email/link?token=…`: a button, never an action (mail scanners fetch
/// links); in another browser, the way to go on instead.
pub async fn link_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if state.settings.smtp.is_none() {
        return mail_off();
    }
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let token = params::link_token(&req);
    match signin::open_link(&state.ctx(), &token, browser_of(&req, &state).as_ref()).await {
        Ok(LinkView::Confirm(username)) => pages::render(
            StatusCode::OK,
            &ConfirmPage {
                token: &token,
                username: &username,
            },
        ),
        Ok(LinkView::OtherBrowser) => other_browser(),
        Ok(LinkView::Dead) => dead_link(),
        Err(e) => errors::server_page(e),
    }
}

/// `POST /login/email/link`: the confirm button. The form's token is itself the
/// unguessable single-use value a forged form could not know, and it works only with
/// the browser binding of the request it completes.
pub async fn link_confirm(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = refused(&req, &state) {
        return refused;
    }
    let Some(form) = read_form(&req, &body) else {
        return form_refused();
    };
    let browser = steps::browser(&req, &state);
    match mailed::link(&state.ctx(), params::field(&form, "token"), &browser).await {
        Ok(Mailed::Next(step)) => steps::next(&state, *step).await,
        Ok(Mailed::OtherBrowser) => other_browser(),
        Ok(Mailed::Locked) => too_many(),
        Ok(Mailed::Dead | Mailed::Wrong | Mailed::Spent) => dead_link(),
        Err(e) => steps::refused(e),
    }
}
