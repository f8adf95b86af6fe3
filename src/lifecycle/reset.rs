//! Password reset by mail: one answer for every request, whether or not an account
//! matches; a single-use link valid an hour (only its digest stored, earlier links
//! voided); and a reset that ends every session and grant of the account.

use crate::audit::Event;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens};
use crate::error::Internal;
use crate::mail::message::Message;
use crate::state::AppState;

use super::{link_token, queue, wake, Queued};

/// How long a reset link works.
pub const LINK_TTL: i64 = 3600;

/// Asks for a reset link for `who` (a username or an email address). The caller shows
/// the same page whatever happens here, and every path writes the same rows (a token
/// and an audit entry; a matching account's mail besides), so that neither the answer
/// nor, beyond one insert, its timing says whether an account matched. Without a
/// match the token is a decoy that names no account, filed under a pseudonym of what
/// was typed (it may be a password typed into the wrong box).
pub async fn request(state: &AppState, who: &str, ip: &str) -> Result<(), Internal> {
    let who = who.trim().chars().take(256).collect::<String>();
    let now = state.clock.now();
    let (secret, digest) = link_token();
    let link = state.url(&format!("/password/reset?token={}", secret.expose()));
    let settings = state.settings.clone();
    let (ip, pseudonym) = (ip.to_string(), state.log_key.pseudonym(&who));
    let queued = state
        .db
        .write(move |c| {
            let user = if who.contains('@') {
                db::users::find_by_email(c, &who)?
            } else {
                db::users::find_by_username(c, &who)?
            };
            let target = user.filter(|u| !u.disabled).and_then(|u| {
                let email = u.email.clone().filter(|e| !e.is_empty())?;
                Some((u, email))
            });
            let mut queued = Queued::Off;
            if let Some((user, email)) = &target {
                let t = crate::i18n::t();
                let message = Message::new(t.mail_reset_subject, super::greeting(user))
                    .paragraph(t.fill2(t.mail_reset, "ip", &ip, "username", &user.username))
                    .action(t.mail_reset_action, &link)
                    .after(t.mail_reset_after);
                queued = queue(c, &settings, email, Some(user.id), "reset", &message, now)?;
            }
            let (user_id, email, actor) = match (&target, queued) {
                (Some((user, email)), Queued::Yes) => (Some(user.id), email.as_str(), user.username.as_str()),
                _ => (None, pseudonym.as_str(), pseudonym.as_str()),
            };
            email_tokens::create(
                c,
                &email_tokens::NewToken {
                    digest: &digest,
                    purpose: email_tokens::RESET,
                    user_id,
                    email,
                    data: "{}",
                    code: None,
                    request: None,
                    expires_at: now + LINK_TTL,
                },
                now,
            )?;
            Event::new("password.reset_requested")
                .actor(actor)
                .ip(Some(ip.as_str()))
                .detail(serde_json::json!({"mailed": queued == Queued::Yes}))
                .write(c, now)?;
            Ok(queued)
        })
        .await?;
    if queued == Queued::Yes {
        wake(state);
    }
    Ok(())
}

/// Whether a reset link still works (for showing its form).
pub async fn usable(state: &AppState, token: &str) -> Result<bool, Internal> {
    Ok(holder(state, token).await?.is_some())
}

/// The username of the account a live reset link is for.
async fn holder(state: &AppState, token: &str) -> Result<Option<String>, Internal> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    let (digest, now) = (TokenHash::of(token), state.clock.now());
    Ok(state
        .db
        .read(move |c| {
            let Some(uid) = email_tokens::find(c, &digest, email_tokens::RESET, now)?.and_then(|t| t.user_id) else {
                return Ok(None);
            };
            Ok(db::users::find_by_id(c, uid)?.map(|u| u.username))
        })
        .await?)
}

/// What a reset attempt came to.
#[derive(Debug)]
pub enum Outcome {
    /// The password is changed; the account's username.
    Done(String),
    /// The new password breaks a rule, or the two differ: (field, message).
    Invalid(&'static str, String),
    /// Unknown, used, voided or expired link.
    Dead,
}

/// Sets the new password through the link (the rules of every chosen password): the link is spent (of two parallel uses one
/// wins), earlier links voided, trusted devices forgotten, the lockout count cleared,
/// then every session ends with back-channel logout and every grant is revoked,
/// offline ones included, as after an administrator's reset. A second factor stays
/// enrolled and is asked at the next sign-in.
pub async fn finish(
    state: &AppState,
    token: &str,
    password: &str,
    confirm: &str,
    ip: &str,
) -> Result<Outcome, Internal> {
    let Some(username) = holder(state, token).await? else {
        return Ok(Outcome::Dead);
    };
    if let Some(problem) = crate::domain::password_problem(password, &username) {
        return Ok(Outcome::Invalid("password", problem));
    }
    if password != confirm {
        return Ok(Outcome::Invalid(
            "confirm",
            crate::i18n::t().acct_error_passwords_differ.into(),
        ));
    }
    let hash = state.hasher.hash(password).await?;
    let (digest, now) = (TokenHash::of(token), state.clock.now());
    let settings = state.settings.clone();
    let ip = ip.to_string();
    let done = state
        .db
        .write(move |c| {
            let Some(t) = email_tokens::find(c, &digest, email_tokens::RESET, now)? else {
                return Ok(None);
            };
            let Some(uid) = t.user_id else {
                return Ok(None);
            };
            if !email_tokens::claim(c, t.id, now)?.won() {
                return Ok(None);
            }
            let Some(user) = db::users::find_by_id(c, uid)? else {
                return Ok(None);
            };
            // A link mailed to an address the account no longer has is dead.
            if !user.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(&t.email)) {
                return Ok(None);
            }
            db::users::set_password_by_id(c, uid, &hash, now)?;
            db::users::clear_failures(c, uid)?;
            // The link reached the address: it is the owner's.
            db::users::set_email_verified(c, uid, true)?;
            db::users::set_must_verify(c, uid, false)?;
            email_tokens::void_for_user(
                c,
                uid,
                &[email_tokens::RESET, email_tokens::SIGNIN, email_tokens::MFA],
                now,
            )?;
            super::devices::untrust_all(c, uid)?;
            // Whoever knew the old password is out, in this same transaction.
            crate::oidc::logout::end_all_in(c, uid, now)?;
            db::grants::revoke_user_grants(c, uid, None, now)?;
            Event::new("password.reset")
                .actor(&user.username)
                .ip(Some(ip.as_str()))
                .write(c, now)?;
            let t = crate::i18n::t();
            super::notify(
                c,
                &settings,
                &user,
                t.mail_password_changed_subject,
                &t.fill(t.mail_password_reset, "username", &user.username),
                now,
            )?;
            Ok(Some(user))
        })
        .await?;
    let Some(user) = done else {
        return Ok(Outcome::Dead);
    };
    wake(state);
    state.logout_wakeup.notify_one();
    Ok(Outcome::Done(user.username))
}
