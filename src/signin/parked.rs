//! The parked request: what a sign-in waits for, kept server-side under names sent
//! to the browser (a request id and a CSRF token bound to the browser), resumed once
//! by the next step.

use crate::error::Internal;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::crypto::TokenHash;
use crate::db;
use crate::domain::Secret;
use crate::oidc::authorize::AuthRequest;
use crate::oidc::Ctx;
use crate::signin::Federated;

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
    /// A login form's step: on the way to an application, a device or Tessera's own
    /// pages (the steps a password, passkey, mailed code or sign-up may go on from).
    pub fn is_login_form(&self) -> bool {
        matches!(self, Pending::Login(_) | Pending::DeviceLogin(_) | Pending::Portal(_))
    }

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
pub(crate) struct ParkRow {
    id_hash: TokenHash,
    csrf_hash: TokenHash,
    browser: TokenHash,
    params: String,
    expires_at: i64,
}

impl ParkRow {
    pub(crate) fn new(cx: &Ctx<'_>, pending: &Pending, browser: &TokenHash) -> Result<(Self, Parked), Internal> {
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

    pub(crate) fn insert(&self, conn: &db::Tx<'_>, now: i64) -> Result<(), db::DbError> {
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

/// The login form's step a form names (`resume`); any other step reads as expired.
pub async fn resume_login(
    cx: &Ctx<'_>,
    (request_id, csrf): (&str, &str),
    browser: Option<&TokenHash>,
) -> Result<Pending, ResumeError> {
    let pending = resume(cx, request_id, csrf, browser).await?;
    if pending.is_login_form() {
        Ok(pending)
    } else {
        Err(ResumeError::Expired)
    }
}

impl From<Internal> for ResumeError {
    fn from(e: Internal) -> Self {
        ResumeError::Server(e)
    }
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
