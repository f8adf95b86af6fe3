//! The steps of the sign-in journey as the fronts render them: the second factor's
//! page, consent, the refusal of a user a client does not admit, the way to an
//! upstream, and the answer (with the session's cookies) that ends a sign-in.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::crypto::TokenHash;
use crate::http::errors::{respond, resume_page as resume_error};
use crate::http::guard::{ip_text, user_agent};
use crate::http::signin::login_form::client_name;
use crate::http::{cookies, errors, guard, pages, params};
use crate::i18n::t;
use crate::lifecycle::email_mfa::Sent;
use crate::oidc::authorize::{AuthRequest, AuthResponse};
use crate::oidc::device;
use crate::signin::complete::{Done, Then};
use crate::signin::second::{Factor, Page, Refused};
use crate::signin::{Browser, Next, Parked};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "mfa.html")]
struct MfaPage<'a> {
    request_id: &'a str,
    csrf: &'a str,
    error: Option<&'a str>,
    /// Codes by mail: where they go (masked); `None` for an authenticator app.
    email_to: Option<String>,
    /// After "Send a new code".
    notice: Option<&'a str>,
    /// Why no code was mailed just now.
    mail_error: Option<String>,
    remember: bool,
}

/// Why no code went out, in words; `None` when one did.
fn mail_problem(sent: Sent) -> Option<String> {
    match sent {
        Sent::Yes => None,
        Sent::TooSoon(wait) => Some(crate::i18n::t().fill(crate::i18n::t().mfa_too_soon, "seconds", wait)),
        Sent::Limited => Some(crate::i18n::t().mfa_limited.into()),
        Sent::Unverified => Some(crate::i18n::t().mfa_unverified.into()),
        Sent::Off => Some(crate::i18n::t().mfa_mail_off.into()),
    }
}

/// The second-factor page for a parked step.
pub(crate) fn mfa_page(page: &Page, status: StatusCode) -> HttpResponse {
    let t = crate::i18n::t();
    let email_to = match &page.factor {
        Factor::Mail(to) => Some(to.clone().unwrap_or_else(|| t.mfa_no_address.into())),
        Factor::App => None,
    };
    let error = page.wrong.then_some(match email_to {
        Some(_) => t.mfa_wrong_mailed,
        None => t.mfa_wrong_app,
    });
    let view = MfaPage {
        request_id: &page.request_id,
        csrf: &page.csrf,
        error,
        email_to,
        notice: page.resent.then_some(t.mfa_resent),
        mail_error: page.unsent.and_then(mail_problem),
        remember: page.remember,
    };
    pages::render(status, &view)
}

/// What the browser brings to the journey: its address, user agent and cookies.
pub(crate) fn browser(req: &HttpRequest, state: &AppState) -> Browser {
    Browser {
        ip: ip_text(req, state),
        user_agent: user_agent(req),
        binding: params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v)),
        device: params::cookie(req, cookies::device_name(state)),
        session: params::cookie(req, cookies::session_name(state)).map(|v| TokenHash::of(&v)),
    }
}

/// A step of the journey that did not go on, as a page.
pub(crate) fn refused(refusal: Refused) -> HttpResponse {
    match refusal {
        Refused::Resume(e) => resume_error(e),
        Refused::Limited(wait) => guard::too_many_page(wait),
        Refused::Locked => pages::error_page(
            StatusCode::TOO_MANY_REQUESTS,
            crate::i18n::t().err_too_many_title,
            crate::i18n::t().mfa_locked,
            crate::i18n::t().mfa_locked_hint,
        ),
        Refused::Server(e) => errors::server_page(e),
    }
}

/// The next step of a sign-in, rendered.
pub(crate) async fn next(state: &AppState, next: Next) -> HttpResponse {
    match next {
        Next::SecondFactor(page) => mfa_page(&page, StatusCode::OK),
        Next::WrongCode(page) => mfa_page(&page, StatusCode::UNAUTHORIZED),
        Next::Done(done) => signed_in(state, *done).await,
    }
}

/// A completed sign-in: where it leads, with the session and device cookies.
pub(crate) async fn signed_in(state: &AppState, done: Done) -> HttpResponse {
    let mut resp = match &done.then {
        Then::Respond(r) if !r.form_post => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, r.url()))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Then::Respond(r) => respond(r),
        Then::Consent {
            request,
            user_id,
            parked,
        } => show_consent(state, request, *user_id, parked).await,
        Then::Denied { client_id, response } => denied(state, client_id, response).await,
        Then::Device(code) => after_login(code),
        Then::Portal(path) => errors::redirect(path),
    };
    let _ = resp.add_cookie(&cookies::session(state, done.session_cookie.expose().to_string()));
    let _ = resp.add_cookie(&cookies::device(state, done.device_cookie));
    resp
}

pub async fn show_consent(state: &AppState, request: &AuthRequest, user_id: i64, parked: &Parked) -> HttpResponse {
    let client_name = client_name(state, &request.client_id).await;
    crate::http::branding::for_client(&request.client_id);
    let username = match crate::account::username(&state.ctx(), user_id).await {
        Ok(name) => name.unwrap_or_default(),
        Err(e) => return errors::server_page(e),
    };
    let scopes = request.scope.split(' ').filter_map(pages::describe_scope).collect();
    let claims = crate::oidc::authorize::claims_beyond_scope(request)
        .into_iter()
        .map(|c| pages::describe_claim(&c))
        .collect();
    // What the client's claim mapping releases for this scope is part of what the
    // user approves.
    let scope = crate::domain::Scope::parse(&request.scope).unwrap_or_default();
    let mapped = match state
        .clients
        .get(&state.db, &request.client_id, state.clock.now())
        .await
    {
        Ok(Some(c)) => crate::oidc::claims::describe_mapping(&c.claim_rules, &scope),
        Ok(None) => Vec::new(),
        Err(e) => return errors::server_page(e),
    };
    let about = match crate::oidc::client_about::about_id(&state.ctx(), &request.client_id).await {
        Ok(a) => a,
        Err(e) => return errors::server_page(e),
    };
    pages::render(
        StatusCode::OK,
        &pages::ConsentPage {
            about,
            client_name: &client_name,
            username: &username,
            scopes,
            claims,
            mapped,
            request_id: parked.request_id.expose(),
            csrf: parked.csrf.expose(),
        },
    )
}

/// The page telling a signed-in user that the client does not admit them (403).
pub async fn denied(state: &AppState, client_id: &str, resp: &AuthResponse) -> HttpResponse {
    let name = client_name(state, client_id).await;
    let url = resp.url();
    let page = pages::DeniedPage {
        client_name: &name,
        form_post: resp.form_post,
        action: if resp.form_post {
            resp.redirect_uri.as_str()
        } else {
            &url
        },
        fields: resp.params.iter().map(|(k, v)| (*k, v.as_str())).collect(),
    };
    pages::render(StatusCode::FORBIDDEN, &page)
}

/// After signing in on the way to a device approval, back to the approval page.
pub fn after_login(code: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, format!("/device?user_code={}", device::display(code))))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

pub(crate) fn to_upstream(url: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, url))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// An open sign-up's correct password before its address is confirmed: the page says
/// a new link went out (`sent`), or that the last one still works.
pub fn unverified_page(sent: bool) -> HttpResponse {
    let hint = if sent {
        t().acct_unverified_sent
    } else {
        t().acct_unverified_not_sent
    };
    pages::error_page(
        StatusCode::FORBIDDEN,
        t().acct_unverified_title,
        t().acct_unverified,
        hint,
    )
}
