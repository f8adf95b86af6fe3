//! Open sign-up and email verification: `/signup` (the form, from the login page, from
//! `prompt=create` or on its own), `/email/verify` (the mailed link's page and its
//! "Confirm" button), `/signup/continue` (back to the login form of the parked
//! request), and the page an unverified sign-up sees instead of signing in.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::auth::limits::Bucket;
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
use crate::signin::signup::{Confirmation, Proof, Shown, Visit};
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
    let names = (request_id, csrf);
    let pending = match crate::signin::resume_login(&state.ctx(), names, browser(&req, &state).as_ref()).await {
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
    let names = (get("request_id"), get("csrf"));
    let binding = browser(&req, &state);
    let submitted = match crate::signin::signup::submit(&state.ctx(), typed, names, binding.as_ref(), &ip).await {
        Ok(s) => s,
        Err(e) => return resume_error(e),
    };
    let (status, sent, problems) = match submitted.outcome {
        Outcome::Sent => (StatusCode::OK, true, Problems::default()),
        Outcome::Invalid(problems) => (StatusCode::BAD_REQUEST, false, problems),
    };
    // A page shown again carries the parked sign-in only while it is still waiting.
    let (client, (request_id, csrf)) = match &submitted.from {
        Some(p) => (Some(purpose(&state, p).await), names),
        None => (None, ("", "")),
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
    let wants_sign_in =
        url::form_urlencoded::parse(req.query_string().as_bytes()).any(|(k, v)| k == "signin" && v == "1");
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let (binding, new_cookie) = browser_cookie(&req, &state);
    let binding = TokenHash::of(&binding);
    let visit = Visit {
        session_cookie: cookie.as_deref(),
        // The portal's sign-in form, coming back to this page (token included).
        sign_in: wants_sign_in.then(|| (guard::client_ip(&req, &state), &binding, portal::return_path(&req))),
    };
    let (found, sign_in) = match crate::signin::signup::show(&state.limits, &state.ctx(), &token, visit).await {
        Ok(Shown::Confirm(found)) => (found, None),
        Ok(Shown::SignInFirst(found)) => (found, Some(sign_in_link(&token))),
        Ok(Shown::SignIn(login)) => {
            let t = t();
            let purpose = t.fill(t.acct_portal_purpose, "org", crate::http::branding::shown().org_name);
            return portal::sign_in_page(&state, login, &purpose, new_cookie).await;
        }
        Ok(Shown::OtherAccount) => return other_account(),
        Ok(Shown::Dead) => return dead_link(),
        Err(e) => return errors::server_page(e),
    };
    let page = VerifyPage {
        verified: false,
        token: &token,
        username: &found.username,
        email: &found.email,
        request_id: "",
        csrf: "",
        change: found.change_for.is_some(),
        sign_in: sign_in.as_deref().unwrap_or_default(),
        passkey: found.needs_passkey,
        error: "",
    };
    pages::render(StatusCode::OK, &page)
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
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let proof = Proof::Button {
        session_cookie: cookie.as_deref(),
    };
    confirm(&req, &state, params::field(&fields, "token"), proof).await
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
    let get = |n: &str| params::field(&fields, n);
    let proof = Proof::Passkey {
        name: get("name"),
        client_data: get("client_data"),
        attestation_object: get("attestation_object"),
    };
    confirm(&req, &state, get("token"), proof).await
}

/// Confirms the link `token` by `proof`, in this browser, and shows what came of it.
async fn confirm(req: &HttpRequest, state: &AppState, token: &str, proof: Proof<'_>) -> HttpResponse {
    let ip = guard::ip_text(req, state);
    let (binding, new_cookie) = browser_cookie(req, state);
    let from = (ip.as_str(), &TokenHash::of(&binding));
    match crate::signin::signup::confirm(&state.ctx(), token, proof, from).await {
        Ok(c) => confirmed(state, token, c, new_cookie),
        Err(e) => errors::server_page(e),
    }
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
fn confirmed(state: &AppState, token: &str, done: Confirmation, new_cookie: Option<String>) -> HttpResponse {
    let (username, change) = match done.confirmed {
        Confirmed::Verified { username, .. } => (username, false),
        Confirmed::Changed { username } => (username, true),
        Confirmed::SignInFirst => {
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
        Confirmed::Passkey(why) => {
            return pages::render(StatusCode::BAD_REQUEST, &VerifyPage::passkey_again(token, why))
        }
        Confirmed::OtherAccount => return other_account(),
        Confirmed::Dead => return dead_link(),
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
    let Some(parked) = done.parked else {
        return pages::render(StatusCode::OK, &page);
    };
    page.request_id = parked.request_id.expose();
    page.csrf = parked.csrf.expose();
    let mut resp = pages::render(StatusCode::OK, &page);
    set_browser(&mut resp, state, new_cookie);
    resp
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
    let names = (request_id, csrf);
    let pending = match crate::signin::resume_login(&state.ctx(), names, browser(&req, &state).as_ref()).await {
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
