//! RP-Initiated Logout 1.0: `/logout` (the end_session_endpoint) and its confirmation.

use actix_web::cookie::{time::Duration, Cookie};
use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use subtle::ConstantTimeEq;

use crate::http::{cookies, errors, guard, pages, params};
use crate::oidc::frontchannel::{self, Frame};
use crate::oidc::logout::{self, LogoutError, LogoutRequest};
use crate::signin::current_session;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "logout.html")]
struct ConfirmPage<'a> {
    username: &'a str,
    csrf: &'a str,
    client_id: Option<&'a str>,
    post_logout_redirect_uri: Option<&'a str>,
    state: Option<&'a str>,
}

/// Front-Channel Logout 1.0 §3: one hidden iframe per client of the ended session
/// that registered a front-channel URI, and (when the client asked to be sent back)
/// the link the page continues to once they have had time to load.
#[derive(Template)]
#[template(path = "signed_out.html")]
struct SignedOutPage<'a> {
    frames: &'a [Frame],
    continue_to: Option<&'a str>,
}

/// Seconds the signed-out page waits for its iframes before following
/// `post_logout_redirect_uri` (§3 lets the OP choose; the frames load in parallel).
const FRAMES_WAIT: u32 = 2;

pub async fn logout_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    logout(&req, &state, req.query_string().as_bytes(), false).await
}

pub async fn logout_post(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if params::require_form(&req).is_err() {
        return invalid(crate::i18n::t().logout_not_form);
    }
    logout(&req, &state, &body, false).await
}

/// The confirmation form's target: the CSRF token proves the page was shown here.
pub async fn confirm(req: HttpRequest, state: web::Data<AppState>, body: Bytes) -> HttpResponse {
    if let Some(refused) = guard::cross_origin(&req, &state) {
        return refused;
    }
    if params::require_form(&req).is_err() {
        return invalid(crate::i18n::t().logout_bad_form);
    }
    logout(&req, &state, &body, true).await
}

fn invalid(message: &'static str) -> HttpResponse {
    errors::logout_page(LogoutError::Invalid(message))
}

async fn logout(req: &HttpRequest, state: &AppState, raw: &[u8], confirmed: bool) -> HttpResponse {
    let cx = state.ctx();
    let Ok(pairs) = params::pairs(raw) else {
        return invalid(crate::i18n::t().logout_too_many);
    };
    let request = match logout::validate(&cx, &pairs).await {
        Ok(r) => r,
        Err(e) => return errors::logout_page(e),
    };
    let cookie = params::cookie(req, cookies::session_name(state));
    let session = match current_session(&cx, cookie.as_deref()).await {
        Ok(s) => s,
        Err(e) => return errors::server_page(e),
    };
    let (Some(session), Some(cookie)) = (session, cookie) else {
        return finished(state, &request, &[]);
    };
    let csrf_ok = confirmed && {
        let given = pairs
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        bool::from(given.as_bytes().ct_eq(logout::confirmation_token(&cookie).as_bytes()))
    };
    if confirmed && !csrf_ok {
        return pages::error_page(
            StatusCode::FORBIDDEN,
            crate::i18n::t().logout_refused_title,
            crate::i18n::t().logout_forged,
            crate::i18n::t().logout_forged_hint,
        );
    }
    let proven = match logout::hint_matches(&cx, &request, &session).await {
        Ok(p) => p,
        Err(e) => return errors::logout_page(e),
    };
    if !csrf_ok && !proven {
        return confirmation(state, &pairs, &cookie, session.user_id).await;
    }
    // Read while the session still stands, as back-channel logout reads its audience.
    let frames = match frontchannel::frames(&cx, &session.sid).await {
        Ok(f) => f,
        Err(e) => return errors::server_page(e),
    };
    if let Err(e) = logout::end_session(&cx, &session).await {
        return errors::server_page(e);
    }
    // The session has ended: whatever happens now, the user is signed out.
    let who = crate::account::actor_name(&state.ctx(), session.user_id).await;
    crate::audit::Event::new("logout")
        .actor(who)
        .target(format!("session:{}", session.sid))
        .ip(Some(crate::http::guard::ip_text(req, state)))
        .log(&state.db, state.clock.now())
        .await;
    finished(state, &request, &frames)
}

async fn confirmation(state: &AppState, pairs: &[(String, String)], cookie: &str, user_id: i64) -> HttpResponse {
    let get = |n: &str| params::first(pairs, n);
    let username = match crate::account::username(&state.ctx(), user_id).await {
        Ok(name) => name.unwrap_or_default(),
        Err(e) => return errors::server_page(e),
    };
    let csrf = logout::confirmation_token(cookie);
    let page = ConfirmPage {
        username: &username,
        csrf: &csrf,
        client_id: get("client_id"),
        post_logout_redirect_uri: get("post_logout_redirect_uri"),
        state: get("state"),
    };
    pages::render(StatusCode::OK, &page)
}

/// After logout (or when nobody was signed in): back to the client if it registered
/// where, otherwise a page; the session cookie is cleared either way, and the
/// forward-auth cookie too (it no longer opens anything: its session has ended).
/// With front-channel frames the page is shown first, and continues to the client by
/// a `Refresh` header (HTML §7.11.1, no script needed) and a link.
fn finished(state: &AppState, request: &LogoutRequest, frames: &[Frame]) -> HttpResponse {
    let back = request.post_logout_redirect_uri.as_ref().map(|uri| {
        let mut q = Vec::new();
        if let Some(s) = &request.state {
            q.push(("state", s.as_str()));
        }
        uri.with_query(&q)
    });
    let mut resp = match back {
        Some(to) if frames.is_empty() => errors::redirect(&to),
        back => {
            let page = SignedOutPage {
                frames,
                continue_to: back.as_deref(),
            };
            let mut resp = pages::render_with_frames(StatusCode::OK, &page, &frontchannel::origins(frames));
            if let Some(to) = back.as_deref() {
                if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&format!("{FRAMES_WAIT}; url={to}")) {
                    resp.headers_mut()
                        .insert(actix_web::http::header::HeaderName::from_static("refresh"), v);
                }
            }
            resp
        }
    };
    let clear = Cookie::build(cookies::session_name(state), "")
        .path("/")
        .http_only(true)
        .secure(state.secure_cookies())
        .max_age(Duration::ZERO)
        .finish();
    let _ = resp.add_cookie(&clear);
    let _ = resp.add_cookie(&cookies::forward_auth_removal(state));
    resp
}
