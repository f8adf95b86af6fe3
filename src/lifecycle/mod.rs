//! The account lifecycle by mail: the outbox every mail goes through (queued in the
//! transaction of the action that causes it, limited per account and per address,
//! sent by the mailer with retries), and the flows that send mail.

pub mod devices;
pub mod email_mfa;
pub mod invite;
pub mod reset;
pub mod second_factor;
pub mod signin;
pub mod signup;
pub mod verify;

use std::time::Duration;

use rand::Rng;

use crate::config::Settings;
use crate::context::Ctx;
use crate::crypto::{Secret, TokenHash};
use crate::db::{self, users::User, DbError, Tx};
use crate::mail::message::Message;

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
    settings: &Settings,
    to: &str,
    user_id: Option<i64>,
    kind: &str,
    message: &Message,
    now: i64,
) -> Result<Queued, DbError> {
    if settings.smtp.is_none() {
        return Ok(Queued::Off);
    }
    let (kinds, limit) = budget(kind, settings.mail_per_hour);
    let (by_user, by_addr) = db::outbox::count_since(conn, user_id, to, kinds, now - 3600)?;
    if by_user >= limit || by_addr >= limit {
        tracing::warn!(kind, user_id, "mail not queued: the hourly limit is reached");
        return Ok(Queued::Limited);
    }
    store(conn, settings, to, user_id, kind, message, false, now)?;
    Ok(Queued::Yes)
}

/// Renders `message` and stores it in the outbox: to be sent, or as a decoy (never
/// sent, filed under no account).
#[allow(clippy::too_many_arguments)]
fn store(
    conn: &Tx<'_>,
    settings: &Settings,
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
        .unwrap_or_else(|| settings.org_name.clone());
    let rendered = message.render(&org);
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
    settings: &Settings,
    to: &str,
    user_id: Option<i64>,
    kind: &str,
    message: &Message,
    deliver: bool,
    now: i64,
) -> Result<Queued, DbError> {
    if settings.smtp.is_none() {
        return Ok(Queued::Off);
    }
    let (kinds, limit) = budget(kind, settings.mail_per_hour);
    let (by_user, by_addr) = db::outbox::count_since(conn, user_id, to, kinds, now - 3600)?;
    let send = deliver && by_user < limit && by_addr < limit;
    if deliver && !send {
        tracing::warn!(kind, user_id, "mail not queued: the hourly limit is reached");
    }
    store(conn, settings, to, user_id, kind, message, !send, now)?;
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

/// A fresh link secret and the digest that is stored of it.
pub fn link_token() -> (Secret, TokenHash) {
    let secret = Secret::generate();
    let digest = secret.hash();
    (secret, digest)
}

/// Six decimal digits, uniformly random (a code typed from a mail).
pub fn six_digit_code() -> String {
    format!("{:06}", rand::thread_rng().gen_range(0..1_000_000u32))
}

/// The greeting of a mail to this person.
pub fn greeting(user: &User) -> String {
    let name = user
        .name
        .as_deref()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or(&user.username);
    let t = crate::i18n::t();
    t.fill(t.mail_greeting, "name", name)
}

/// A security notice to the account's address (a changed password, a new sign-in
/// device, an authenticator added): nothing is queued when the account has no address.
pub fn notify(
    conn: &Tx<'_>,
    settings: &Settings,
    user: &User,
    subject: &str,
    what: &str,
    now: i64,
) -> Result<Queued, DbError> {
    let Some(to) = user.email.as_deref().filter(|e| !e.is_empty()) else {
        return Ok(Queued::Off);
    };
    let message = Message::new(subject, greeting(user))
        .paragraph(what)
        .after(crate::i18n::t().mail_notice_after);
    queue(conn, settings, to, Some(user.id), "notice", &message, now)
}

/// Why a username cannot be chosen: an account has it (case-insensitively), or has a
/// name that looks like it (the same confusable skeleton, UTS #39 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    Taken,
    LooksLike,
}

/// Whether `username` (as parsed, in NFKC) can still be had, and if not, why.
pub fn username_unavailable(c: &Tx<'_>, username: &str) -> Result<Option<Unavailable>, DbError> {
    if db::users::find_by_username(c, username)?.is_some() {
        return Ok(Some(Unavailable::Taken));
    }
    Ok(db::users::lookalike_taken(c, username)?.then_some(Unavailable::LooksLike))
}

/// Tells this node's mailer that mail was queued (after the transaction committed).
pub fn wake(cx: &Ctx<'_>) {
    cx.mail_wakeup.notify_one();
}

/// How long a mailer holds the messages it claimed before another node may: longer
/// than a pass can take (`BATCH` sends of at most `SEND_TIMEOUT` each).
const LEASE: i64 = 180;
const SEND_TIMEOUT: Duration = Duration::from_secs(15);
const BATCH: i64 = 10;
/// The first retry waits this long, each further one twice as long, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: i64 = 5;
const MAX_BACKOFF: i64 = 3600;
/// A message still unsent after this long is given up (and shown as failed).
const GIVE_UP_AFTER: i64 = 3 * 24 * 3600;

/// When to try again after `attempts` failed attempts (the one just made included),
/// or `None` to give up.
pub fn next_attempt(attempts: i64, created_at: i64, now: i64) -> Option<i64> {
    if now - created_at >= GIVE_UP_AFTER {
        return None;
    }
    let doublings = u32::try_from((attempts - 1).clamp(0, 20)).unwrap_or(20);
    Some(now + FIRST_BACKOFF.saturating_mul(1 << doublings).min(MAX_BACKOFF))
}

/// Sends queued mail until the process ends: woken when mail is queued, and every few
/// seconds for retries and for mail other nodes queued. A failure never reaches the
/// person whose action queued the mail; it is logged, recorded with the server's
/// answer, and retried with back-off. `ctx` makes a fresh context of `server` for
/// each pass (and reads the time again after each send).
pub fn spawn_mailer<S: Send + Sync + 'static>(server: S, ctx: for<'a> fn(&'a S) -> Ctx<'a>) {
    if ctx(&server).settings.smtp.is_none() {
        return;
    }
    tokio::spawn(async move {
        loop {
            let wakeup = ctx(&server).mail_wakeup;
            let _ = tokio::time::timeout(Duration::from_secs(2), wakeup.notified()).await;
            while send_due(&ctx(&server), || ctx(&server).now).await == BATCH as usize {}
        }
    });
}

/// One pass; returns how many messages it claimed. `clock` reads the time after a send.
async fn send_due(cx: &Ctx<'_>, clock: impl Fn() -> i64) -> usize {
    let Some(smtp) = cx.settings.smtp.as_ref() else {
        return 0;
    };
    let now = cx.now;
    let due = match cx
        .db
        .write(move |c| db::outbox::claim_due(c, now, now + LEASE, BATCH))
        .await
    {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the mail outbox; will retry");
            return 0;
        }
    };
    let claimed = due.len();
    for m in due {
        // lettre's timeout is per command; the whole conversation gets SEND_TIMEOUT, so
        // that a pass stays inside its lease.
        let result = match tokio::time::timeout(SEND_TIMEOUT, smtp.send_both(&m.to, &m.subject, &m.text, &m.html)).await
        {
            Ok(r) => r,
            Err(_) => Err(crate::mail::Failure {
                answer: format!("no answer within {} s", SEND_TIMEOUT.as_secs()),
                permanent: false,
            }),
        };
        let (id, attempts, created_at) = (m.id, m.attempts, m.created_at);
        if let Err(e) = record(cx, id, attempts, created_at, result, clock()).await {
            // The lease runs out and the message is tried again: late, maybe twice,
            // never lost.
            tracing::warn!(mail_id = id, error = %e, "cannot record a mail's outcome");
        }
    }
    claimed
}

/// Records the outcome of one attempt at `now`: sent, to be retried, or given up.
async fn record(
    cx: &Ctx<'_>,
    id: i64,
    attempts: i64,
    created_at: i64,
    result: Result<String, crate::mail::Failure>,
    now: i64,
) -> Result<(), DbError> {
    match result {
        Ok(answer) => {
            tracing::info!(mail_id = id, attempt = attempts + 1, "mail sent");
            cx.db.write(move |c| db::outbox::sent(c, id, &answer, now)).await
        }
        Err(f) => {
            let next = if f.permanent {
                None
            } else {
                next_attempt(attempts + 1, created_at, now)
            };
            match next {
                Some(at) => tracing::warn!(mail_id = id, attempt = attempts + 1, answer = %f.answer,
                    retry_in_s = at - now, "mail not sent; will retry"),
                None => tracing::error!(mail_id = id, attempt = attempts + 1, answer = %f.answer,
                    "mail not sent; given up"),
            }
            cx.db
                .write(move |c| db::outbox::attempt_failed(c, id, &f.answer, next, now))
                .await
        }
    }
}

/// The queue as the admin pages and API show it.
pub async fn queue_view(cx: &Ctx<'_>, status: Option<String>, limit: i64) -> Result<QueueView, DbError> {
    cx.db
        .read(move |c| {
            let (pending, sent, failed) = db::outbox::counts(c)?;
            Ok(QueueView {
                pending,
                sent,
                failed,
                items: db::outbox::list(c, status.as_deref(), limit)?,
            })
        })
        .await
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct QueueView {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
    pub items: Vec<db::outbox::Entry>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_give_up_after_three_days() {
        assert_eq!(next_attempt(1, 0, 100), Some(105));
        assert_eq!(next_attempt(2, 0, 100), Some(110));
        assert_eq!(next_attempt(5, 0, 100), Some(180));
        assert_eq!(next_attempt(30, 0, 100), Some(100 + 3600));
        assert_eq!(next_attempt(3, 0, 3 * 24 * 3600), None);
    }
}
