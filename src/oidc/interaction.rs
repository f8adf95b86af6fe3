//! The interactive steps of an authorization: the request parked server-side with a
//! CSRF token bound to the browser, resumed after sign-in or consent, and turned into
//! a session and a code.

use std::borrow::Cow;

use crate::error::Internal;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::authorize::{code_record, consent_needed, denied_response, AuthRequest, AuthResponse};
use super::{ErrorCode, OAuthError};
use crate::crypto::random::random_id;
use crate::crypto::{Secret, TokenHash};
use crate::db::{self, sessions::Session};
use crate::oidc::Ctx;

/// What a parked record waits for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", content = "request")]
pub enum Pending {
    /// The login form for an authorization request.
    Login(AuthRequest),
    /// The consent page for an authorization request, after sign-in.
    Consent(AuthRequest),
    /// The login form on the way to approving a device (RFC 8628); the user code.
    DeviceLogin(String),
    /// The approval page for a device; the user code.
    DeviceApprove(String),
    /// The login form for Tessera's own pages (`/account`, `/admin`); where to go after.
    Portal(String),
    /// The second factor, after a first factor for `user_id`; then the step that the
    /// login form was on.
    Mfa {
        user_id: i64,
        then: Box<Pending>,
        /// The first factor was a link or code by mail, not a password (for `amr`).
        /// Records parked before this field existed were all password sign-ins.
        #[serde(default)]
        by_mail: bool,
        /// The first factor was an upstream provider's sign-in.
        #[serde(default)]
        fed: Option<Federated>,
    },
    /// At an upstream provider, parked under the `state` sent to it: what the callback
    /// needs (the `nonce`, the PKCE verifier), then the step the sign-in was for.
    Federation {
        provider: String,
        nonce: String,
        verifier: String,
        /// Linking the upstream account to this signed-in account, not signing in.
        link_user: Option<i64>,
        then: Box<Pending>,
    },
}

impl Pending {
    /// The authorization request's `ui_locales`, through the steps that carry it.
    pub fn ui_locales(&self) -> Option<&str> {
        match self {
            Pending::Login(r) | Pending::Consent(r) => r.ui_locales.as_deref(),
            Pending::Mfa { then, .. } | Pending::Federation { then, .. } => then.ui_locales(),
            Pending::DeviceLogin(_) | Pending::DeviceApprove(_) | Pending::Portal(_) => None,
        }
    }

    /// Parsed, the step is what the pages of its sign-in are rendered in
    /// (`i18n::prefer`): its application's `ui_locales` unless the person picked.
    fn speak(self) -> Self {
        let locale = self.ui_locales().and_then(crate::i18n::from_ui_locales);
        crate::i18n::prefer(locale, crate::i18n::Source::Application);
        self
    }
}

/// Who signed in, how (RFC 8176 `amr`), and from where (shown on the account page).
#[derive(Debug, Clone)]
pub struct SignIn {
    pub user_id: i64,
    pub amr: Cow<'static, str>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    /// The upstream account the sign-in came through, if any.
    pub federated: Option<Federated>,
}

/// An upstream account behind a sign-in: its provider, subject and session id
/// (`sid`), which the upstream's back-channel logout names.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Federated {
    pub provider: String,
    pub subject: String,
    pub sid: Option<String>,
    /// The upstream's `amr` values with `fed` (RFC 8176 §2).
    pub amr: String,
}

/// `amr` for a password alone and for a password with a one-time code.
pub const AMR_PASSWORD: &str = "pwd";
pub const AMR_PASSWORD_OTP: &str = "pwd otp mfa";
/// A passkey with user verification: a key the device holds plus the PIN or biometric
/// that unlocked it (RFC 8176 `swk`, `user`; two factors).
pub const AMR_PASSKEY: &str = "swk user mfa";

/// What a form carries: names of a server-side record, not the request itself.
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
    Server(Internal),
}

impl From<db::DbError> for ResumeError {
    fn from(e: db::DbError) -> Self {
        ResumeError::Server(e.into())
    }
}

/// The row that parks `pending`, built outside the writer so it can join any transaction.
struct ParkRow {
    id_hash: TokenHash,
    csrf_hash: TokenHash,
    browser: TokenHash,
    params: String,
    expires_at: i64,
}

impl ParkRow {
    fn new(cx: &Ctx<'_>, pending: &Pending, browser: &TokenHash) -> Result<(Self, Parked), Internal> {
        Self::named(cx, pending, browser, Secret::generate())
    }

    fn named(cx: &Ctx<'_>, pending: &Pending, browser: &TokenHash, id: Secret) -> Result<(Self, Parked), Internal> {
        let parked = Parked {
            request_id: id,
            csrf: Secret::generate(),
        };
        let row = Self {
            id_hash: parked.request_id.hash(),
            csrf_hash: parked.csrf.hash(),
            browser: *browser,
            params: serde_json::to_string(pending).map_err(|_| Internal::Failed)?,
            expires_at: cx.now + cx.settings.lifetimes.login_request,
        };
        Ok((row, parked))
    }

    fn insert(&self, conn: &db::Tx<'_>, now: i64) -> Result<(), db::DbError> {
        db::sessions::create_login_request(
            conn,
            &db::sessions::NewLoginRequest {
                id_hash: &self.id_hash,
                csrf_hash: &self.csrf_hash,
                browser_hash: &self.browser,
                params: &self.params,
                now,
                expires_at: self.expires_at,
            },
        )
    }
}

pub async fn park(cx: &Ctx<'_>, pending: &Pending, browser: &TokenHash) -> Result<Parked, Internal> {
    let (row, parked) = ParkRow::new(cx, pending, browser)?;
    let now = cx.now;
    cx.db.write(move |c| row.insert(c, now)).await?;
    Ok(parked)
}

/// Parks `next` under the id `name` (a value sent elsewhere, such as the `state` of an
/// upstream authorization), in place of the record `consume` names when given: that
/// record is used up in the same transaction, so only one of two submissions goes on.
pub async fn park_named(
    cx: &Ctx<'_>,
    consume: Option<&str>,
    next: &Pending,
    browser: &TokenHash,
    name: Secret,
) -> Result<Parked, ResumeError> {
    let (row, parked) = ParkRow::named(cx, next, browser, name)?;
    swap_in(cx, consume, row).await?;
    Ok(parked)
}

/// Parks `next` in place of the record `request_id` names (used up), under new names.
pub async fn park_next(
    cx: &Ctx<'_>,
    request_id: &str,
    next: &Pending,
    browser: &TokenHash,
) -> Result<Parked, ResumeError> {
    let (row, parked) = ParkRow::new(cx, next, browser)?;
    swap_in(cx, Some(request_id), row).await?;
    Ok(parked)
}

async fn swap_in(cx: &Ctx<'_>, consume: Option<&str>, row: ParkRow) -> Result<(), ResumeError> {
    let (id_hash, now) = (consume.map(TokenHash::of), cx.now);
    let done = cx
        .db
        .write(move |c| {
            if let Some(h) = id_hash {
                if !db::sessions::consume_login_request(c, &h, now)?.won() {
                    return Ok(false);
                }
            }
            row.insert(c, now)?;
            Ok(true)
        })
        .await?;
    if done {
        Ok(())
    } else {
        Err(ResumeError::Expired)
    }
}

/// The record parked under `name` for this browser, without a CSRF token: the name
/// itself is the unguessable value (an upstream's `state`), bound to the browser.
pub async fn resume_named(cx: &Ctx<'_>, name: &str, browser: Option<&TokenHash>) -> Result<Pending, ResumeError> {
    if name.is_empty() || name.len() > 128 {
        return Err(ResumeError::Expired);
    }
    let (id_hash, now) = (TokenHash::of(name), cx.now);
    let parked = cx
        .db
        .read(move |c| db::sessions::find_login_request(c, &id_hash, now))
        .await?
        .ok_or(ResumeError::Expired)?;
    if !browser.is_some_and(|b| same(b, &parked.browser_hash)) {
        return Err(ResumeError::Forged);
    }
    serde_json::from_str(&parked.params)
        .map(Pending::speak)
        .map_err(|_| ResumeError::Expired)
}

/// Swaps the first-factor step for the second-factor step: the login form's record is
/// consumed and a new one parked, so the password (or mailed link) cannot be replayed
/// past the code. `by_mail`: the first factor was a link or code by mail.
pub async fn park_mfa(
    cx: &Ctx<'_>,
    request_id: &str,
    user_id: i64,
    then: Pending,
    browser: &TokenHash,
    by_mail: bool,
    fed: Option<Federated>,
) -> Result<Parked, ResumeError> {
    let pending = Pending::Mfa {
        user_id,
        then: Box::new(then),
        by_mail,
        fed,
    };
    park_next(cx, request_id, &pending, browser).await
}

fn same(a: &TokenHash, b: &TokenHash) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Finds the parked record the form names and checks that this browser, with this
/// CSRF token, is the one it was shown to.
pub async fn resume(
    cx: &Ctx<'_>,
    request_id: &str,
    csrf: &str,
    browser: Option<&TokenHash>,
) -> Result<Pending, ResumeError> {
    if request_id.is_empty() || request_id.len() > 128 {
        return Err(ResumeError::Expired);
    }
    let id_hash = TokenHash::of(request_id);
    let now = cx.now;
    let parked = cx
        .db
        .read(move |c| db::sessions::find_login_request(c, &id_hash, now))
        .await?
        .ok_or(ResumeError::Expired)?;
    let browser_ok = browser.is_some_and(|b| same(b, &parked.browser_hash));
    if !browser_ok || !same(&TokenHash::of(csrf), &parked.csrf_hash) {
        return Err(ResumeError::Forged);
    }
    serde_json::from_str(&parked.params)
        .map(Pending::speak)
        .map_err(|_| ResumeError::Expired)
}

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

impl From<Internal> for ResumeError {
    fn from(e: Internal) -> Self {
        ResumeError::Server(e)
    }
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

pub async fn consume(cx: &Ctx<'_>, request_id: &str) -> Result<(), ResumeError> {
    let (id_hash, now) = (TokenHash::of(request_id), cx.now);
    if cx
        .db
        .write(move |c| Ok(db::sessions::consume_login_request(c, &id_hash, now)?.won()))
        .await?
    {
        Ok(())
    } else {
        Err(ResumeError::Expired)
    }
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
    let claims = super::authorize::claims_beyond_scope(req).join(" ");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_factor_step_parked_before_by_mail_existed_still_loads() {
        let old = r#"{"step":"Mfa","request":{"user_id":7,"then":{"step":"Portal","request":"/account"}}}"#;
        match serde_json::from_str::<Pending>(old).unwrap() {
            Pending::Mfa { user_id, by_mail, .. } => assert_eq!((user_id, by_mail), (7, false)),
            other => panic!("{other:?}"),
        }
        let new = Pending::Mfa {
            user_id: 7,
            then: Box::new(Pending::Portal("/account".into())),
            by_mail: true,
            fed: None,
        };
        let back: Pending = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert!(matches!(back, Pending::Mfa { by_mail: true, .. }));
    }
}
