//! The account page's security choices: the browsers trusted to skip the second
//! factor, the mail on a sign-in from a new browser, and codes by mail as the second
//! factor.

use crate::context::Ctx;
use crate::db::{self, devices::Trusted, email_tokens, users::Lifecycle, DbError};

use super::Me;

/// What the account page shows of these choices.
pub struct Choices {
    pub lifecycle: Lifecycle,
    pub trusted: Vec<Trusted>,
}

pub async fn choices(cx: &Ctx<'_>, user_id: i64) -> Result<Choices, DbError> {
    let now = cx.now;
    cx.db
        .read(move |c| {
            Ok(Choices {
                lifecycle: db::users::lifecycle(c, user_id)?,
                trusted: db::devices::trusted(c, user_id, now)?,
            })
        })
        .await
}

/// Ends the trust of one of the viewer's browsers; `false` when it was not trusted
/// (or is not theirs).
pub async fn untrust(cx: &Ctx<'_>, me: &Me<'_>, id: i64) -> Result<bool, DbError> {
    let (uid, now) = (me.user.id, cx.now);
    let event = me
        .event("device.untrusted")
        .detail(serde_json::json!({"device_id": id}));
    cx.db
        .write(move |c| {
            let done = db::devices::untrust(c, uid, id)?;
            if done {
                event.write(c, now)?;
            }
            Ok(done)
        })
        .await
}

/// The viewer's choice of a mail for each sign-in from a new browser.
pub async fn set_notify(cx: &Ctx<'_>, me: &Me<'_>, on: bool) -> Result<(), DbError> {
    let (uid, now) = (me.user.id, cx.now);
    let event = me
        .event("account.notifications_changed")
        .detail(serde_json::json!({"new_device": on}));
    cx.db
        .write(move |c| {
            db::users::set_notify_new_device(c, uid, on)?;
            event.write(c, now)
        })
        .await
}

/// Why email codes could not be turned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Codes go only to an address proven to receive mail: one mistyped would lock
    /// the person out at their next sign-in.
    NoVerifiedEmail,
    /// An authenticator app or a passkey is the stronger factor and is in use.
    OtherFactor,
    /// Mail is off on this server.
    MailOff,
}

/// Turns email codes on or off for the viewer (whose password the caller checked).
/// An authenticator app enrolled later wins at sign-in and this choice is kept: if
/// the app is removed, codes by mail apply again rather than no second factor. A
/// passkey added later changes nothing at a password sign-in (signing in with the
/// passkey is two factors by itself), so the codes stay asked there.
pub async fn set_email_codes(cx: &Ctx<'_>, me: &Me<'_>, on: bool) -> Result<Result<(), Refused>, DbError> {
    if on && cx.settings.smtp.is_none() {
        return Ok(Err(Refused::MailOff));
    }
    let (uid, now) = (me.user.id, cx.now);
    let event = me.event(if on { "mfa.email_enabled" } else { "mfa.email_disabled" });
    cx.db
        .write(move |c| {
            if on {
                let verified = db::users::find_by_id(c, uid)?
                    .is_some_and(|u| u.email_verified && u.email.is_some_and(|e| !e.trim().is_empty()));
                if !verified {
                    return Ok(Err(Refused::NoVerifiedEmail));
                }
                if db::mfa::enabled(c, uid)? || !db::passkeys::list_for_user(c, uid)?.is_empty() {
                    return Ok(Err(Refused::OtherFactor));
                }
            } else {
                email_tokens::void_for_user(c, uid, &[email_tokens::MFA], now)?;
            }
            db::users::set_email_mfa(c, uid, on)?;
            event.write(c, now)?;
            Ok(Ok(()))
        })
        .await
}
