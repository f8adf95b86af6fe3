//! The second step of a sign-in: which factor the code is (an authenticator app's, a
//! recovery code, a code sent by mail), under the same lockout as the password step.

use crate::audit::Event;
use crate::auth::mfa::{self, Checked, MfaError, Used};
use crate::context::Ctx;
use crate::db::{self, users::User};

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
pub async fn second_factor(cx: &Ctx<'_>, user_id: i64, code: &str, ip: &str) -> Result<SecondFactor, MfaError> {
    let Some(user) = cx
        .db
        .read(move |c| db::users::find_by_id(c, user_id))
        .await?
        .filter(|u| !u.disabled)
    else {
        return Ok(SecondFactor::Gone);
    };
    let now = cx.now;
    let lockout = cx.settings.lockout;
    let locked = |until: Option<i64>| lockout && until.is_some_and(|t| t > now);
    let lock = cx.db.read(move |c| db::users::lock_state(c, user_id)).await?;
    if locked(lock.locked_until) {
        return Ok(SecondFactor::Locked {
            user,
            by_this_code: false,
        });
    }
    match check(cx, user_id, code).await {
        Ok(used) => {
            cx.db.write(move |c| db::users::clear_failures(c, user_id)).await?;
            let method = match used {
                Used::Totp => "totp",
                Used::RecoveryCode => "recovery_code",
                Used::EmailCode => "email_code",
            };
            let event = Event::new("mfa.ok")
                .actor(&user.username)
                .ip(Some(ip.to_string()))
                .detail(serde_json::json!({"method": method}));
            event.log(cx.db, cx.now).await;
            Ok(SecondFactor::Passed { user, used })
        }
        Err(MfaError::InvalidCode) => {
            Event::new("mfa.failed")
                .actor(&user.username)
                .ip(Some(ip.to_string()))
                .log(cx.db, cx.now)
                .await;
            if lockout {
                let after = cx
                    .db
                    .write(move |c| db::users::record_failure(c, user_id, crate::auth::login::lock_for, now))
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

/// The code checked as an app's or a recovery code, or, for an account without an
/// app, as a code sent by mail.
async fn check(cx: &Ctx<'_>, user_id: i64, code: &str) -> Result<Used, MfaError> {
    let digits = match mfa::check(cx, user_id, code).await? {
        Checked::Used(used) => return Ok(used),
        Checked::NoApp(digits) => digits,
    };
    let now = cx.now;
    let right = cx
        .db
        .write(move |c| super::email_mfa::check_code(c, user_id, &digits, now))
        .await?;
    if right {
        Ok(Used::EmailCode)
    } else {
        Err(MfaError::InvalidCode)
    }
}
