//! TOTP as a second factor: enrolment (an unconfirmed secret, confirmed by a first
//! code, which also issues the recovery codes), the check at sign-in, and removal.
//! Secrets are sealed with the master key when one is set. Accounts without an app may
//! have codes sent by mail instead (`lifecycle::email_mfa`), which the sign-in's second
//! step checks (`lifecycle::second_factor`).

use super::totp;
use crate::config::Settings;
use crate::context::Ctx;
use crate::crypto::{sealed, TokenHash};
use crate::db::{self, DbError};
use crate::error::Internal;

#[derive(Debug, thiserror::Error)]
pub enum MfaError {
    #[error("that code is not valid")]
    InvalidCode,
    #[error("no authenticator is being set up")]
    NotStarted,
    #[error(transparent)]
    Server(#[from] Internal),
}

impl From<DbError> for MfaError {
    fn from(e: DbError) -> Self {
        MfaError::Server(e.into())
    }
}

/// A TOTP secret that cannot be sealed or opened (a wrong master key, a damaged
/// row): the server's failure, logged here.
fn secret_failed(why: String) -> MfaError {
    tracing::error!(error = %why, "TOTP secret cannot be read");
    MfaError::Server(Internal::Failed)
}

/// Which factor a successful check used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Used {
    Totp,
    RecoveryCode,
    /// A code mailed at the second-factor step (`lifecycle::email_mfa`).
    EmailCode,
}

/// The second factor an account is asked for at sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Totp,
    Email,
}

fn seal(settings: &Settings, secret: &str) -> Result<String, MfaError> {
    sealed::seal_text(settings.master_key.as_ref(), secret).map_err(secret_failed)
}

fn open(settings: &Settings, stored: &str) -> Result<String, MfaError> {
    sealed::open_text(settings.master_key.as_ref(), stored).map_err(secret_failed)
}

/// Whether a password sign-in needs a second step: an authenticator app or codes by mail.
pub async fn enabled(cx: &Ctx<'_>, user_id: i64) -> Result<bool, DbError> {
    Ok(kind(cx, user_id).await?.is_some())
}

/// The account's second factor. An authenticator app wins over codes by mail: an
/// account that enrols one after choosing email codes keeps that choice unused, and
/// falls back to it (never to no second factor) if the app is removed.
pub async fn kind(cx: &Ctx<'_>, user_id: i64) -> Result<Option<Kind>, DbError> {
    cx.db
        .read(move |c| {
            Ok(if db::mfa::enabled(c, user_id)? {
                Some(Kind::Totp)
            } else if db::users::lifecycle(c, user_id)?.email_mfa {
                Some(Kind::Email)
            } else {
                None
            })
        })
        .await
}

/// The secret being enrolled: the pending one if any, else a new one. `None` when
/// TOTP is already on.
pub async fn begin(cx: &Ctx<'_>, user_id: i64) -> Result<Option<String>, MfaError> {
    if let Some(t) = cx.db.read(move |c| db::mfa::find(c, user_id)).await? {
        if t.confirmed {
            return Ok(None);
        }
        return open(cx.settings, &t.secret).map(Some);
    }
    let secret = totp::new_secret();
    let stored = seal(cx.settings, &secret)?;
    let now = cx.now;
    let fresh = cx.db.write(move |c| db::mfa::begin(c, user_id, &stored, now)).await?;
    Ok(fresh.then_some(secret))
}

/// Confirms enrolment with a first code; returns the recovery codes, shown once.
pub async fn confirm(cx: &Ctx<'_>, user_id: i64, code: &str) -> Result<Vec<String>, MfaError> {
    let pending = cx
        .db
        .read(move |c| db::mfa::find(c, user_id))
        .await?
        .filter(|t| !t.confirmed)
        .ok_or(MfaError::NotStarted)?;
    let secret = open(cx.settings, &pending.secret)?;
    let now = cx.now;
    let step = totp::verify(&secret, code, now, pending.last_step).ok_or(MfaError::InvalidCode)?;
    let codes = totp::new_recovery_codes();
    let hashes: Vec<TokenHash> = codes
        .iter()
        .map(|c| TokenHash::of(&totp::normalise_recovery(c)))
        .collect();
    let mail = crate::mail::outbox::Mail::new(cx.settings);
    let done = cx
        .db
        .write(move |c| {
            if !db::mfa::confirm(c, user_id, step, &hashes, now)? {
                return Ok(false);
            }
            if let Some(user) = db::users::find_by_id(c, user_id)? {
                crate::mail::outbox::notify(
                    c,
                    &mail,
                    &user,
                    mail.t.mail_totp_added_subject,
                    &mail.t.fill(mail.t.mail_totp_added, "username", &user.username),
                    now,
                )?;
            }
            Ok(true)
        })
        .await?;
    if done {
        cx.mail_wakeup.notify_one();
        Ok(codes)
    } else {
        Err(MfaError::NotStarted)
    }
}

/// What a code typed at sign-in came to here.
pub enum Checked {
    /// An app's code or a recovery code, now spent.
    Used(Used),
    /// Six digits for an account without a confirmed app: perhaps a code sent by mail,
    /// which the sign-in checks (`lifecycle::second_factor`).
    NoApp(String),
}

/// Checks a code at sign-in: six digits are a TOTP code, anything else a recovery
/// code. Each is spent in one conditional update, so a replay loses.
pub async fn check(cx: &Ctx<'_>, user_id: i64, code: &str) -> Result<Checked, MfaError> {
    let code = code.trim();
    if code.is_empty() || code.len() > 64 {
        return Err(MfaError::InvalidCode);
    }
    let now = cx.now;
    let digits: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let Some(t) = cx
            .db
            .read(move |c| db::mfa::find(c, user_id))
            .await?
            .filter(|t| t.confirmed)
        else {
            return Ok(Checked::NoApp(digits));
        };
        let secret = open(cx.settings, &t.secret)?;
        let step = totp::verify(&secret, &digits, now, t.last_step).ok_or(MfaError::InvalidCode)?;
        let fresh = cx
            .db
            .write(move |c| Ok(db::mfa::use_step(c, user_id, step)?.won()))
            .await?;
        return if fresh {
            Ok(Checked::Used(Used::Totp))
        } else {
            Err(MfaError::InvalidCode)
        };
    }
    let hash = TokenHash::of(&totp::normalise_recovery(code));
    let spent = cx
        .db
        .write(move |c| Ok(db::mfa::use_recovery(c, user_id, &hash, now)?.won()))
        .await?;
    if spent {
        Ok(Checked::Used(Used::RecoveryCode))
    } else {
        Err(MfaError::InvalidCode)
    }
}

pub async fn disable(cx: &Ctx<'_>, user_id: i64) -> Result<bool, DbError> {
    cx.db.write(move |c| db::mfa::disable(c, user_id)).await
}
