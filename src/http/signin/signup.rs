//! Open sign-up and email verification: `/signup` (the form, from the login page, from
//! `prompt=create` or on its own), `/email/verify` (the mailed link's page and its
//! "Confirm" button), `/signup/continue` (back to the login form of the parked
//! request), and the page an unverified sign-up sees instead of signing in.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::auth::limits::Bucket;
use crate::auth::passkeys::PasskeyError;
use crate::crypto::TokenHash;
use crate::domain::Problems;
use crate::http::cookies::{browser_cookie, set_browser};
use crate::http::errors::resume_page as resume_error;
use crate::http::pages::bad_request_page;
use crate::http::signin::login_form::purpose;
use crate::http::signin::passkey_forms as passkeys;
use crate::http::signin::signup_form::SignupPage;
use crate::http::{cookies, errors, guard, pages, params, signin::portal};
use crate::i18n::t;
use crate::lifecycle::signup::{self, Form, Outcome};
use crate::lifecycle::verify::{self, Confirmed};
use crate::signin::{Pending, ResumeError};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "verify.html")]
struct VerifyPage<'a> {
    verified: bool,
    token: &'a str,
    username: &'a str,
    email: &'a str,
    request_id: &'a str,
    csrf: &'a str,
    /// A pending change of address (confirmed only while signed in as its account).
    change: bool,
    /// Where to sign in first, when a change's link is opened by nobody signed in.
    sign_in: &'a str,
    /// A sign-up without a password: confirming makes its passkey.
    passkey: bool,
    /// Why the passkey was refused.
    error: &'a str,
}

/// Sign-up is off (or cannot verify addresses): the pages do not exist.
fn closed() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::NOT_FOUND,
        t.acct_signup_closed_title,
        t.acct_signup_closed,
        t.acct_signup_closed_hint,
    )
}

fn dead_link() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::GONE,
        t.acct_verify_dead_title,
        t.acct_verify_dead,
        t.acct_verify_dead_hint,
    )
}

fn form(req: &HttpRequest, body: &Bytes) -> Option<std::collections::HashMap<String, String>> {
    params::require_form(req).and_then(|_| params::unique_form(body)).ok()
}

fn browser(req: &HttpRequest, state: &AppState) -> Option<TokenHash> {
    params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v))
}

/// The parked sign-in a form names, checked against this browser and its CSRF token.
async fn parked_sign_in(
    req: &HttpRequest,
    state: &AppState,
    request_id: &str,
    csrf: &str,
) -> Result<Pending, ResumeError> {
    match crate::signin::resume(&state.ctx(), request_id, csrf, browser(req, state).as_ref()).await? {
        p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_)) => Ok(p),
        _ => Err(ResumeError::Expired),
    }
}

/// `GET /signup`: the form on its own (after sign-up, the person signs in at `/account`).
pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if !signup::open(&state.settings) {
        return closed();
    }
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    pages::render(StatusCode::OK, &SignupPage::empty(&state, None, "", ""))
}

/// `POST /signup/start`: "Create an account" on a login page; the parked sign-in is
/// kept, so that the new account can continue it once verified.
pub async fn start(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if !signup::open(&state.settings) {
        return closed();
    }
    if let Some(refused) =
        guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Authorize))
    {
        return refused;
    }
    let Some(form) = form(&req, &body) else {
        return bad_request_page(t().acct_error_signin_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let pending = match parked_sign_in(&req, &state, request_id, csrf).await {
        Ok(p) => p,
        Err(e) => return resume_error(e),
    };
    let name = purpose(&state, &pending).await;
    pages::render(
        StatusCode::OK,
        &SignupPage::empty(&state, Some(&name), request_id, csrf),
    )
}

/// `POST /signup`: creates the account and answers "check your mail", the same
/// whether or not the address already had an account.
pub async fn submit(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if !signup::open(&state.settings) {
        return closed();
    }
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Signup))
    {
        return refused;
    }
    let Some(fields) = form(&req, &body) else {
        return bad_request_page(t().acct_error_signup_form);
    };
    let get = |n: &str| params::field(&fields, n);
    let (request_id, csrf) = (get("request_id"), get("csrf"));
    let (mut client, mut request) = (None, None);
    if !request_id.is_empty() {
        match parked_sign_in(&req, &state, request_id, csrf).await {
            Ok(p) => {
                client = Some(purpose(&state, &p).await);
                request = Some(TokenHash::of(request_id));
            }
            // The sign-in expired while the form was filled in: the account is still
            // made, and the person signs in afresh once verified.
            Err(ResumeError::Expired) => {}
            Err(e) => return resume_error(e),
        }
    }
    // A page shown again carries the parked sign-in only while it is still waiting.
    let (request_id, csrf) = if request.is_some() {
        (request_id, csrf)
    } else {
        ("", "")
    };
    let typed = Form {
        username: get("username"),
        email: get("email"),
        name: get("name"),
        password: get("password"),
        confirm: get("confirm"),
        // The second button ("a passkey instead"), or the only way under passkey-only.
        passkey: state.settings.passkey_mode.passkey_only() || get("credential") == "passkey",
    };
    let ip = guard::ip_text(&req, &state);
    let (status, sent, problems) = match signup::submit(&state.ctx(), typed, request, &ip).await {
        Ok(Outcome::Sent) => (StatusCode::OK, true, Problems::default()),
        Ok(Outcome::Invalid(problems)) => (StatusCode::BAD_REQUEST, false, problems),
        Err(e) => return errors::server_page(e),
    };
    let page = SignupPage {
        sent,
        client_name: client.as_deref(),
        request_id,
        csrf,
        username: typed.username,
        email: typed.email.trim(),
        name: typed.name,
        domains: state.settings.signup_domains.join(", "),
        problems,
        passkey_only: state.settings.passkey_mode.passkey_only(),
        passkey: typed.passkey,
    };
    pages::render(status, &page)
}

/// `GET /email/verify?token=…`: names the account and address, and offers "Confirm";
/// it changes nothing, since mail scanners open links. A pending change of address is
/// offered only to a browser signed in as its account: anyone else holding the link
/// (the owner of a mistyped address) is asked to sign in, and with `&signin=1` gets the
/// sign-in form, which comes back here.
pub async fn verify_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Authorize) {
        return limited;
    }
    let token = params::link_token(&req);
    let found = match verify::usable(&state.ctx(), &token).await {
        Ok(Some(found)) => found,
        Ok(None) => return dead_link(),
        Err(e) => return errors::server_page(e),
    };
    let mut page = VerifyPage {
        verified: false,
        token: &token,
        username: &found.username,
        email: &found.email,
        request_id: "",
        csrf: "",
        change: found.change_for.is_some(),
        sign_in: "",
        passkey: found.needs_passkey,
        error: "",
    };
    let Some(owner) = found.change_for else {
        return pages::render(StatusCode::OK, &page);
    };
    let wants_sign_in =
        url::form_urlencoded::parse(req.query_string().as_bytes()).any(|(k, v)| k == "signin" && v == "1");
    match portal::viewer(&req, &state).await {
        Ok(Some(v)) if v.user.id == owner => pages::render(StatusCode::OK, &page),
        Ok(Some(_)) => other_account(),
        // The portal's sign-in form, coming back to this page (token included).
        Ok(None) if wants_sign_in => portal::require(&req, &state).await.err().unwrap_or_else(dead_link),
        Ok(None) => {
            let link = sign_in_link(&token);
            page.sign_in = &link;
            pages::render(StatusCode::OK, &page)
        }
        Err(resp) => resp,
    }
}

/// The verify page again, by way of the portal's sign-in form.
fn sign_in_link(token: &str) -> String {
    let token: String = url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
    format!("/email/verify?token={token}&signin=1")
}

/// A change of address opened in a browser signed in as another account.
fn other_account() -> HttpResponse {
    let t = t();
    pages::error_page(
        StatusCode::FORBIDDEN,
        t.acct_verify_other_title,
        t.acct_verify_other,
        t.acct_verify_other_hint,
    )
}

/// `POST /email/verify`: confirms the address. When the sign-up came from a sign-in
/// that is still parked, that sign-in is parked again for this browser, behind a
/// "Continue to sign in" button. A pending change of address takes effect only in a
/// browser signed in as its account.
pub async fn verify_confirm(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(fields) = form(&req, &body) else {
        return dead_link();
    };
    let ip = guard::ip_text(&req, &state);
    let viewer = match portal::viewer(&req, &state).await {
        Ok(v) => v.map(|v| v.user.id),
        Err(resp) => return resp,
    };
    let token = params::field(&fields, "token");
    let result = verify::confirm(&state.ctx(), token, &ip, viewer, None).await;
    confirmed(&req, &state, token, result).await
}

/// `POST /email/verify/passkey/options`: the passkey that confirms a sign-up made
/// without a password.
pub async fn verify_passkey_options(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_json(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(fields) = passkeys::link_form(&req, &body) else {
        return passkeys::bad_json();
    };
    match verify::passkey_options(&state.ctx(), params::field(&fields, "token")).await {
        Ok(options) => passkeys::options_json(options),
        Err(e) => errors::passkey_json(e),
    }
}

/// `POST /email/verify/passkey`: confirms the address of a sign-up made without a
/// password by making its passkey.
pub async fn verify_passkey(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Some(fields) = passkeys::link_form(&req, &body) else {
        return dead_link();
    };
    let ip = guard::ip_text(&req, &state);
    let token = params::field(&fields, "token");
    let result = match passkeys::made(&state, &fields) {
        Ok(made) => verify::confirm(&state.ctx(), token, &ip, None, Some(made)).await,
        Err(PasskeyError::Refused(why)) => {
            let page = VerifyPage::passkey_again(token, why);
            return pages::render(StatusCode::BAD_REQUEST, &page);
        }
        Err(PasskeyError::Server(e)) => return errors::server_page(e),
    };
    confirmed(&req, &state, token, result).await
}

impl<'a> VerifyPage<'a> {
    /// The page of a sign-up without a password again, with why its passkey was refused.
    fn passkey_again(token: &'a str, error: &'a str) -> Self {
        Self {
            verified: false,
            token,
            username: "",
            email: "",
            request_id: "",
            csrf: "",
            change: false,
            sign_in: "",
            passkey: true,
            error,
        }
    }
}

/// The page after "Confirm" (or the passkey made): verified, and the sign-in the
/// sign-up came from parked again for this browser when it is still waiting.
async fn confirmed(
    req: &HttpRequest,
    state: &AppState,
    token: &str,
    result: Result<Confirmed, crate::error::Internal>,
) -> HttpResponse {
    let (username, resume, change) = match result {
        Ok(Confirmed::Verified { username, resume }) => (username, resume, false),
        Ok(Confirmed::Changed { username }) => (username, None, true),
        Ok(Confirmed::SignInFirst) => {
            let link = sign_in_link(token);
            return pages::render(
                StatusCode::UNAUTHORIZED,
                &VerifyPage {
                    verified: false,
                    token,
                    username: "",
                    email: "",
                    request_id: "",
                    csrf: "",
                    change: true,
                    sign_in: &link,
                    passkey: false,
                    error: "",
                },
            );
        }
        Ok(Confirmed::Passkey(why)) => {
            return pages::render(StatusCode::BAD_REQUEST, &VerifyPage::passkey_again(token, why))
        }
        Ok(Confirmed::OtherAccount) => return other_account(),
        Ok(Confirmed::Dead) => return dead_link(),
        Err(e) => return errors::server_page(e),
    };
    let mut page = VerifyPage {
        verified: true,
        token: "",
        username: &username,
        email: "",
        request_id: "",
        csrf: "",
        change,
        sign_in: "",
        passkey: false,
        error: "",
    };
    let Some(pending) = resume else {
        return pages::render(StatusCode::OK, &page);
    };
    let (value, new_cookie) = browser_cookie(req, state);
    match crate::signin::park(&state.ctx(), pending.as_ref(), &TokenHash::of(&value)).await {
        Ok(parked) => {
            page.request_id = parked.request_id.expose();
            page.csrf = parked.csrf.expose();
            let mut resp = pages::render(StatusCode::OK, &page);
            set_browser(&mut resp, state, new_cookie);
            resp
        }
        Err(e) => {
            // The address is verified whatever happens now: the plain page still says so.
            tracing::warn!(error = ?e, "cannot park the sign-in after a verification");
            pages::render(StatusCode::OK, &page)
        }
    }
}

/// `POST /signup/continue`: the login form for a parked sign-in (after confirming an
/// address, or "Already have an account?" on the sign-up form).
pub async fn resume_login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Some(fields) = form(&req, &body) else {
        return bad_request_page(t().acct_error_form);
    };
    let (request_id, csrf) = (params::field(&fields, "request_id"), params::field(&fields, "csrf"));
    let pending = match parked_sign_in(&req, &state, request_id, csrf).await {
        Ok(p) => p,
        Err(e) => return resume_error(e),
    };
    let page = pages::LoginPage {
        about: crate::http::signin::login_form::about(&state, &pending).await,
        client_name: &purpose(&state, &pending).await,
        request_id,
        csrf,
        username: params::field(&fields, "username"),
        error: None,
        mail: state.settings.smtp.is_some(),
        signup: signup::open(&state.settings),
        providers: crate::http::signin::login_form::buttons(&state).await,
        cancel: None,
        step: pages::LoginStep::first(&state.settings),
    };
    pages::render(StatusCode::OK, &page)
}
