//! A code by mail as the second factor, for accounts without an authenticator app or
//! passkey: turned on from the account page, mailed when the second-factor page is
//! shown (10 minutes, only its digest stored, earlier codes voided), resent at most
//! once a minute, and checked by `auth::mfa` with the lockout of a TOTP code.

use super::codes::{code_matches, count_try, same_address, Try};
use super::{link_token, six_digit_code, wake};
use crate::audit::Event;
use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens, DbError, Tx};
use crate::error::Internal;
use crate::mail::message::Message;
use crate::mail::outbox::{greeting, queue, Mail, Queued};

/// How long a mailed code works.
pub const CODE_TTL: i64 = 10 * 60;
/// The least time between two codes mailed to an account.
pub const RESEND_AFTER: i64 = 60;
/// Codes checked against one mailed code, at most: the fifth wrong one voids it (each
/// also counts toward the lockout). Counted before comparing, as for sign-in codes.
pub const MAX_ATTEMPTS: i64 = 5;

/// Whether a code went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Yes,
    /// A code was mailed less than `RESEND_AFTER` ago (it still works); seconds to wait.
    TooSoon(i64),
    /// The hourly mail limit of the account or address is reached.
    Limited,
    /// The account's address is not confirmed (it was changed since codes were
    /// turned on): no code goes to an address not proven to be the person's.
    Unverified,
    /// Mail is off, the account has no address, or email codes are not on.
    Off,
}

/// Mails a fresh code to the account unless one went out under a minute ago.
pub async fn send_code(cx: &Ctx<'_>, user_id: i64, ip: &str) -> Result<Sent, Internal> {
    let now = cx.now;
    let code = six_digit_code();
    let code_digest = TokenHash::of(&code);
    let (_, digest) = link_token();
    let (mail, ip) = (Mail::new(cx.settings), ip.to_string());
    let sent = cx
        .db
        .write(move |c| {
            let Some(user) = db::users::find_by_id(c, user_id)?.filter(|u| !u.disabled) else {
                return Ok(Sent::Off);
            };
            let Some(email) = user.email.clone().filter(|e| !e.trim().is_empty()) else {
                return Ok(Sent::Off);
            };
            if !db::users::lifecycle(c, user_id)?.email_mfa {
                return Ok(Sent::Off);
            }
            if !user.email_verified {
                return Ok(Sent::Unverified);
            }
            if let Some(t) = email_tokens::find_for_user(c, user_id, email_tokens::MFA, now)? {
                let age = now - t.created_at;
                if age < RESEND_AFTER {
                    return Ok(Sent::TooSoon(RESEND_AFTER - age));
                }
            }
            let t = mail.t;
            let message = Message::new(t.mail_mfa_subject, greeting(t, &user))
                .paragraph(t.fill2(t.mail_mfa, "ip", &ip, "username", &user.username))
                .code(&code)
                .after(t.mail_mfa_after);
            match queue(c, &mail, &email, Some(user_id), "mfa", &message, now)? {
                Queued::Yes => {}
                Queued::Limited => return Ok(Sent::Limited),
                Queued::Off => return Ok(Sent::Off),
            }
            email_tokens::create(
                c,
                &email_tokens::NewToken {
                    digest: &digest,
                    purpose: email_tokens::MFA,
                    user_id: Some(user_id),
                    email: &email,
                    data: "{}",
                    code: Some(&code_digest),
                    request: None,
                    expires_at: now + CODE_TTL,
                },
                now,
            )?;
            Event::new("mfa.email_code_sent")
                .actor(&user.username)
                .ip(Some(ip.as_str()))
                .write(c, now)?;
            Ok(Sent::Yes)
        })
        .await?;
    if sent == Sent::Yes {
        wake(cx);
    }
    Ok(sent)
}

/// Checks a mailed code inside the caller's write transaction. Every try is counted
/// before the code is compared (`codes::count_try`), so that parallel tries compare
/// at most `MAX_ATTEMPTS` codes; a right one is spent (of two parallel uses one wins);
/// the last wrong one voids the code. A code mailed to an address the account no
/// longer has, or while it is unconfirmed, is not taken. Called by `auth::mfa::check`.
pub fn check_code(c: &Tx<'_>, user_id: i64, code: &str, now: i64) -> Result<bool, DbError> {
    if !db::users::lifecycle(c, user_id)?.email_mfa {
        return Ok(false);
    }
    let Some(user) = db::users::find_by_id(c, user_id)? else {
        return Ok(false);
    };
    let Some(t) = email_tokens::find_for_user(c, user_id, email_tokens::MFA, now)? else {
        return Ok(false);
    };
    if !user.email_verified || !same_address(&t.email, user.email.as_deref()) {
        return Ok(false);
    }
    let last = match count_try(c, t.id, email_tokens::MFA, MAX_ATTEMPTS, now)? {
        Try::Allowed { last } => last,
        Try::Refused => return Ok(false),
    };
    if code_matches(t.code.as_deref(), code) {
        return Ok(email_tokens::claim(c, t.id, now)?.won());
    }
    if last {
        email_tokens::void(c, t.id, email_tokens::MFA, now)?;
    }
    Ok(false)
}

/// The account's address as the second-factor page names it: enough to recognise,
/// not to read off the screen (`a•••@example.com`).
pub fn masked(email: &str) -> String {
    match email.rsplit_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}•••@{domain}")
        }
        None => "•••".into(),
    }
}

/// Where the codes go, masked; `None` when the account has no address.
pub async fn destination(cx: &Ctx<'_>, user_id: i64) -> Result<Option<String>, Internal> {
    let user = cx.db.read(move |c| db::users::find_by_id(c, user_id)).await?;
    Ok(user
        .and_then(|u| u.email)
        .filter(|e| !e.trim().is_empty())
        .map(|e| masked(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_masked_but_recognisable() {
        assert_eq!(masked("ada@example.com"), "a•••@example.com");
        assert_eq!(masked("nobody"), "•••");
    }
}
