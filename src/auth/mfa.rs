//! TOTP as a second factor: enrolment (an unconfirmed secret, confirmed by a first
//! code, which also issues the recovery codes), the check at sign-in, and removal.
//! Secrets are sealed with the master key when one is set. Accounts without an app may
//! have codes sent by mail instead (`lifecycle::email_mfa`), checked here alike.

use super::totp;
use crate::audit::Event;
use crate::crypto::{sealed, TokenHash};
use crate::db::{self, users::User, DbError};
use crate::error::Internal;
use crate::state::AppState;

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

fn seal(state: &AppState, secret: &str) -> Result<String, MfaError> {
    sealed::seal_text(state.settings.master_key.as_ref(), secret).map_err(secret_failed)
}

fn open(state: &AppState, stored: &str) -> Result<String, MfaError> {
    sealed::open_text(state.settings.master_key.as_ref(), stored).map_err(secret_failed)
}

/// Whether a password sign-in needs a second step: an authenticator app or codes by mail.
pub async fn enabled(state: &AppState, user_id: i64) -> Result<bool, DbError> {
    Ok(kind(state, user_id).await?.is_some())
}

/// The account's second factor. An authenticator app wins over codes by mail: an
/// account that enrols one after choosing email codes keeps that choice unused, and
/// falls back to it (never to no second factor) if the app is removed.
pub async fn kind(state: &AppState, user_id: i64) -> Result<Option<Kind>, DbError> {
    state
        .db
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
pub async fn begin(state: &AppState, user_id: i64) -> Result<Option<String>, MfaError> {
    if let Some(t) = state.db.read(move |c| db::mfa::find(c, user_id)).await? {
        if t.confirmed {
            return Ok(None);
        }
        return open(state, &t.secret).map(Some);
    }
    let secret = totp::new_secret();
    let stored = seal(state, &secret)?;
    let now = state.clock.now();
    let fresh = state
        .db
        .write(move |c| db::mfa::begin(c, user_id, &stored, now))
        .await?;
    Ok(fresh.then_some(secret))
}

/// Confirms enrolment with a first code; returns the recovery codes, shown once.
pub async fn confirm(state: &AppState, user_id: i64, code: &str) -> Result<Vec<String>, MfaError> {
    let pending = state
        .db
        .read(move |c| db::mfa::find(c, user_id))
        .await?
        .filter(|t| !t.confirmed)
        .ok_or(MfaError::NotStarted)?;
    let secret = open(state, &pending.secret)?;
    let now = state.clock.now();
    let step = totp::verify(&secret, code, now, pending.last_step).ok_or(MfaError::InvalidCode)?;
    let codes = totp::new_recovery_codes();
    let hashes: Vec<TokenHash> = codes
        .iter()
        .map(|c| TokenHash::of(&totp::normalise_recovery(c)))
        .collect();
    let settings = state.settings.clone();
    let done = state
        .db
        .write(move |c| {
            if !db::mfa::confirm(c, user_id, step, &hashes, now)? {
                return Ok(false);
            }
            if let Some(user) = db::users::find_by_id(c, user_id)? {
                crate::lifecycle::notify(
                    c,
                    &settings,
                    &user,
                    crate::i18n::t().mail_totp_added_subject,
                    &crate::i18n::t().fill(crate::i18n::t().mail_totp_added, "username", &user.username),
                    now,
                )?;
            }
            Ok(true)
        })
        .await?;
    if done {
        crate::lifecycle::wake(state);
        Ok(codes)
    } else {
        Err(MfaError::NotStarted)
    }
}

/// Checks a code at sign-in: six digits are a TOTP code, anything else a recovery
/// code. Each is spent in one conditional update, so a replay loses.
pub async fn check(state: &AppState, user_id: i64, code: &str) -> Result<Used, MfaError> {
    let code = code.trim();
    if code.is_empty() || code.len() > 64 {
        return Err(MfaError::InvalidCode);
    }
    let now = state.clock.now();
    let digits: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let Some(t) = state
            .db
            .read(move |c| db::mfa::find(c, user_id))
            .await?
            .filter(|t| t.confirmed)
        else {
            // No authenticator app: six digits may be a code sent by mail.
            let right = state
                .db
                .write(move |c| crate::lifecycle::email_mfa::check_code(c, user_id, &digits, now))
                .await?;
            return if right {
                Ok(Used::EmailCode)
            } else {
                Err(MfaError::InvalidCode)
            };
        };
        let secret = open(state, &t.secret)?;
        let step = totp::verify(&secret, &digits, now, t.last_step).ok_or(MfaError::InvalidCode)?;
        let fresh = state
            .db
            .write(move |c| Ok(db::mfa::use_step(c, user_id, step)?.won()))
            .await?;
        return if fresh {
            Ok(Used::Totp)
        } else {
            Err(MfaError::InvalidCode)
        };
    }
    let hash = TokenHash::of(&totp::normalise_recovery(code));
    let spent = state
        .db
        .write(move |c| Ok(db::mfa::use_recovery(c, user_id, &hash, now)?.won()))
        .await?;
    if spent {
        Ok(Used::RecoveryCode)
    } else {
        Err(MfaError::InvalidCode)
    }
}

pub async fn disable(state: &AppState, user_id: i64) -> Result<bool, DbError> {
    state.db.write(move |c| db::mfa::disable(c, user_id)).await
}

/// What the second step of a sign-in came to.
pub enum SecondFactor {
    /// The code was right: the sign-in may complete.
    Passed { user: User, used: Used },
    /// A wrong code, counted toward the lockout.
    Wrong { user: User },
    /// Too many wrong codes (or passwords): the account is locked for now;
    /// `by_this_code` when this wrong code was the one that locked it.
    Locked { user: User, by_this_code: bool },
    /// The account was disabled or deleted meanwhile.
    Gone,
}

/// The second step of a sign-in for `user_id`, with the same lockout as the password
/// step: a locked account is refused before the code is looked at, a wrong code counts
/// as a failure, a right one clears the count. Audited as `mfa.ok` / `mfa.failed`.
pub async fn second_factor(state: &AppState, user_id: i64, code: &str, ip: &str) -> Result<SecondFactor, MfaError> {
    let Some(user) = state
        .db
        .read(move |c| db::users::find_by_id(c, user_id))
        .await?
        .filter(|u| !u.disabled)
    else {
        return Ok(SecondFactor::Gone);
    };
    let now = state.clock.now();
    let lockout = state.settings.lockout;
    let locked = |until: Option<i64>| lockout && until.is_some_and(|t| t > now);
    let lock = state.db.read(move |c| db::users::lock_state(c, user_id)).await?;
    if locked(lock.locked_until) {
        return Ok(SecondFactor::Locked {
            user,
            by_this_code: false,
        });
    }
    match check(state, user_id, code).await {
        Ok(used) => {
            state.db.write(move |c| db::users::clear_failures(c, user_id)).await?;
            let method = match used {
                Used::Totp => "totp",
                Used::RecoveryCode => "recovery_code",
                Used::EmailCode => "email_code",
            };
            Event::new("mfa.ok")
                .actor(&user.username)
                .ip(Some(ip.to_string()))
                .detail(serde_json::json!({"method": method}))
                .log(&state.db, state.clock.now())
                .await;
            Ok(SecondFactor::Passed { user, used })
        }
        Err(MfaError::InvalidCode) => {
            Event::new("mfa.failed")
                .actor(&user.username)
                .ip(Some(ip.to_string()))
                .log(&state.db, state.clock.now())
                .await;
            if lockout {
                let after = state
                    .db
                    .write(move |c| db::users::record_failure(c, user_id, super::login::lock_for, now))
                    .await?;
                if locked(after.locked_until) {
                    return Ok(SecondFactor::Locked {
                        user,
                        by_this_code: true,
                    });
                }
            }
            Ok(SecondFactor::Wrong { user })
        }
        Err(e) => Err(e),
    }
}
