//! The authorization endpoint: validates, then answers with a code, the login page or
//! the consent page.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::crypto::{Secret, TokenHash};
use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::authorize::{AuthRequest, AuthResponse};
use crate::oidc::Ctx;
use crate::signin::authorize::Start;
use crate::signin::{Parked, Pending};
use crate::state::AppState;

pub async fn authorize_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    authorize(&req, &state, req.query_string().as_bytes()).await
}

/// OpenID Connect Core §3.1.2.1: the request may also be a form POST.
pub async fn authorize_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if params::require_form(&req).is_err() {
        return bad_request_page(crate::i18n::t().err_not_form);
    }
    authorize(&req, &state, &body).await
}

pub fn bad_request_page(message: &str) -> HttpResponse {
    pages::error_page(
        StatusCode::BAD_REQUEST,
        crate::i18n::t().err_request_rejected,
        message,
        crate::i18n::t().err_return_try_again,
    )
}

async fn authorize(req: &HttpRequest, state: &AppState, raw: &[u8]) -> HttpResponse {
    if let Some(limited) = guard::limit_page(req, state, Bucket::Authorize) {
        return limited;
    }
    let pairs = match params::pairs(raw) {
        Ok(p) => p,
        Err(e) => return bad_request_page(&e.description),
    };
    let cx = state.ctx();
    let cookie = params::cookie(req, cookies::session_name(state));
    let (binding, new_cookie) = browser_cookie(req, state);
    let binding = TokenHash::of(&binding);
    let (request, start) =
        match crate::signin::authorize::start(&state.upstreams, &cx, &pairs, cookie.as_deref(), &binding).await {
            Ok(started) => started,
            Err(e) => return errors::authorize(e),
        };
    guard::tag_client(req, &request.client_id);
    let mut resp = match start {
        Start::Respond(resp) => return respond(&resp),
        Start::Denied(resp) => return denied(state, &request.client_id, &resp).await,
        Start::SignUp(parked) => crate::http::signin::signup::create(state, &request, &parked).await,
        Start::Login(parked) => {
            let client_name = client_name(state, &request.client_id).await;
            crate::http::branding::for_client(&request.client_id);
            let hint = request.login_hint.clone().unwrap_or_default();
            login_form(state, &parked, &Pending::Login(*request), &client_name, &hint).await
        }
        Start::Upstream(url) => crate::http::signin::federation::to_upstream(&url),
        Start::UpstreamDown { parked, provider } => {
            crate::http::signin::federation::unreachable(state, &parked, &Pending::Login(*request), &provider).await
        }
        Start::Consent { user_id, parked } => show_consent(state, &request, user_id, &parked).await,
    };
    set_browser(&mut resp, state, new_cookie);
    resp
}

/// Delivers an authorization response by redirect, or by form post when asked.
pub fn respond(resp: &AuthResponse) -> HttpResponse {
    if resp.form_post {
        let fields = resp.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        return pages::form_post(&pages::FormPostPage {
            action: resp.redirect_uri.as_str(),
            fields,
        });
    }
    errors::redirect(&resp.url())
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

/// The browser-binding cookie's value, and a new value to set when there was none.
pub fn browser_cookie(req: &HttpRequest, state: &AppState) -> (String, Option<String>) {
    match params::cookie(req, cookies::browser_name(state)).filter(|v| v.len() >= 32 && v.len() <= 128) {
        Some(v) => (v, None),
        None => {
            let v = Secret::generate().expose().to_string();
            (v.clone(), Some(v))
        }
    }
}

pub fn set_browser(resp: &mut HttpResponse, state: &AppState, new: Option<String>) {
    if let Some(v) = new {
        let _ = resp.add_cookie(&cookies::browser(state, v));
    }
}

/// Parks `pending` and shows the login form for it, naming what the sign-in is for.
pub async fn login_page(
    req: &HttpRequest,
    state: &AppState,
    cx: &Ctx<'_>,
    pending: Pending,
    client_name: &str,
    hint: &str,
) -> HttpResponse {
    let (browser, new_cookie) = browser_cookie(req, state);
    let parked = match crate::signin::park(cx, &pending, &TokenHash::of(&browser)).await {
        Ok(p) => p,
        Err(e) => return errors::server_page(e),
    };
    let mut resp = login_form(state, &parked, &pending, client_name, hint).await;
    set_browser(&mut resp, state, new_cookie);
    resp
}

/// The login form for a parked step.
pub(crate) async fn login_form(
    state: &AppState,
    parked: &Parked,
    pending: &Pending,
    client_name: &str,
    hint: &str,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: crate::http::protocol::registered_logo::about(state, pending).await,
        client_name,
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        username: hint,
        error: None,
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: crate::http::signin::federation::buttons(state).await,
        cancel: None,
        step: pages::LoginStep::first(&state.settings),
    };
    pages::render(StatusCode::OK, &page)
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

pub async fn client_name(state: &AppState, client_id: &str) -> String {
    match state.clients.get(&state.db, client_id, state.clock.now()).await {
        Ok(Some(c)) => c.name.clone(),
        _ => client_id.to_string(),
    }
}
