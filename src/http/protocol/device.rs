//! Device Authorization Grant endpoints: `/device_authorization` for the device, and
//! `/device` where a signed-in person enters and approves the user code.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::crypto::TokenHash;
use crate::http::cookies::{browser_cookie, set_browser};
use crate::http::errors::resume_page as resume_error;
use crate::http::pages::bad_request_page;
use crate::http::protocol::credentials::authenticated;
use crate::http::signin::login_form::login_form;
use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::device as oidc_device;
use crate::signin::device::{self, Choice, Decided, Lookup, Refused};
use crate::signin::Parked;
use crate::state::AppState;

/// RFC 8628 §3.1: the device's request for codes, with client authentication.
pub async fn authorization(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Token) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        oidc_device::start(&cx, &client, &form).await
    }
    .await;
    match result {
        Ok(v) => {
            let mut b = HttpResponse::Ok();
            errors::no_store(&mut b);
            b.json(v)
        }
        Err(e) => errors::oauth_json(&e),
    }
}

fn entry_page(code: &str, error: Option<&str>) -> HttpResponse {
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    pages::render(
        status,
        &pages::DevicePage {
            approve: false,
            client_name: "",
            user_code: code,
            scopes: Vec::new(),
            claims: Vec::new(),
            request_id: "",
            csrf: "",
            error,
        },
    )
}

/// The code entry page, then (signed in) the approval page.
pub async fn page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let cx = state.ctx();
    let typed = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "user_code")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if typed.is_empty() {
        return entry_page("", None);
    }
    // Each look-up of a code is a guess (and, for a real one, parks a sign-in).
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Device) {
        return limited;
    }
    let Some(code) = oidc_device::normalize(&typed) else {
        return entry_page(&typed, Some(crate::i18n::t().device_malformed));
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let (browser, new_cookie) = browser_cookie(&req, &state);
    let binding = TokenHash::of(&browser);
    let mut resp = match device::look_up(&cx, &code, cookie.as_deref(), &binding).await {
        Ok(Lookup::Unknown) => return entry_page(&typed, Some(crate::i18n::t().device_unknown)),
        Ok(Lookup::Login(parked, pending, client_name)) => {
            login_form(&state, &parked, &pending, &client_name, "").await
        }
        Ok(Lookup::NotAdmitted(client_name)) => return not_admitted(&client_name),
        Ok(Lookup::Approve {
            parked,
            client_name,
            scope,
        }) => approve_page(&code, &client_name, &scope, &parked),
        Err(e) => return errors::server_page(e),
    };
    set_browser(&mut resp, &state, new_cookie);
    resp
}

/// The approval page for a user code, parked under `parked`.
fn approve_page(code: &str, client_name: &str, scope: &str, parked: &Parked) -> HttpResponse {
    let shown = oidc_device::display(code);
    let page = pages::DevicePage {
        approve: true,
        client_name,
        user_code: &shown,
        scopes: scope.split(' ').filter_map(pages::describe_scope).collect(),
        claims: Vec::new(),
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        error: None,
    };
    pages::render(StatusCode::OK, &page)
}

/// The approval form's target.
pub async fn decide(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Device))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return bad_request_page(crate::i18n::t().err_approval_form);
    };
    let get = |n: &str| params::field(&form, n);
    let browser = params::cookie(&req, cookies::browser_name(&state)).map(|v| TokenHash::of(&v));
    let choice = Choice {
        request_id: get("request_id"),
        csrf: get("csrf"),
        approve: match get("decision") {
            "allow" => Some(true),
            "deny" => Some(false),
            _ => None,
        },
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let t = crate::i18n::t();
    match device::decide(&cx, &choice, browser.as_ref(), cookie.as_deref()).await {
        Ok(Decided::Approved) => pages::error_page(
            StatusCode::OK,
            t.device_connected_title,
            t.device_done,
            t.device_done_hint,
        ),
        Ok(Decided::Denied) => pages::error_page(
            StatusCode::OK,
            t.device_denied_title,
            t.device_denied,
            t.common_close_page,
        ),
        Ok(Decided::Unknown) => entry_page("", Some(t.device_unknown)),
        Ok(Decided::NotAdmitted(client_name)) => not_admitted(&client_name),
        Err(Refused::Resume(e)) => resume_error(e),
        Err(Refused::Choice) => bad_request_page(t.err_approval_choice),
        Err(Refused::Server(e)) => errors::server_page(e),
    }
}

/// A client with allowed groups refuses a user outside them (403).
fn not_admitted(client_name: &str) -> HttpResponse {
    pages::error_page(
        StatusCode::FORBIDDEN,
        crate::i18n::t().denied_title,
        &crate::i18n::t().fill(crate::i18n::t().denied_lead, "client", client_name),
        crate::i18n::t().denied_hint,
    )
}
