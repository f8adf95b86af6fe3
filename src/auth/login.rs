//! Checking a username and password: one uniform path for every failure, so neither
//! the answer nor its timing tells whether the account exists or is locked.

use crate::db::{self, users::User, Db, DbError};
use crate::error::Internal;

use crate::crypto::password::{HashError, Hasher};

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Unknown user, wrong password, disabled or locked account: deliberately one
    /// variant, shown with one message.
    #[error("invalid username or password")]
    InvalidCredentials,
    #[error(transparent)]
    Server(#[from] Internal),
}

impl From<HashError> for LoginError {
    fn from(e: HashError) -> Self {
        LoginError::Server(e.into())
    }
}

impl From<DbError> for LoginError {
    fn from(e: DbError) -> Self {
        LoginError::Server(e.into())
    }
}

/// What happened, for metrics and the audit trail; never shown to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    /// No account has this name: the name is logged only as a keyed digest (it may
    /// be a password typed into the wrong box).
    Unknown,
    Locked,
}

/// Longest input worth hashing; anything longer cannot be a password we stored.
const MAX_INPUT: usize = 1024;
/// Failed passwords in a row before an account locks.
pub const LOCK_AFTER: i64 = 5;
const FIRST_LOCK_SECS: i64 = 60;
const MAX_LOCK_SECS: i64 = 3600;

/// Growing back-off: one minute at the fifth failure, doubling with each further
/// failure, at most an hour.
pub fn lock_for(failures: i64) -> Option<i64> {
    (failures >= LOCK_AFTER).then(|| {
        let doublings = u32::try_from((failures - LOCK_AFTER).min(20)).unwrap_or(20);
        FIRST_LOCK_SECS.saturating_mul(1 << doublings).min(MAX_LOCK_SECS)
    })
}

pub async fn authenticate(
    db: &Db,
    hasher: &Hasher,
    username: &str,
    password: &str,
    lockout: bool,
    now: i64,
) -> (Result<User, LoginError>, Outcome) {
    match check(db, hasher, username, password, lockout, now).await {
        Ok(user) => (Ok(user), Outcome::Ok),
        Err((e, outcome)) => (Err(e), outcome),
    }
}

async fn check(
    db: &Db,
    hasher: &Hasher,
    username: &str,
    password: &str,
    lockout: bool,
    now: i64,
) -> Result<User, (LoginError, Outcome)> {
    let fail = |e: LoginError| (e, Outcome::Failed);
    let name = username.trim().to_string();
    let user = if name.is_empty() || name.len() > 256 {
        None
    } else {
        db.read(move |c| db::users::find_for_sign_in(c, &name))
            .await
            .map_err(|e| fail(e.into()))?
    };
    let password = if password.len() > MAX_INPUT { "" } else { password };
    // Always pay for one bcrypt verification, also for a locked account. With no such
    // user, the dummy hash has the cost of a stored hash picked at random, so that the
    // timing of unknown names follows the timing of real ones even while stored costs
    // are mixed (before every account has signed in since `--bcrypt-cost` changed).
    let Some(user) = user else {
        let cost = db
            .read(db::users::sample_hash)
            .await
            .map_err(|e| fail(e.into()))?
            .and_then(|h| crate::crypto::password::cost_of(&h))
            .unwrap_or(hasher.cost());
        hasher.verify_dummy(password, cost).await.map_err(|e| fail(e.into()))?;
        return Err((LoginError::InvalidCredentials, Outcome::Unknown));
    };
    let ok = hasher
        .verify(password, Some(&user.password_hash))
        .await
        .map_err(|e| fail(e.into()))?;
    let id = user.id;
    let state = db
        .read(move |c| db::users::lock_state(c, id))
        .await
        .map_err(|e| fail(e.into()))?;
    let locked = lockout && state.locked_until.is_some_and(|t| t > now);
    if locked {
        return Err((LoginError::InvalidCredentials, Outcome::Locked));
    }
    if !ok || user.disabled {
        if lockout && !ok {
            let after = db
                .write(move |c| db::users::record_failure(c, id, lock_for, now))
                .await
                .map_err(|e| fail(e.into()))?;
            if after.locked_until.is_some_and(|t| t > now) {
                tracing::warn!(
                    user_id = id,
                    failures = after.failed_logins,
                    "account locked after failed passwords"
                );
                return Err((LoginError::InvalidCredentials, Outcome::Locked));
            }
        }
        return Err(fail(LoginError::InvalidCredentials));
    }
    if state.failed_logins > 0 || state.locked_until.is_some() {
        db.write(move |c| db::users::clear_failures(c, id))
            .await
            .map_err(|e| fail(e.into()))?;
    }
    rehash_if_needed(db, hasher, &user, password).await;
    Ok(user)
}

/// Checks the password of a signed-in user again (before a credential change, or to
/// turn a second factor off). A locked account is refused, a wrong password counts
/// toward the lockout and a right one clears the count, exactly as at sign-in.
pub async fn reauthenticate(
    db: &Db,
    hasher: &Hasher,
    user: &User,
    password: &str,
    lockout: bool,
    now: i64,
) -> Result<Reauth, LoginError> {
    let password = if password.len() > MAX_INPUT { "" } else { password };
    let ok = hasher.verify(password, Some(&user.password_hash)).await?;
    let id = user.id;
    let state = db.read(move |c| db::users::lock_state(c, id)).await?;
    if lockout && state.locked_until.is_some_and(|t| t > now) {
        return Ok(Reauth::Locked);
    }
    if !ok {
        if lockout {
            let after = db
                .write(move |c| db::users::record_failure(c, id, lock_for, now))
                .await?;
            if after.locked_until.is_some_and(|t| t > now) {
                return Ok(Reauth::Locked);
            }
        }
        return Ok(Reauth::Wrong);
    }
    if state.failed_logins > 0 {
        db.write(move |c| db::users::clear_failures(c, id)).await?;
    }
    Ok(Reauth::Confirmed)
}

/// The answer to a password asked again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reauth {
    Confirmed,
    Wrong,
    /// Too many wrong passwords: refused until the lock lifts, right or wrong.
    Locked,
}

/// A hash made with another cost than `--bcrypt-cost` is replaced once its password is
/// known to be right, so that every account converges on the configured cost (and on
/// one timing). A failure here is logged: the sign-in itself has succeeded.
async fn rehash_if_needed(db: &Db, hasher: &Hasher, user: &User, password: &str) {
    if crate::crypto::password::cost_of(&user.password_hash) == Some(hasher.cost()) {
        return;
    }
    let new = match hasher.hash(password).await {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(user_id = user.id, error = %e, "cannot rehash a password");
            return;
        }
    };
    let (id, old) = (user.id, user.password_hash.clone());
    if let Err(e) = db.write(move |c| db::users::replace_hash(c, id, &old, &new)).await {
        tracing::warn!(user_id = user.id, error = %e, "cannot store a rehashed password");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_grows_with_failures_and_is_capped() {
        assert_eq!(lock_for(4), None);
        assert_eq!(lock_for(5), Some(60));
        assert_eq!(lock_for(6), Some(120));
        assert_eq!(lock_for(8), Some(480));
        assert_eq!(lock_for(100), Some(3600));
    }
}
