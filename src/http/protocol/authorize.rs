//! The authorization endpoint: validates, then answers with a code, the login page or
//! the consent page.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::crypto::TokenHash;
use crate::http::cookies::{browser_cookie, set_browser};
use crate::http::errors::respond;
use crate::http::pages::bad_request_page;
use crate::http::signin::login_form::{client_name, login_form, unreachable};
use crate::http::signin::steps::{denied, show_consent, to_upstream};
use crate::http::{cookies, errors, guard, params};
use crate::signin::authorize::Start;
use crate::signin::Pending;
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
        Start::SignUp(parked) => crate::http::signin::signup_form::create(state, &request, &parked).await,
        Start::Login(parked) => {
            let client_name = client_name(state, &request.client_id).await;
            crate::http::branding::for_client(&request.client_id);
            let hint = request.login_hint.clone().unwrap_or_default();
            login_form(state, &parked, &Pending::Login(*request), &client_name, &hint).await
        }
        Start::Upstream(url) => to_upstream(&url),
        Start::UpstreamDown { parked, provider } => {
            unreachable(state, &parked, &Pending::Login(*request), &provider).await
        }
        Start::Consent { user_id, parked } => show_consent(state, &request, user_id, &parked).await,
    };
    set_browser(&mut resp, state, new_cookie);
    resp
}
