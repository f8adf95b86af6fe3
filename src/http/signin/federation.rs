//! Sign-in through an upstream provider: the login page's "Sign in with …" buttons,
//! `idp=` on the authorization request, the upstream's callback, its back-channel
//! logout, linking and unlinking on the account page, and "Return to the application"
//! after an upstream failed.

use std::collections::HashMap;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::crypto::TokenHash;
use crate::federation::identity::{self, Resolved, Unlink};
use crate::federation::{self as fed, logout::Refused};
use crate::http::cookies::{browser_cookie, set_browser};
use crate::http::errors::{respond, resume_page as resume_error};
use crate::http::pages::bad_request_page;
use crate::http::signin::login_form::{login_again, unreachable_text};
use crate::http::signin::steps::to_upstream;
use crate::http::{cookies, errors, guard, params};
use crate::signin::upstream::{self as flow, Answer, Back, Begin, Why};
use crate::signin::{Parked, Pending, ResumeError};
use crate::state::AppState;

fn needs_factor(name: &str) -> String {
    let t = crate::i18n::t();
    t.fill(t.federation_needs_factor, "provider", name)
}

fn browser(req: &HttpRequest, state: &AppState) -> Option<TokenHash> {
    params::cookie(req, cookies::browser_name(state)).map(|v| TokenHash::of(&v))
}

/// `POST /federation/{id}/start`: a "Sign in with …" button on the login page.
pub async fn start(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state).or_else(|| guard::limit_page(&req, &state, Bucket::Login))
    {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return bad_request_page(crate::i18n::t().err_signin_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let Some(browser) = browser(&req, &state) else {
        return resume_error(ResumeError::Forged);
    };
    let pending = match crate::signin::resume_login(&state.ctx(), (request_id, csrf), Some(&browser)).await {
        Ok(p) => p,
        Err(e) => return resume_error(e),
    };
    let parked = Parked {
        request_id: crate::domain::Secret::from_string(request_id.to_string()),
        csrf: crate::domain::Secret::from_string(csrf.to_string()),
    };
    let p = match fed::find(&state.ctx(), &path).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let msg = crate::i18n::t().federation_gone;
            return login_again(&state, &parked, &pending, StatusCode::NOT_FOUND, msg, false).await;
        }
        Err(e) => return errors::server_page(e),
    };
    match flow::begin(
        &state.ctx(),
        &state.upstreams,
        &p,
        Some(request_id),
        pending.clone(),
        None,
        &browser,
    )
    .await
    {
        Ok(url) => to_upstream(&url),
        Err(Begin::Unavailable(why)) => {
            tracing::warn!(provider = %p.id, reason = %why, "upstream sign-in could not start");
            let msg = unreachable_text(&p.name);
            login_again(&state, &parked, &pending, StatusCode::SERVICE_UNAVAILABLE, &msg, true).await
        }
        Err(Begin::Expired) => resume_error(ResumeError::Expired),
        Err(Begin::Server(e)) => errors::server_page(e),
    }
}

fn answer_of(req: &HttpRequest) -> Result<Answer, &'static str> {
    let pairs = params::pairs(req.query_string().as_bytes()).map_err(|_| "The answer could not be read.")?;
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (k, v) in &pairs {
        if seen.insert(k.as_str(), v.as_str()).is_some() {
            return Err("The answer repeats a parameter.");
        }
    }
    let get = |k: &str| seen.get(k).map(|v| v.to_string());
    Ok(Answer {
        state: get("state").unwrap_or_default(),
        code: get("code"),
        error: get("error"),
        iss: get("iss"),
    })
}

/// `GET /federation/{id}/callback`: the upstream sends the browser back.
pub async fn callback(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    if let Some(limited) = guard::limit_page(&req, &state, Bucket::Login) {
        return limited;
    }
    let answer = match answer_of(&req) {
        Ok(a) => a,
        Err(msg) => return bad_request_page(msg),
    };
    let browser = crate::http::signin::steps::browser(&req, &state);
    let back = match flow::returned(&state.ctx(), &state.upstreams, &path, &answer, &browser).await {
        Ok(back) => back,
        Err(e) => return crate::http::signin::steps::refused(e),
    };
    match back {
        Back::Next(step) => crate::http::signin::steps::next(&state, step).await,
        Back::Again {
            provider,
            parked,
            then,
            why,
        } => {
            let t = crate::i18n::t();
            let name = &provider.name;
            let (status, unavailable, msg) = match why {
                Why::Unreachable => (StatusCode::BAD_GATEWAY, true, unreachable_text(name)),
                Why::Refused(why) => {
                    let msg = t.fill2(t.federation_refused, "provider", name, "why", &why);
                    (StatusCode::FORBIDDEN, false, msg)
                }
                Why::Disabled => (StatusCode::FORBIDDEN, false, t.federation_disabled.to_string()),
                Why::NeedsFactor => (StatusCode::FORBIDDEN, false, needs_factor(name)),
                Why::Unlinked => (
                    StatusCode::FORBIDDEN,
                    false,
                    t.fill(t.federation_unlinked, "provider", name),
                ),
            };
            login_again(&state, &parked, &then, status, &msg, unavailable).await
        }
        Back::Link {
            provider,
            profile,
            user_id,
            parked,
        } => finish_link(&req, &state, &provider, &profile, user_id, &parked).await,
        Back::LinkFailed => crate::http::account::view::back("link-failed"),
    }
}

async fn finish_link(
    req: &HttpRequest,
    state: &AppState,
    p: &crate::db::providers::Provider,
    profile: &fed::Profile,
    uid: i64,
    parked: &Parked,
) -> HttpResponse {
    let _ = crate::signin::consume(&state.ctx(), parked.request_id.expose()).await;
    // Only the account that asked, still signed in here, gets the link.
    match crate::http::signin::portal::require(req, state).await {
        Ok(v) if v.user.id == uid => {}
        _ => return resume_error(ResumeError::Forged),
    }
    match identity::resolve(&state.ctx(), p, profile, Some(uid)).await {
        Ok(Resolved::Linked(_)) => crate::http::account::view::back("linked"),
        Ok(Resolved::LinkedElsewhere) => crate::http::account::view::back("link-elsewhere"),
        Ok(Resolved::AlreadyLinked) => crate::http::account::view::back("link-already"),
        Ok(_) => crate::http::account::view::back("link-failed"),
        Err(e) => errors::server_page(e),
    }
}

/// `POST /federation/{id}/backchannel-logout` (Back-Channel Logout 1.0 §2.5, §2.8).
pub async fn backchannel(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    if let Some(limited) = guard::limit_json(&req, &state, Bucket::Token) {
        return limited;
    }
    let token = match params::require_form(&req).and_then(|_| params::unique_form(&body)) {
        Ok(form) => params::field(&form, "logout_token").to_string(),
        Err(_) => String::new(),
    };
    let refusal = |status: StatusCode, text: &str| {
        HttpResponse::build(status)
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(serde_json::json!({"error": "invalid_request", "error_description": text}))
    };
    match fed::logout::backchannel(&state.ctx(), &state.upstreams, &path, &token).await {
        Ok(_) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(Refused::Unknown) => refusal(StatusCode::NOT_FOUND, "no such provider accepts logout tokens"),
        Err(Refused::Invalid(why)) => refusal(StatusCode::BAD_REQUEST, &why),
        Err(Refused::Server(e)) => errors::oauth_json(&e.into()),
    }
}

/// `POST /login/cancel`: "Return to the application without signing in".
pub async fn cancel(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    let Ok(form) = params::require_form(&req).and_then(|_| params::unique_form(&body)) else {
        return bad_request_page(crate::i18n::t().err_form);
    };
    let (request_id, csrf) = (params::field(&form, "request_id"), params::field(&form, "csrf"));
    let cx = state.ctx();
    let request = match crate::signin::resume(&cx, request_id, csrf, browser(&req, &state).as_ref()).await {
        Ok(Pending::Login(r)) => r,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let unavailable = params::field(&form, "reason") == "unavailable";
    match crate::signin::cancel(&cx, request_id, &request, unavailable).await {
        Ok(r) => respond(&r),
        Err(e) => resume_error(e),
    }
}

/// `POST /account/federation/{id}/link`: the signed-in user links an upstream account.
pub async fn link(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>, body: Bytes) -> HttpResponse {
    let (v, _) = match crate::http::account::forms::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    // A link is a way in that outlives a password change: as for an authenticator app
    // or a passkey, the person proves again who they are first.
    if !crate::http::account::reauth::recently_authenticated(&state, &v) {
        if crate::crypto::password::has_password(&v.user.password_hash) {
            return errors::redirect(&crate::http::account::reauth::confirm_url("link"));
        }
        return crate::http::account::view::back("link-reauth");
    }
    let p = match fed::find(&state.ctx(), &path).await {
        Ok(Some(p)) => p,
        Ok(None) => return crate::http::account::view::back("link-failed"),
        Err(e) => return errors::server_page(e),
    };
    let (value, new_cookie) = browser_cookie(&req, &state);
    let then = Pending::Portal("/account".into());
    let mut resp = match flow::begin(
        &state.ctx(),
        &state.upstreams,
        &p,
        None,
        then,
        Some(v.user.id),
        &TokenHash::of(&value),
    )
    .await
    {
        Ok(url) => to_upstream(&url),
        Err(Begin::Unavailable(_)) => crate::http::account::view::back("link-unavailable"),
        Err(Begin::Expired) => resume_error(ResumeError::Expired),
        Err(Begin::Server(e)) => errors::server_page(e),
    };
    set_browser(&mut resp, &state, new_cookie);
    resp
}

/// `POST /account/federation/{id}/unlink`.
pub async fn unlink(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    let (v, _) = match crate::http::account::forms::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match identity::unlink(&state.ctx(), v.user.id, &path).await {
        Ok(Unlink::Done) => crate::http::account::view::back("unlinked"),
        Ok(Unlink::NotLinked) => crate::http::account::view::back("link-failed"),
        Ok(Unlink::LastWay) => crate::http::account::view::back("unlink-last"),
        Err(e) => errors::server_page(e),
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/federation/{id}/start", web::post().to(start))
        .route("/federation/{id}/callback", web::get().to(callback))
        .route("/federation/{id}/backchannel-logout", web::post().to(backchannel))
        .route("/login/cancel", web::post().to(cancel))
        .route("/account/federation/{id}/link", web::post().to(link))
        .route("/account/federation/{id}/unlink", web::post().to(unlink));
}
