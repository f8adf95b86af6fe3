//! The sign-in step of an authorization: the request parked server-side with a CSRF
//! token bound to the browser, then resumed and turned into a session and a code.

use subtle::ConstantTimeEq;

use super::authorize::{code_record, success_url, AuthRequest};
use super::OAuthError;
use crate::crypto::random::random_id;
use crate::crypto::{Secret, TokenHash};
use crate::db::{self, sessions::Session};
use crate::state::AppState;

/// What the login form carries: names of a server-side record, not the request itself.
pub struct Parked {
    pub request_id: Secret,
    pub csrf: Secret,
}

#[derive(Debug)]
pub enum ResumeError {
    /// Unknown, used or expired: the person starts again from the application.
    Expired,
    /// The CSRF token or browser binding does not match.
    Forged,
    Server(OAuthError),
}

impl From<db::DbError> for ResumeError {
    fn from(e: db::DbError) -> Self {
        ResumeError::Server(e.into())
    }
}

pub async fn park(state: &AppState, req: &AuthRequest, browser: &TokenHash) -> Result<Parked, OAuthError> {
    let parked = Parked {
        request_id: Secret::generate(),
        csrf: Secret::generate(),
    };
    let params = serde_json::to_string(req).map_err(|_| OAuthError::server_error())?;
    let now = state.clock.now();
    let expires_at = now + state.settings.lifetimes.login_request;
    let (id_hash, csrf_hash, browser) = (parked.request_id.hash(), parked.csrf.hash(), *browser);
    state
        .db
        .write(move |c| {
            db::sessions::create_login_request(
                c,
                &db::sessions::NewLoginRequest {
                    id_hash: &id_hash,
                    csrf_hash: &csrf_hash,
                    browser_hash: &browser,
                    params: &params,
                    now,
                    expires_at,
                },
            )
        })
        .await?;
    Ok(parked)
}

fn same(a: &TokenHash, b: &TokenHash) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Finds the parked request the form names and checks that this browser, with this
/// CSRF token, is the one it was shown to.
pub async fn resume(
    state: &AppState,
    request_id: &str,
    csrf: &str,
    browser: Option<&TokenHash>,
) -> Result<AuthRequest, ResumeError> {
    if request_id.is_empty() || request_id.len() > 128 {
        return Err(ResumeError::Expired);
    }
    let id_hash = TokenHash::of(request_id);
    let now = state.clock.now();
    let parked = state
        .db
        .read(move |c| db::sessions::find_login_request(c, &id_hash, now))
        .await?
        .ok_or(ResumeError::Expired)?;
    let browser_ok = browser.is_some_and(|b| same(b, &parked.browser_hash));
    if !browser_ok || !same(&TokenHash::of(csrf), &parked.csrf_hash) {
        return Err(ResumeError::Forged);
    }
    serde_json::from_str(&parked.params).map_err(|_| ResumeError::Expired)
}

/// The outcome of a successful sign-in.
pub struct SignedIn {
    pub redirect: String,
    pub session_cookie: Secret,
    pub session: Session,
}

/// Consumes the parked request, opens a session (ending `previous`, if any) and stores
/// the code, all in one transaction: a double submit yields one session and one code.
pub async fn finish(
    state: &AppState,
    request_id: &str,
    req: &AuthRequest,
    user_id: i64,
    previous: Option<TokenHash>,
) -> Result<SignedIn, ResumeError> {
    let now = state.clock.now();
    let cookie = Secret::generate();
    let session = Session {
        sid: random_id(),
        user_id,
        auth_time: now,
        expires_at: now + state.settings.lifetimes.session,
    };
    let code = Secret::generate();
    let (record, _) = code_record(state, req, &session, &code);
    let (id_hash, cookie_hash, s) = (TokenHash::of(request_id), cookie.hash(), session.clone());
    let consumed = state
        .db
        .write(move |c| {
            if !db::sessions::consume_login_request(c, &id_hash, now)? {
                return Ok(false);
            }
            if let Some(old) = previous {
                db::sessions::end(c, &old, now)?;
            }
            db::sessions::create(
                c,
                &db::sessions::NewSession {
                    id_hash: &cookie_hash,
                    sid: &s.sid,
                    user_id: s.user_id,
                    auth_time: s.auth_time,
                    now,
                    expires_at: s.expires_at,
                },
            )?;
            record.insert(c, now)?;
            Ok(true)
        })
        .await?;
    if !consumed {
        return Err(ResumeError::Expired);
    }
    Ok(SignedIn {
        redirect: success_url(state, req, &code),
        session_cookie: cookie,
        session,
    })
}

/// The session behind a cookie value, if it is live.
pub async fn current_session(state: &AppState, cookie: Option<&str>) -> Result<Option<Session>, OAuthError> {
    let Some(value) = cookie.filter(|v| !v.is_empty() && v.len() <= 128) else {
        return Ok(None);
    };
    let hash = TokenHash::of(value);
    let now = state.clock.now();
    Ok(state.db.read(move |c| db::sessions::find_active(c, &hash, now)).await?)
}
