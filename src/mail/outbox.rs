//! The outbox: a mail rendered in the language of the request that causes it and
//! queued inside that request's transaction, within hourly limits per account and per
//! address (sent later by `lifecycle::spawn_mailer`).

use super::message::Message;
use crate::config::Settings;
use crate::db::{self, users::User, DbError, Tx};
use crate::i18n::Messages;

/// What a write that queues mail needs of its request, taken before the write: the
/// language the mail speaks and the outbox's settings. The writer knows no language.
#[derive(Clone)]
pub struct Mail {
    /// The request's language: every text of a mail queued with this is in it.
    pub t: &'static Messages,
    on: bool,
    per_hour: i64,
    /// `--org-name`, for when the branding names no organisation.
    org_name: String,
}

impl Mail {
    /// The current request's language and the outbox's settings.
    pub fn new(settings: &Settings) -> Self {
        Self {
            t: crate::i18n::t(),
            on: settings.smtp.is_some(),
            per_hour: settings.mail_per_hour,
            org_name: settings.org_name.clone(),
        }
    }
}

/// Whether a mail was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    Yes,
    /// The account or the address had its mails for this hour: nothing is queued, and
    /// the person sees the same answer as when it is (no enumeration, no mail bomb).
    Limited,
    /// Mail is off (no `--smtp-url`).
    Off,
}

/// Queues `message` to `to` inside the caller's transaction, unless the hourly limit
/// of its kind (`budget`) for the account (`user_id`) or for the address is reached.
pub fn queue(
    conn: &Tx<'_>,
    mail: &Mail,
    to: &str,
    user_id: Option<i64>,
    kind: &str,
    message: &Message,
    now: i64,
) -> Result<Queued, DbError> {
    if !mail.on {
        return Ok(Queued::Off);
    }
    let (kinds, limit) = budget(kind, mail.per_hour);
    let (by_user, by_addr) = db::outbox::count_since(conn, user_id, to, kinds, now - 3600)?;
    if by_user >= limit || by_addr >= limit {
        tracing::warn!(kind, user_id, "mail not queued: the hourly limit is reached");
        return Ok(Queued::Limited);
    }
    store(conn, mail, to, user_id, kind, message, false, now)?;
    Ok(Queued::Yes)
}

/// Renders `message` in the request's language and stores it in the outbox: to be
/// sent, or as a decoy (never sent, filed under no account).
#[allow(clippy::too_many_arguments)]
fn store(
    conn: &Tx<'_>,
    mail: &Mail,
    to: &str,
    user_id: Option<i64>,
    kind: &str,
    message: &Message,
    decoy: bool,
    now: i64,
) -> Result<(), DbError> {
    // The name the admin page stored, else `--org-name`'s: what the pages show.
    let org = db::branding::get(conn)?
        .org_name
        .unwrap_or_else(|| mail.org_name.clone());
    let rendered = message.render(&org, mail.t);
    db::outbox::queue(
        conn,
        &db::outbox::NewMail {
            to,
            subject: &rendered.subject,
            text: &rendered.text,
            html: &rendered.html,
            kind,
            user_id: user_id.filter(|_| !decoy),
            decoy,
        },
        now,
    )?;
    Ok(())
}

/// Queues `message` as `queue` does when `deliver` and within the hourly limit; else
/// renders it all the same and stores it as a decoy that is never sent (`Limited`).
/// The forms anyone can fill in with any name (a reset, a sign-in link) call this
/// with `deliver` false when no account matched, so that a known and an unknown name
/// make the same reads, the same rendering and the same writes; the decoy is filed
/// under `to`, a pseudonym of what was typed, and purged after an hour.
#[allow(clippy::too_many_arguments)]
pub fn queue_or_decoy(
    conn: &Tx<'_>,
    mail: &Mail,
    to: &str,
    user_id: Option<i64>,
    kind: &str,
    message: &Message,
    deliver: bool,
    now: i64,
) -> Result<Queued, DbError> {
    if !mail.on {
        return Ok(Queued::Off);
    }
    let (kinds, limit) = budget(kind, mail.per_hour);
    let (by_user, by_addr) = db::outbox::count_since(conn, user_id, to, kinds, now - 3600)?;
    let send = deliver && by_user < limit && by_addr < limit;
    if deliver && !send {
        tracing::warn!(kind, user_id, "mail not queued: the hourly limit is reached");
    }
    store(conn, mail, to, user_id, kind, message, !send, now)?;
    Ok(if send { Queued::Yes } else { Queued::Limited })
}

/// Mail anyone can cause by naming an account or an address (a reset, a sign-in link,
/// a sign-up, a verification link, an invitation).
const ASKED: &[&str] = &["reset", "signin", "signup-taken", "verify", "invite"];

/// The kinds a mail of `kind` shares its hourly budget with, and that budget. What a
/// stranger can ask for shares `--mail-per-hour`; security notices and second-factor
/// codes each have their own, four times larger, so that nobody who lacks the
/// account's password can silence its notices or block its codes by spending the
/// budget first, while a loop still cannot flood a mailbox.
fn budget(kind: &str, per_hour: i64) -> (&'static [&'static str], i64) {
    match kind {
        "notice" => (&["notice"], per_hour * 4),
        "mfa" => (&["mfa"], per_hour * 4),
        "test" => (&["test"], per_hour),
        _ => (ASKED, per_hour),
    }
}

/// The greeting of a mail to this person, in language `t`.
pub fn greeting(t: &Messages, user: &User) -> String {
    let name = user
        .name
        .as_deref()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or(&user.username);
    t.fill(t.mail_greeting, "name", name)
}

/// A security notice to the account's address (a changed password, a new sign-in
/// device, an authenticator added): nothing is queued when the account has no address.
pub fn notify(conn: &Tx<'_>, mail: &Mail, user: &User, subject: &str, what: &str, now: i64) -> Result<Queued, DbError> {
    let Some(to) = user.email.as_deref().filter(|e| !e.is_empty()) else {
        return Ok(Queued::Off);
    };
    let message = Message::new(subject, greeting(mail.t, user))
        .paragraph(what)
        .after(mail.t.mail_notice_after);
    queue(conn, mail, to, Some(user.id), "notice", &message, now)
}
