//! The authorization endpoint and the login form it leads to.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::{cookies, errors, pages, params};
use crate::auth::login::{authenticate, LoginError};
use crate::crypto::{Secret, TokenHash};
use crate::db;
use crate::oidc::authorize::{self as authz, AuthRequest, Next};
use crate::oidc::login::{self, ResumeError};
use crate::oidc::OAuthError;
use crate::state::AppState;

pub async fn authorize_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    authorize(&req, &state, req.query_string().as_bytes()).await
}

/// OpenID Connect Core §3.1.2.1: the request may also be a form POST.
pub async fn authorize_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if params::require_form(&req).is_err() {
        return bad_request_page("The sign-in request was not a form submission.");
    }
    authorize(&req, &state, &body).await
}

fn bad_request_page(message: &str) -> HttpResponse {
    pages::error_page(
        StatusCode::BAD_REQUEST,
        "Sign-in request rejected",
        message,
        "Return to the application and try again.",
    )
}

async fn authorize(req: &HttpRequest, state: &AppState, raw: &[u8]) -> HttpResponse {
    let pairs = match params::pairs(raw) {
        Ok(p) => p,
        Err(e) => return bad_request_page(&e.description),
    };
    let request = match authz::validate(state, &pairs).await {
        Ok(r) => r,
        Err(e) => return errors::authorize(&state.issuer, e),
    };
    let session =
        match login::current_session(state, params::cookie(req, cookies::session_name(state)).as_deref()).await {
            Ok(s) => s,
            Err(e) => return errors::server_page(&e),
        };
    match authz::decide(state, &request, session).await {
        Ok(Next::Redirect(url)) => errors::redirect(&url),
        Ok(Next::Login) => show_login(req, state, &request).await,
        Err(e) => errors::authorize(&state.issuer, e),
    }
}

/// Parks the request and shows the form, setting the browser-binding cookie if the
/// browser has none yet.
async fn show_login(req: &HttpRequest, state: &AppState, request: &AuthRequest) -> HttpResponse {
    let existing = params::cookie(req, cookies::browser_name(state)).filter(|v| v.len() >= 32 && v.len() <= 128);
    let (browser, new_cookie) = match existing {
        Some(v) => (v, None),
        None => {
            let v = Secret::generate().expose().to_string();
            (v.clone(), Some(v))
        }
    };
    let parked = match login::park(state, request, &TokenHash::of(&browser)).await {
        Ok(p) => p,
        Err(e) => return errors::server_page(&e),
    };
    let client_name = client_name(state, &request.client_id).await;
    let page = pages::LoginPage {
        client_name: &client_name,
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        username: request.login_hint.as_deref().unwrap_or_default(),
        error: None,
    };
    let mut builder = pages::html(StatusCode::OK);
    if let Some(v) = new_cookie {
        builder.cookie(cookies::browser(state, v));
    }
    pages::render_with(builder, &page)
}

async fn client_name(state: &AppState, client_id: &str) -> String {
    let id = client_id.to_string();
    match state.db.read(move |c| db::clients::find(c, &id)).await {
        Ok(Some(c)) => c.name,
        _ => client_id.to_string(),
    }
}

fn field<'a>(form: &'a std::collections::HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map(String::as_str).unwrap_or_default()
}

pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let form = match params::require_form(&req).and_then(|_| params::unique_form(&body)) {
        Ok(f) => f,
        Err(_) => return bad_request_page("The sign-in form was not submitted correctly."),
    };
    let (request_id, csrf) = (field(&form, "request_id"), field(&form, "csrf"));
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let request = match login::resume(&state, request_id, csrf, browser.as_ref()).await {
        Ok(r) => r,
        Err(e) => return resume_error(e),
    };
    let username = field(&form, "username");
    let user = match authenticate(&state.db, &state.hasher, username, field(&form, "password")).await {
        Ok(user) => user,
        Err(LoginError::InvalidCredentials) => {
            let client_name = client_name(&state, &request.client_id).await;
            let page = pages::LoginPage {
                client_name: &client_name,
                request_id,
                csrf,
                username,
                error: Some("Invalid username or password."),
            };
            return pages::render(StatusCode::UNAUTHORIZED, &page);
        }
        Err(LoginError::Hashing(e)) => return errors::server_page(&OAuthError::from(e)),
        Err(LoginError::Db(e)) => return errors::server_page(&OAuthError::from(e)),
    };
    let previous = params::cookie(&req, cookies::session_name(&state)).map(|v| TokenHash::of(&v));
    match login::finish(&state, request_id, &request, user.id, previous).await {
        Ok(done) => HttpResponse::SeeOther()
            .cookie(cookies::session(&state, done.session_cookie.expose().to_string()))
            .insert_header((actix_web::http::header::LOCATION, done.redirect))
            .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(e) => resume_error(e),
    }
}

fn resume_error(e: ResumeError) -> HttpResponse {
    match e {
        ResumeError::Expired => pages::error_page(
            StatusCode::BAD_REQUEST,
            "Sign-in expired",
            "This sign-in page has expired or was already used.",
            "Return to the application and sign in again.",
        ),
        ResumeError::Forged => pages::error_page(
            StatusCode::FORBIDDEN,
            "Sign-in refused",
            "The sign-in form could not be verified for this browser.",
            "Make sure cookies are enabled, then return to the application and sign in again.",
        ),
        ResumeError::Server(e) => errors::server_page(&e),
    }
}
