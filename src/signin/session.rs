//! The end of a sign-in: the parked request used up, the session opened (ending the
//! one it replaces) and the code stored or the consent step parked, in one transaction;
//! and the consent decision.

use crate::error::Internal;

use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, sessions::Session};
use crate::domain::Secret;
use crate::oidc::authorize::{
    claims_beyond_scope, code_record, consent_needed, denied_response, AuthRequest, AuthResponse,
};
use crate::oidc::{Ctx, ErrorCode, OAuthError};
use crate::signin::parked::{consume, ParkRow, Parked, Pending, ResumeError};
use crate::signin::SignIn;

/// Where a completed sign-in leads.
pub enum AfterLogin {
    Respond(AuthResponse),
    /// Consent is needed first; the consent page is parked under these names.
    Consent(Parked),
    /// Signed in, but not allowed to use this client.
    Denied(AuthResponse),
}

/// The outcome of a successful sign-in.
pub struct SignedIn {
    pub session_cookie: Secret,
    pub session: Session,
    pub next: AfterLogin,
}

/// Consumes the parked request, opens a session (ending `previous`, if any) and
/// either stores the code or parks the consent step, all in one transaction: a double
/// submit yields one session and one code.
pub async fn finish(
    cx: &Ctx<'_>,
    request_id: &str,
    req: &AuthRequest,
    who: &SignIn,
    previous: Option<TokenHash>,
    browser: &TokenHash,
) -> Result<SignedIn, ResumeError> {
    let now = cx.now;
    let cookie = Secret::generate();
    let session = new_session(cx, who);
    let who = who.clone();
    let code = Secret::generate();
    let record = code_record(cx, req, &session, &code);
    let (consent_row, consent_names) = ParkRow::new(cx, &Pending::Consent(req.clone()), browser)?;
    let (id_hash, cookie_hash, s, r) = (TokenHash::of(request_id), cookie.hash(), session.clone(), req.clone());
    let outcome = cx
        .db
        .write(move |c| {
            if !db::sessions::consume_login_request(c, &id_hash, now)?.won() {
                return Ok(None);
            }
            if let Some(old) = previous {
                db::sessions::end(c, &old, now)?;
            }
            store_session(c, &cookie_hash, &s, &who, now)?;
            if !db::clients::group_allowed(c, &r.client_id, s.user_id)? {
                return Ok(Some(Step::Denied));
            }
            if consent_needed(c, &r, s.user_id)? {
                consent_row.insert(c, now)?;
                return Ok(Some(Step::Consent));
            }
            record.insert(c, now)?;
            Ok(Some(Step::Code))
        })
        .await?;
    let next = match outcome {
        None => return Err(ResumeError::Expired),
        Some(Step::Code) => AfterLogin::Respond(AuthResponse::code(cx.issuer, req, &code)),
        Some(Step::Consent) => AfterLogin::Consent(consent_names),
        Some(Step::Denied) => AfterLogin::Denied(denied_response(cx, req)),
    };
    Ok(SignedIn {
        session_cookie: cookie,
        session,
        next,
    })
}

enum Step {
    Code,
    Consent,
    Denied,
}

pub fn new_session(cx: &Ctx<'_>, who: &SignIn) -> Session {
    let now = cx.now;
    Session {
        sid: random_id(),
        user_id: who.user_id,
        auth_time: now,
        expires_at: now + cx.settings.lifetimes.session,
        amr: who.amr.to_string(),
        reauth_at: None,
    }
}

pub fn store_session(
    conn: &db::Tx<'_>,
    cookie_hash: &TokenHash,
    s: &Session,
    who: &SignIn,
    now: i64,
) -> Result<(), db::DbError> {
    db::sessions::create(
        conn,
        &db::sessions::NewSession {
            id_hash: cookie_hash,
            sid: &s.sid,
            user_id: s.user_id,
            auth_time: s.auth_time,
            now,
            expires_at: s.expires_at,
            amr: &s.amr,
            user_agent: who.user_agent.as_deref(),
            ip: who.ip.as_deref(),
        },
    )?;
    if let Some(f) = &who.federated {
        db::sessions::set_federated(conn, cookie_hash, &f.provider, &f.subject, f.sid.as_deref())?;
    }
    Ok(())
}

/// Consumes a parked login that is not an authorization (the device flow) and opens
/// a session for the user.
pub async fn finish_session_only(
    cx: &Ctx<'_>,
    request_id: &str,
    who: &SignIn,
    previous: Option<TokenHash>,
) -> Result<(Secret, Session), ResumeError> {
    let now = cx.now;
    let cookie = Secret::generate();
    let session = new_session(cx, who);
    let who = who.clone();
    let (id_hash, cookie_hash, s) = (TokenHash::of(request_id), cookie.hash(), session.clone());
    let consumed = cx
        .db
        .write(move |c| {
            if !db::sessions::consume_login_request(c, &id_hash, now)?.won() {
                return Ok(false);
            }
            if let Some(old) = previous {
                db::sessions::end(c, &old, now)?;
            }
            store_session(c, &cookie_hash, &s, &who, now)?;
            Ok(true)
        })
        .await?;
    if !consumed {
        return Err(ResumeError::Expired);
    }
    Ok((cookie, session))
}

/// Consumes a parked step without acting on it (a device decision, recorded apart).
/// The person gives up on a parked authorization (after an upstream failed): the
/// record is used up and the client is told, RFC 6749 §4.1.2.1 — `access_denied`, or
/// `temporarily_unavailable` when the upstream could not be reached.
pub async fn cancel(
    cx: &Ctx<'_>,
    request_id: &str,
    req: &AuthRequest,
    unavailable: bool,
) -> Result<AuthResponse, ResumeError> {
    consume(cx, request_id).await?;
    let e = if unavailable {
        OAuthError::new(
            ErrorCode::TemporarilyUnavailable,
            "the identity provider chosen for the sign-in could not be reached",
        )
    } else {
        OAuthError::new(ErrorCode::AccessDenied, "the sign-in was cancelled")
    };
    Ok(AuthResponse::error_for(cx.issuer, req, &e))
}

/// The user's answer on the consent page (Core §3.1.2.4): approval is remembered and a
/// code issued; refusal is `access_denied` (RFC 6749 §4.1.2.1).
pub async fn decide_consent(
    cx: &Ctx<'_>,
    request_id: &str,
    req: &AuthRequest,
    session: &Session,
    approve: bool,
) -> Result<AuthResponse, ResumeError> {
    let now = cx.now;
    let code = Secret::generate();
    let record = code_record(cx, req, session, &code);
    let (id_hash, uid, client_id, scope) = (
        TokenHash::of(request_id),
        session.user_id,
        req.client_id.clone(),
        req.scope.clone(),
    );
    let claims = claims_beyond_scope(req).join(" ");
    let consumed = cx
        .db
        .write(move |c| {
            if !db::sessions::consume_login_request(c, &id_hash, now)?.won() {
                return Ok(false);
            }
            if approve {
                db::consents::grant(c, uid, &client_id, &scope, &claims, now)?;
                record.insert(c, now)?;
            }
            Ok(true)
        })
        .await?;
    if !consumed {
        return Err(ResumeError::Expired);
    }
    if approve {
        Ok(AuthResponse::code(cx.issuer, req, &code))
    } else {
        let denied = OAuthError::new(ErrorCode::AccessDenied, "the user declined the request");
        Ok(AuthResponse::error_for(cx.issuer, req, &denied))
    }
}

/// The session behind a cookie value, if it is live.
pub async fn current_session(cx: &Ctx<'_>, cookie: Option<&str>) -> Result<Option<Session>, Internal> {
    let Some(value) = cookie.filter(|v| !v.is_empty() && v.len() <= 128) else {
        return Ok(None);
    };
    let hash = TokenHash::of(value);
    let now = cx.now;
    Ok(cx.db.read(move |c| db::sessions::find_active(c, &hash, now)).await?)
}
