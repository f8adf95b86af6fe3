//! The mail outbox: messages queued in the transaction of the action that causes them,
//! claimed by the mailer of one node at a time, and kept after sending for the queue view.

use super::sql::args;
use super::{DbError, Tx};

/// A message to queue: already rendered, so that the mailer only sends.
#[derive(Debug, Clone)]
pub struct NewMail<'a> {
    pub to: &'a str,
    pub subject: &'a str,
    pub text: &'a str,
    pub html: &'a str,
    /// What the mail is (`reset`, `verify`, `signin`, `invite`, `code`, `notice`, `test`).
    pub kind: &'a str,
    pub user_id: Option<i64>,
    /// Stored as a `DECOY`, never sent (`mail::outbox::queue_or_decoy`).
    pub decoy: bool,
}

/// The kind of a decoy: a mail rendered and stored for a name that matched no account,
/// so that the answer costs the same work. It is stored as given up (`failed_at`), so
/// no mailer ever claims it; the queue view and the hourly limits leave it out; the
/// purge removes it after an hour.
pub const DECOY: &str = "decoy";

/// Stores a message; a real one and a decoy run the same statement.
pub fn queue(conn: &Tx<'_>, m: &NewMail<'_>, now: i64) -> Result<i64, DbError> {
    let (kind, failed_at) = match m.decoy {
        true => (DECOY, Some(now)),
        false => (m.kind, None),
    };
    conn.one(
        "INSERT INTO mail_outbox (to_addr, subject, text_body, html_body, kind, user_id, created_at, next_at, failed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) RETURNING id",
        args![m.to, m.subject, m.text, m.html, kind, m.user_id, now, failed_at],
        |r| r.get(0),
    )
}

/// The advisory lock key of the hourly mail limits ("tessmail"; migrations use another).
const MAIL_LIMIT_LOCK: i64 = 0x7465_7373_6d61_696c;

/// Mails of these kinds queued since `since` about this account, and to this address
/// (the hourly limits). Called inside the write that queues the mail: on PostgreSQL
/// the count first takes a transaction-wide advisory lock, so parallel requests on any
/// node count and queue one after another and cannot together pass the limit (a count
/// does not lock the rows a parallel insert adds); SQLite's one writer orders them
/// already.
pub fn count_since(
    conn: &Tx<'_>,
    user_id: Option<i64>,
    to: &str,
    kinds: &[&str],
    since: i64,
) -> Result<(i64, i64), DbError> {
    if !conn.writes_one_at_a_time() {
        conn.row("SELECT pg_advisory_xact_lock(?1)", args![MAIL_LIMIT_LOCK], |_| Ok(()))?;
    }
    let marks: Vec<String> = (0..kinds.len()).map(|i| format!("?{}", i + 3)).collect();
    let kind_in = format!("kind IN ({})", marks.join(", "));
    let count = |who: &str, first: &dyn super::sql::ToValue| -> Result<i64, DbError> {
        let mut values: Vec<&dyn super::sql::ToValue> = vec![first, &since];
        values.extend(kinds.iter().map(|k| k as &dyn super::sql::ToValue));
        conn.one(
            &format!("SELECT count(*) FROM mail_outbox WHERE {who} AND created_at > ?2 AND {kind_in}"),
            &values,
            |r| r.get(0),
        )
    };
    // Asked even without an account (`user_id = NULL` matches nothing), so that both
    // paths of a form anyone can fill in read alike.
    let by_user = count("user_id = ?1", &user_id)?;
    let by_addr = count("lower(to_addr) = lower(?1)", &to)?;
    Ok((by_user, by_addr))
}

/// A queued message handed to the mailer.
#[derive(Debug, Clone)]
pub struct Due {
    pub id: i64,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub attempts: i64,
    pub created_at: i64,
}

/// Claims up to `limit` messages that are due, as `logout::claim_due` does: `next_at`
/// moves to `lease_until`, so another node's mailer skips them, and a node that dies
/// before recording the outcome lets them come due again. Returned oldest first, so
/// that mail goes out in the order it was queued (a newer link after the one it voids).
pub fn claim_due(conn: &Tx<'_>, now: i64, lease_until: i64, limit: i64) -> Result<Vec<Due>, DbError> {
    let mut due = conn.rows(
        "UPDATE mail_outbox SET next_at = ?3
         WHERE next_at <= ?1 AND sent_at IS NULL AND failed_at IS NULL
           AND id IN (SELECT id FROM mail_outbox WHERE next_at <= ?1 AND sent_at IS NULL AND failed_at IS NULL
                      ORDER BY next_at, id LIMIT ?2)
         RETURNING id, to_addr, subject, text_body, html_body, attempts, created_at",
        args![now, limit, lease_until],
        |r| {
            Ok(Due {
                id: r.get(0)?,
                to: r.get(1)?,
                subject: r.get(2)?,
                text: r.get(3)?,
                html: r.get(4)?,
                attempts: r.get(5)?,
                created_at: r.get(6)?,
            })
        },
    )?;
    // RETURNING keeps no order.
    due.sort_by_key(|m| m.id);
    Ok(due)
}

pub fn sent(conn: &Tx<'_>, id: i64, answer: &str, now: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE mail_outbox SET sent_at = ?2, last_answer = ?3, attempts = attempts + 1 WHERE id = ?1",
        args![id, now, answer],
    )?;
    Ok(())
}

/// A failed attempt: retried at `next_at`, or given up when `next_at` is `None`.
pub fn attempt_failed(conn: &Tx<'_>, id: i64, answer: &str, next_at: Option<i64>, now: i64) -> Result<(), DbError> {
    match next_at {
        Some(at) => conn.exec(
            "UPDATE mail_outbox SET attempts = attempts + 1, last_answer = ?2, next_at = ?3 WHERE id = ?1",
            args![id, answer, at],
        )?,
        None => conn.exec(
            "UPDATE mail_outbox SET attempts = attempts + 1, last_answer = ?2, failed_at = ?3 WHERE id = ?1",
            args![id, answer, now],
        )?,
    };
    Ok(())
}

/// A message as the queue view shows it (no body: it may hold a live link).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub id: i64,
    pub to: String,
    pub subject: String,
    pub kind: String,
    pub status: &'static str,
    pub created_at: i64,
    pub attempts: i64,
    pub next_attempt_at: Option<i64>,
    pub sent_at: Option<i64>,
    pub failed_at: Option<i64>,
    pub last_answer: Option<String>,
}

/// The newest messages, optionally only those `pending`, `sent` or `failed`.
pub fn list(conn: &Tx<'_>, status: Option<&str>, limit: i64) -> Result<Vec<Entry>, DbError> {
    let filter = match status {
        Some("pending") => "WHERE sent_at IS NULL AND failed_at IS NULL",
        Some("sent") => "WHERE sent_at IS NOT NULL",
        Some("failed") => "WHERE failed_at IS NOT NULL AND kind <> 'decoy'",
        _ => "WHERE kind <> 'decoy'",
    };
    conn.rows(
        &format!(
            "SELECT id, to_addr, subject, kind, created_at, attempts, next_at, sent_at, failed_at, last_answer
             FROM mail_outbox {filter} ORDER BY id DESC LIMIT ?1"
        ),
        args![limit],
        |r| {
            let (sent_at, failed_at): (Option<i64>, Option<i64>) = (r.get(7)?, r.get(8)?);
            let status = match (sent_at, failed_at) {
                (Some(_), _) => "sent",
                (None, Some(_)) => "failed",
                _ => "pending",
            };
            Ok(Entry {
                id: r.get(0)?,
                to: r.get(1)?,
                subject: r.get(2)?,
                kind: r.get(3)?,
                status,
                created_at: r.get(4)?,
                attempts: r.get(5)?,
                next_attempt_at: (status == "pending").then(|| r.get(6)).transpose()?,
                sent_at,
                failed_at,
                last_answer: r.get(9)?,
            })
        },
    )
}

/// How many messages are pending, sent and failed.
pub fn counts(conn: &Tx<'_>) -> Result<(i64, i64, i64), DbError> {
    conn.one(
        "SELECT
           coalesce(sum(CASE WHEN sent_at IS NULL AND failed_at IS NULL THEN 1 ELSE 0 END), 0),
           coalesce(sum(CASE WHEN sent_at IS NOT NULL THEN 1 ELSE 0 END), 0),
           coalesce(sum(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END), 0)
         FROM mail_outbox WHERE kind <> 'decoy'",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}
