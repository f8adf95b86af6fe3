//! The account lifecycle by mail: the mailer that sends what the outbox
//! (`mail::outbox`) holds, with retries, and the flows that send mail.

pub mod codes;
pub mod devices;
pub mod email_mfa;
pub mod invite;
pub mod reset;
pub mod second_factor;
pub mod signup;
pub mod verify;

use std::time::Duration;

use rand::Rng;

use crate::context::Ctx;
use crate::crypto::TokenHash;
use crate::db::{self, DbError, Tx};
use crate::domain::Secret;

/// Whether a mail was queued: the outbox's answer, which the flows here pass on.
pub use crate::mail::outbox::Queued;

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
