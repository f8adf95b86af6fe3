//! Password reset by mail: one answer for every request, whether or not an account
//! matches; a single-use link valid an hour (only its digest stored, earlier links
//! voided); and a reset that ends every session and grant of the account. For a
//! passkey-only account (and every account under `--passkey-mode passkey-only`) the
//! link makes a passkey instead, which replaces the password.
//!
//! A reset never lowers what the account asks for: the link proves the mailbox, so an
//! account with an authenticator app must also give one of its codes (or a recovery
//! code) before the new password or passkey is stored. A passkey made by a reset would
//! otherwise sign in with no further step; a password would still meet the app at the
//! next sign-in, and is asked the same, so every reset path reads alike.

use serde_json::Value;

use crate::audit::Event;
use crate::auth::passkeys::{self, Made, PasskeyError};
use crate::context::Ctx;
use crate::crypto::password::NO_PASSWORD;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens, DbError, Tx};
use crate::error::Internal;
use crate::mail::message::Message;
use crate::mail::outbox::{self, greeting, queue_or_decoy, Mail, Queued};

use super::{link_token, wake};

/// How long a reset link works.
pub const LINK_TTL: i64 = 3600;

/// A reset request, made before the write transaction: what was typed, the link and
/// its digest (no randomness under the writer), and a pseudonym of what was typed.
pub struct Asked {
    who: String,
    ip: String,
    pseudonym: String,
    link: String,
    digest: TokenHash,
    /// The request's language and the outbox's settings.
    mail: Mail,
    now: i64,
}

impl Asked {
    pub fn new(cx: &Ctx<'_>, who: &str, ip: &str) -> Self {
        let who = who.trim().chars().take(256).collect::<String>();
        let (secret, digest) = link_token();
        Self {
            link: cx.url(&format!("/password/reset?token={}", secret.expose())),
            pseudonym: cx.log_key.pseudonym(&who),
            ip: ip.to_string(),
            mail: Mail::new(cx.settings),
            now: cx.now,
            digest,
            who,
        }
    }
}

/// Asks for a reset link for `who` (a username or an email address). The caller shows
/// the same page whatever happens here.
pub async fn request(cx: &Ctx<'_>, who: &str, ip: &str) -> Result<(), Internal> {
    let asked = Asked::new(cx, who, ip);
    let queued = cx.db.write(move |c| request_in(c, &asked)).await?;
    if queued == Queued::Yes {
        wake(cx);
    }
    Ok(())
}

/// The reset request's one transaction. Whether or not an account matches, the same
/// work is done: the mail is rendered and stored (for no account, a decoy that is
/// never sent: `queue_or_decoy`), a token is stored and an audit entry written, by the
/// same statements, so that neither the answer nor its cost says whether an account
/// matched. Without a match the token is a decoy that names no account (so no link
/// opens it), filed under a pseudonym of what was typed (it may be a password typed
/// into the wrong box).
pub fn request_in(c: &Tx<'_>, asked: &Asked) -> Result<Queued, DbError> {
    let Asked {
        who,
        ip,
        pseudonym,
        link,
        digest,
        mail,
        now,
    } = asked;
    let now = *now;
    let user = if who.contains('@') {
        db::users::find_by_email(c, who)?
    } else {
        db::users::find_for_sign_in(c, who)?
    };
    let target = user.filter(|u| !u.disabled).and_then(|u| {
        let email = u.email.clone().filter(|e| !e.is_empty())?;
        Some((u, email))
    });
    let t = mail.t;
    let (to, user_id, name, greeting) = match &target {
        Some((user, email)) => (email.as_str(), Some(user.id), user.username.as_str(), greeting(t, user)),
        None => (
            pseudonym.as_str(),
            None,
            pseudonym.as_str(),
            t.fill(t.mail_greeting, "name", pseudonym),
        ),
    };
    let message = Message::new(t.mail_reset_subject, greeting)
        .paragraph(t.fill2(t.mail_reset, "ip", ip, "username", name))
        .action(t.mail_reset_action, link)
        .after(t.mail_reset_after);
    let queued = queue_or_decoy(c, mail, to, user_id, "reset", &message, target.is_some(), now)?;
    let (user_id, email, actor) = match (&target, queued) {
        (Some((user, email)), Queued::Yes) => (Some(user.id), email.as_str(), user.username.as_str()),
        _ => (None, pseudonym.as_str(), pseudonym.as_str()),
    };
    email_tokens::create(
        c,
        &email_tokens::NewToken {
            digest,
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
}

/// What a live reset link sets: a password, or a passkey (under `--passkey-mode
/// passkey-only`, and for an account that has passkeys and no password).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Password,
    Passkey,
}

/// The account a live reset link is for.
struct Holder {
    id: i64,
    sub: String,
    username: String,
    kind: Kind,
    /// The account has an authenticator app, whose code the reset asks too.
    totp: bool,
}

/// What a live reset link's form asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    pub kind: Kind,
    /// A code from the account's authenticator app (or a recovery code).
    pub code: bool,
}

/// What a live reset link's form asks for, or `None` when it is dead.
pub async fn usable(cx: &Ctx<'_>, token: &str) -> Result<Option<Form>, Internal> {
    Ok(holder(cx, token).await?.map(|h| Form {
        kind: h.kind,
        code: h.totp,
    }))
}

async fn holder(cx: &Ctx<'_>, token: &str) -> Result<Option<Holder>, Internal> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    let (digest, now) = (TokenHash::of(token), cx.now);
    let passkey_only = cx.settings.passkey_mode.passkey_only();
    Ok(cx
        .db
        .read(move |c| {
            let Some(uid) = email_tokens::find(c, &digest, email_tokens::RESET, now)?.and_then(|t| t.user_id) else {
                return Ok(None);
            };
            let Some(u) = db::users::find_by_id(c, uid)? else {
                return Ok(None);
            };
            let passkey_account =
                !crate::crypto::password::has_password(&u.password_hash) && db::passkeys::count_for_user(c, uid)? > 0;
            Ok(Some(Holder {
                totp: db::mfa::enabled(c, uid)?,
                id: u.id,
                sub: u.sub,
                username: u.username,
                kind: if passkey_only || passkey_account {
                    Kind::Passkey
                } else {
                    Kind::Password
                },
            }))
        })
        .await?)
}

/// What a reset attempt came to.
#[derive(Debug)]
pub enum Outcome {
    /// The password (or passkey) is set; the account's username.
    Done(String),
    /// The new password breaks a rule, or the two differ, or the passkey was refused:
    /// (field, message).
    Invalid(&'static str, String),
    /// Unknown, used, voided or expired link.
    Dead,
}

/// Sets the new password through the link (the rules of every chosen password): the
/// link is spent (of two parallel uses one wins), earlier links voided, trusted devices
/// forgotten, the lockout count cleared, then every session ends with back-channel
/// logout and every grant is revoked, offline ones included, as after an
/// administrator's reset. A second factor stays enrolled and is asked at the next
/// sign-in.
pub async fn finish(cx: &Ctx<'_>, token: &str, new: &Chosen<'_>, ip: &str) -> Result<Outcome, Internal> {
    let Chosen {
        password,
        confirm,
        code,
    } = *new;
    let Some(holder) = holder(cx, token).await? else {
        return Ok(Outcome::Dead);
    };
    if holder.kind == Kind::Passkey {
        // Shown beside the passkey button, the page's only way.
        return Ok(Outcome::Invalid("passkey", crate::i18n::t().acct_passkey_only.into()));
    }
    if let Some(problem) = crate::domain::password_problem(password, &holder.username) {
        return Ok(Outcome::Invalid("password", problem));
    }
    if password != confirm {
        return Ok(Outcome::Invalid(
            "confirm",
            crate::i18n::t().acct_error_passwords_differ.into(),
        ));
    }
    if let Some(refused) = second_factor(cx, &holder, code, ip).await? {
        return Ok(refused);
    }
    let hash = cx.hasher.hash(password).await?;
    spend(cx, token, ip, Replacement::Password(hash)).await
}

/// The options of the passkey a reset makes, for the link's account.
pub async fn passkey_options(cx: &Ctx<'_>, token: &str) -> Result<Option<Value>, PasskeyError> {
    let Some(holder) = holder(cx, token).await? else {
        return Ok(None);
    };
    let link = TokenHash::of(token);
    let who = passkeys::Enrolee {
        link: &link,
        sub: &holder.sub,
        username: &holder.username,
        user_id: Some(holder.id),
    };
    Ok(Some(passkeys::enrolment_options(cx, &who).await?))
}

/// Resets with a passkey made through the link: it is added and the account's password,
/// if it had one, is removed (the passkey replaces it), with everything else a reset
/// does. `code` is the authenticator app's, for an account that has one.
pub async fn finish_with_passkey(
    cx: &Ctx<'_>,
    token: &str,
    made: Made,
    code: &str,
    ip: &str,
) -> Result<Outcome, Internal> {
    let Some(holder) = holder(cx, token).await? else {
        return Ok(Outcome::Dead);
    };
    if let Some(refused) = second_factor(cx, &holder, code, ip).await? {
        return Ok(refused);
    }
    spend(cx, token, ip, Replacement::Passkey(Box::new(made))).await
}

/// What the reset form's password fields and second-factor code hold.
#[derive(Debug, Clone, Copy)]
pub struct Chosen<'a> {
    pub password: &'a str,
    pub confirm: &'a str,
    /// The authenticator app's code (or a recovery code); empty when not asked.
    pub code: &'a str,
}

/// The account's authenticator app, asked as at sign-in (a wrong code counts toward
/// the lockout, a locked account is refused, `mfa.ok`/`mfa.failed` audited): `None`
/// when it passed or the account has none, else the form's answer.
async fn second_factor(cx: &Ctx<'_>, holder: &Holder, code: &str, ip: &str) -> Result<Option<Outcome>, Internal> {
    use super::second_factor::{second_factor, SecondFactor};
    use crate::auth::mfa::MfaError;
    if !holder.totp {
        return Ok(None);
    }
    let t = crate::i18n::t();
    if code.trim().is_empty() {
        return Ok(Some(Outcome::Invalid("code", t.mfa_app_lead.into())));
    }
    match second_factor(cx, holder.id, code, ip).await {
        Ok(SecondFactor::Passed { .. }) => Ok(None),
        Ok(SecondFactor::Wrong { .. }) => Ok(Some(Outcome::Invalid("code", t.mfa_wrong_app.into()))),
        Ok(SecondFactor::Locked { .. }) => Ok(Some(Outcome::Invalid(
            "code",
            format!("{} {}", t.mfa_locked, t.mfa_locked_hint),
        ))),
        Ok(SecondFactor::Gone) => Ok(Some(Outcome::Dead)),
        Err(MfaError::Server(e)) => Err(e),
        Err(MfaError::InvalidCode | MfaError::NotStarted) => Ok(Some(Outcome::Invalid("code", t.mfa_wrong_app.into()))),
    }
}

enum Replacement {
    Password(String),
    Passkey(Box<Made>),
}

async fn spend(cx: &Ctx<'_>, token: &str, ip: &str, new: Replacement) -> Result<Outcome, Internal> {
    let (digest, now) = (TokenHash::of(token), cx.now);
    let mail = Mail::new(cx.settings);
    let ip = ip.to_string();
    let done = cx
        .db
        .write(move |c| {
            let Some(t) = email_tokens::find(c, &digest, email_tokens::RESET, now)? else {
                return Ok(Outcome::Dead);
            };
            let Some(uid) = t.user_id else {
                return Ok(Outcome::Dead);
            };
            let Some(user) = db::users::find_by_id(c, uid)? else {
                return Ok(Outcome::Dead);
            };
            // A link mailed to an address the account no longer has is dead.
            if !user.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(&t.email)) {
                return Ok(Outcome::Dead);
            }
            if let Replacement::Passkey(made) = &new {
                let t = mail.t;
                if passkeys::spend_enrolment(c, made, &digest, now)?.as_deref() != Some(user.sub.as_str()) {
                    return Ok(Outcome::Invalid("passkey", t.acct_passkey_expired.into()));
                }
                if db::passkeys::find_by_credential(c, &made.credential.id)?.is_some() {
                    return Ok(Outcome::Invalid("passkey", t.acct_passkey_registered.into()));
                }
            }
            if !email_tokens::claim(c, t.id, now)?.won() {
                return Ok(Outcome::Dead);
            }
            let method = match &new {
                Replacement::Password(hash) => {
                    db::users::set_password_by_id(c, uid, hash, now)?;
                    "password"
                }
                Replacement::Passkey(made) => {
                    db::users::set_password_by_id(c, uid, NO_PASSWORD, now)?;
                    passkeys::store_in(c, uid, &user.username, made, now)?;
                    "passkey"
                }
            };
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
            db::logout::end_all_sessions(c, uid, now)?;
            db::grants::revoke_user_grants(c, uid, None, now)?;
            Event::new("password.reset")
                .actor(&user.username)
                .ip(Some(ip.as_str()))
                .detail(serde_json::json!({ "method": method }))
                .write(c, now)?;
            let t = mail.t;
            let (subject, said) = match method {
                "passkey" => (t.mail_passkey_reset_subject, t.mail_passkey_reset),
                _ => (t.mail_password_changed_subject, t.mail_password_reset),
            };
            outbox::notify(c, &mail, &user, subject, &t.fill(said, "username", &user.username), now)?;
            Ok(Outcome::Done(user.username))
        })
        .await?;
    if matches!(done, Outcome::Done(_)) {
        wake(cx);
        cx.logout_wakeup.notify_one();
    }
    Ok(done)
}
