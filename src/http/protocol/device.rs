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
use crate::http::signin::login_form::login_page;
use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::device;
use crate::signin::{Pending, ResumeError};
use crate::state::AppState;

/// RFC 8628 §3.1: the device's request for codes, with client authentication.
pub async fn authorization(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    let cx = state.ctx();
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Token) {
        return limited;
    }
    let result = async {
        let (client, form) = authenticated(&req, &cx, &body).await?;
        device::start(&cx, &client, &form).await
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
    let Some(code) = device::normalize(&typed) else {
        return entry_page(&typed, Some(crate::i18n::t().device_malformed));
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let session = match crate::signin::current_session(&cx, cookie.as_deref()).await {
        Ok(s) => s,
        Err(e) => return errors::server_page(e),
    };
    let found = match device::pending(&cx, &code).await {
        Ok(f) => f,
        Err(e) => return errors::server_page(e),
    };
    let Some((request, client)) = found else {
        return entry_page(&typed, Some(crate::i18n::t().device_unknown));
    };
    let Some(session) = session else {
        return login_page(&req, &state, &cx, Pending::DeviceLogin(code), &client.name, "").await;
    };
    match device::admits(&cx, &client.client_id, session.user_id).await {
        Ok(true) => {}
        Ok(false) => return not_admitted(&client.name),
        Err(e) => return errors::server_page(e),
    }
    let (browser, new_cookie) = browser_cookie(&req, &state);
    let parked = match crate::signin::park(&cx, &Pending::DeviceApprove(code.clone()), &TokenHash::of(&browser)).await {
        Ok(p) => p,
        Err(e) => return errors::server_page(e),
    };
    let shown = device::display(&code);
    let page = pages::DevicePage {
        approve: true,
        client_name: &client.name,
        user_code: &shown,
        scopes: request.scope.split(' ').filter_map(pages::describe_scope).collect(),
        claims: Vec::new(),
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        error: None,
    };
    let mut resp = pages::render(StatusCode::OK, &page);
    set_browser(&mut resp, &state, new_cookie);
    resp
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
    let code = match crate::signin::resume(&cx, get("request_id"), get("csrf"), browser.as_ref()).await {
        Ok(Pending::DeviceApprove(code)) => code,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let approve = match get("decision") {
        "allow" => true,
        "deny" => false,
        _ => return bad_request_page(crate::i18n::t().err_approval_choice),
    };
    let cookie = params::cookie(&req, cookies::session_name(&state));
    let session = match crate::signin::current_session(&cx, cookie.as_deref()).await {
        Ok(Some(s)) => s,
        Ok(None) => return resume_error(ResumeError::Expired),
        Err(e) => return errors::server_page(e),
    };
    if let Err(e) = crate::signin::consume(&cx, get("request_id")).await {
        return resume_error(e);
    }
    if approve {
        let client = match device::pending(&cx, &code).await {
            Ok(Some((_, client))) => client,
            Ok(None) => return entry_page("", Some(crate::i18n::t().device_unknown)),
            Err(e) => return errors::server_page(e),
        };
        match device::admits(&cx, &client.client_id, session.user_id).await {
            Ok(true) => {}
            Ok(false) => return not_admitted(&client.name),
            Err(e) => return errors::server_page(e),
        }
    }
    match device::decide(&cx, &code, &session, approve).await {
        Ok(true) if approve => pages::error_page(
            StatusCode::OK,
            crate::i18n::t().device_connected_title,
            crate::i18n::t().device_done,
            crate::i18n::t().device_done_hint,
        ),
        Ok(true) => pages::error_page(
            StatusCode::OK,
            crate::i18n::t().device_denied_title,
            crate::i18n::t().device_denied,
            crate::i18n::t().common_close_page,
        ),
        Ok(false) => entry_page("", Some(crate::i18n::t().device_unknown)),
        Err(e) => errors::server_page(e),
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
