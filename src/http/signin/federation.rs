//! Sign-in through an upstream provider: the login page's "Sign in with …" buttons,
//! `idp=` on the authorization request, the upstream's callback, its back-channel
//! logout, linking and unlinking on the account page, and "Return to the application"
//! after an upstream failed.

use std::collections::HashMap;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::auth::limits::Bucket;
use crate::auth::mfa;
use crate::crypto::TokenHash;
use crate::federation::flow::{self, Answer, Begin};
use crate::federation::identity::{self, Resolved, Unlink};
use crate::federation::{self as fed, logout::Refused, Button, UpstreamError};
use crate::http::protocol::authorize::{bad_request_page, browser_cookie, respond, set_browser};
use crate::http::signin::login::{complete_sign_in, purpose, resume_error, second_step_after, First, Resumed};
use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::authorize::AuthRequest;
use crate::oidc::interaction::{self, Federated, Parked, Pending, ResumeError, SignIn};
use crate::state::AppState;

/// The login page's upstream buttons; a storage failure shows none rather than no page.
pub async fn buttons(state: &AppState) -> Vec<Button> {
    match fed::buttons(&state.ctx()).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = ?e, "cannot list upstream providers for the login page");
            Vec::new()
        }
    }
}

/// The login form again for a parked step, with why the upstream sign-in did not
/// happen and, for an authorization, the way back to the application.
async fn login_again(
    state: &AppState,
    parked: &Parked,
    pending: &Pending,
    status: StatusCode,
    message: &str,
    unavailable: bool,
) -> HttpResponse {
    let page = pages::LoginPage {
        about: crate::http::protocol::registered_logo::about(state, pending).await,
        client_name: &purpose(state, pending).await,
        request_id: parked.request_id.expose(),
        csrf: parked.csrf.expose(),
        username: "",
        error: Some(message),
        mail: state.settings.smtp.is_some(),
        signup: crate::lifecycle::signup::open(&state.settings),
        providers: buttons(state).await,
        cancel: matches!(pending, Pending::Login(_)).then_some(if unavailable { "unavailable" } else { "denied" }),
        step: pages::LoginStep::first(&state.settings),
    };
    pages::render(status, &page)
}

fn needs_factor(name: &str) -> String {
    let t = crate::i18n::t();
    t.fill(t.federation_needs_factor, "provider", name)
}

fn unreachable_text(name: &str) -> String {
    let t = crate::i18n::t();
    t.fill(t.federation_unreachable, "provider", name)
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
    let pending = match interaction::resume(&state.ctx(), request_id, csrf, Some(&browser)).await {
        Ok(p @ (Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))) => p,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let parked = Parked {
        request_id: crate::crypto::Secret::from_string(request_id.to_string()),
        csrf: crate::crypto::Secret::from_string(csrf.to_string()),
    };
    let p = match fed::find(&state.ctx(), &path).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let msg = crate::i18n::t().federation_gone;
            return login_again(&state, &parked, &pending, StatusCode::NOT_FOUND, msg, false).await;
        }
        Err(e) => return errors::server_page(e),
    };
    match flow::begin(&state, &p, Some(request_id), pending.clone(), None, &browser).await {
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

fn to_upstream(url: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, url))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// An authorization request with `idp=ID` and a sign-in to do: straight to that
/// upstream. `None` when there is no such provider (the hint is advisory, and the
/// login page is shown), or when it cannot be reached (the login page says so).
pub async fn direct(req: &HttpRequest, state: &AppState, request: &AuthRequest, id: &str) -> Option<HttpResponse> {
    let p = match fed::find(&state.ctx(), id).await {
        Ok(Some(p)) => p,
        Ok(None) => return None,
        Err(e) => return Some(errors::server_page(e)),
    };
    let (value, new_cookie) = browser_cookie(req, state);
    let browser = TokenHash::of(&value);
    let then = Pending::Login(request.clone());
    let mut resp = match flow::begin(state, &p, None, then.clone(), None, &browser).await {
        Ok(url) => to_upstream(&url),
        Err(Begin::Unavailable(why)) => {
            tracing::warn!(provider = %p.id, reason = %why, "upstream sign-in could not start");
            let parked = match interaction::park(&state.ctx(), &then, &browser).await {
                Ok(p) => p,
                Err(e) => return Some(errors::server_page(e)),
            };
            let msg = unreachable_text(&p.name);
            login_again(state, &parked, &then, StatusCode::SERVICE_UNAVAILABLE, &msg, true).await
        }
        Err(Begin::Expired) => return Some(resume_error(ResumeError::Expired)),
        Err(Begin::Server(e)) => return Some(errors::server_page(e)),
    };
    set_browser(&mut resp, state, new_cookie);
    Some(resp)
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
    let browser = browser(&req, &state);
    let came = match flow::callback(&state, &path, &answer, browser.as_ref()).await {
        Ok(c) => c,
        Err(e) => return resume_error(e),
    };
    let Some(browser) = browser else {
        return resume_error(ResumeError::Forged);
    };
    let ip = guard::ip_text(&req, &state);
    let profile = match came.profile {
        Ok(p) => p,
        Err(e) => {
            let (status, unavailable, msg) = match &e {
                UpstreamError::Unavailable(_) => (StatusCode::BAD_GATEWAY, true, unreachable_text(&came.provider.name)),
                UpstreamError::Refused(why) => (
                    StatusCode::FORBIDDEN,
                    false,
                    crate::i18n::t().fill2(
                        crate::i18n::t().federation_refused,
                        "provider",
                        &came.provider.name,
                        "why",
                        why,
                    ),
                ),
            };
            crate::audit::Event::new("federation.failed")
                .actor(format!("provider:{}", came.provider.id))
                .ip(Some(ip))
                .detail(serde_json::json!({"reason": e.to_string()}))
                .log(&state)
                .await;
            if came.link_user.is_some() {
                let _ = interaction::consume(&state.ctx(), came.parked.request_id.expose()).await;
                return crate::http::account::back("link-failed");
            }
            return login_again(&state, &came.parked, &came.then, status, &msg, unavailable).await;
        }
    };
    if let Some(uid) = came.link_user {
        return finish_link(&req, &state, &came.provider, &profile, uid, &came.parked).await;
    }
    let user = match identity::resolve(&state.ctx(), &came.provider, &profile, None).await {
        Ok(Resolved::User(u)) => u,
        Ok(refusal) => {
            let name = &came.provider.name;
            let msg = match refusal {
                Resolved::Disabled => crate::i18n::t().federation_disabled.to_string(),
                Resolved::NeedsFactor => needs_factor(name),
                _ => crate::i18n::t().fill(crate::i18n::t().federation_unlinked, "provider", name),
            };
            return login_again(&state, &came.parked, &came.then, StatusCode::FORBIDDEN, &msg, false).await;
        }
        Err(e) => return errors::server_page(e),
    };
    let federated = Federated {
        provider: came.provider.id.clone(),
        subject: profile.subject.clone(),
        sid: profile.sid.clone(),
        amr: fed::session_amr(&profile.amr),
    };
    if came.provider.require_local_mfa {
        match mfa::kind(&state, user.id).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                let msg = needs_factor(&came.provider.name);
                return login_again(&state, &came.parked, &came.then, StatusCode::FORBIDDEN, &msg, false).await;
            }
            Err(e) => return errors::server_page(e),
        }
    }
    let request_id = came.parked.request_id.expose();
    let step = second_step_after(
        &req,
        &state,
        request_id,
        came.then,
        &browser,
        &user,
        First::Upstream,
        Some(federated.clone()),
    )
    .await;
    let pending = match step {
        Ok((pending, _)) => pending,
        Err(resp) => return resp,
    };
    let who = SignIn {
        user_id: user.id,
        amr: federated.amr.clone().into(),
        user_agent: guard::user_agent(&req),
        ip: Some(ip),
        federated: Some(federated),
    };
    let resumed = Resumed {
        request_id,
        pending,
        browser: &browser,
    };
    complete_sign_in(&req, &state, &state.ctx(), resumed, &who, &user.username).await
}

async fn finish_link(
    req: &HttpRequest,
    state: &AppState,
    p: &crate::db::providers::Provider,
    profile: &fed::Profile,
    uid: i64,
    parked: &Parked,
) -> HttpResponse {
    let _ = interaction::consume(&state.ctx(), parked.request_id.expose()).await;
    // Only the account that asked, still signed in here, gets the link.
    match crate::http::signin::portal::require(req, state).await {
        Ok(v) if v.user.id == uid => {}
        _ => return resume_error(ResumeError::Forged),
    }
    match identity::resolve(&state.ctx(), p, profile, Some(uid)).await {
        Ok(Resolved::Linked(_)) => crate::http::account::back("linked"),
        Ok(Resolved::LinkedElsewhere) => crate::http::account::back("link-elsewhere"),
        Ok(Resolved::AlreadyLinked) => crate::http::account::back("link-already"),
        Ok(_) => crate::http::account::back("link-failed"),
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
    let request = match interaction::resume(&cx, request_id, csrf, browser(&req, &state).as_ref()).await {
        Ok(Pending::Login(r)) => r,
        Ok(_) => return resume_error(ResumeError::Expired),
        Err(e) => return resume_error(e),
    };
    let unavailable = params::field(&form, "reason") == "unavailable";
    match interaction::cancel(&cx, request_id, &request, unavailable).await {
        Ok(r) => respond(&r),
        Err(e) => resume_error(e),
    }
}

/// `POST /account/federation/{id}/link`: the signed-in user links an upstream account.
pub async fn link(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>, body: Bytes) -> HttpResponse {
    let (v, _) = match crate::http::account::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    // A link is a way in that outlives a password change: as for an authenticator app
    // or a passkey, the person proves again who they are first.
    if !crate::http::account::confirm::recently_authenticated(&state, &v) {
        if crate::crypto::password::has_password(&v.user.password_hash) {
            return errors::redirect(&crate::http::account::confirm::confirm_url("link"));
        }
        return crate::http::account::back("link-reauth");
    }
    let p = match fed::find(&state.ctx(), &path).await {
        Ok(Some(p)) => p,
        Ok(None) => return crate::http::account::back("link-failed"),
        Err(e) => return errors::server_page(e),
    };
    let (value, new_cookie) = browser_cookie(&req, &state);
    let then = Pending::Portal("/account".into());
    let mut resp = match flow::begin(&state, &p, None, then, Some(v.user.id), &TokenHash::of(&value)).await {
        Ok(url) => to_upstream(&url),
        Err(Begin::Unavailable(_)) => crate::http::account::back("link-unavailable"),
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
    let (v, _) = match crate::http::account::posted(&req, &state, &body).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    match identity::unlink(&state.ctx(), v.user.id, &path).await {
        Ok(Unlink::Done) => crate::http::account::back("unlinked"),
        Ok(Unlink::NotLinked) => crate::http::account::back("link-failed"),
        Ok(Unlink::LastWay) => crate::http::account::back("unlink-last"),
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_unreachable_text_names_the_provider() {
        assert!(super::unreachable_text("Company SSO").starts_with("Company SSO cannot be reached"));
    }
}
