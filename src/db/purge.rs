//! Removal of expired rows in small batches, so a purge never holds the write lock
//! long enough to stall requests.

use super::sql::args;
use super::{DbError, Tx};

/// Rows deleted per statement; a batch of this size commits in well under a millisecond.
pub const BATCH: usize = 500;

/// Expired codes are kept this long after expiry so that a late replay is still
/// recognised as a replay (and revokes its grant) rather than as an unknown code.
const CODE_REPLAY_WINDOW: i64 = 600;

/// Table, its primary key, and the condition that makes a row disposable.
const TARGETS: &[(&str, &str, &str)] = &[
    ("auth_codes", "code_hash", "expires_at < ?1 - ?2"),
    ("login_requests", "id_hash", "expires_at < ?1"),
    ("forward_auth_tokens", "token_hash", "expires_at < ?1"),
    ("sessions", "id_hash", "expires_at < ?1 OR ended_at IS NOT NULL"),
    ("revoked_tokens", "jti", "expires_at < ?1"),
    ("refresh_tokens", "token_hash", "expires_at < ?1"),
    ("grants", "id", "expires_at < ?1"),
    ("logout_deliveries", "id", "expires_at < ?1"),
    ("client_assertions", "client_id, jti", "expires_at < ?1"),
    ("device_codes", "device_hash", "expires_at < ?1"),
    ("setup_tokens", "token_hash", "expires_at < ?1"),
    ("webauthn_challenges", "challenge_hash", "expires_at < ?1"),
    ("email_tokens", "id", "expires_at < ?1"),
    ("pushed_requests", "handle_hash", "expires_at < ?1"),
    ("seen_jtis", "kind, jti", "expires_at < ?1"),
    ("registration_tokens", "token_hash", "expires_at < ?1"),
    // A decoy (a mail for a name that matched no account, never sent) goes when the
    // link it holds would have expired.
    ("mail_outbox", "id", "kind = 'decoy' AND created_at < ?1 - 3600"),
    // Sent and given-up mail is shown in the queue view for 30 days.
    (
        "mail_outbox",
        "id",
        "(sent_at IS NOT NULL OR failed_at IS NOT NULL) AND created_at < ?1 - 2592000",
    ),
    // A browser unseen for a year is new again.
    (
        "devices",
        "id",
        "last_seen_at < ?1 - 31536000 AND trusted_until IS NULL",
    ),
];

/// Takes (or renews) the lease `name` for `holder` until `until`, unless another
/// holder's lease is still running: whether `holder` now holds it. One upsert, so of
/// two nodes asking at once exactly one gets it, on either engine.
pub fn take_lease(conn: &Tx<'_>, name: &str, holder: &str, now: i64, until: i64) -> Result<bool, DbError> {
    let got = conn.row(
        "INSERT INTO job_leases (name, holder, until) VALUES (?1, ?2, ?4)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
         WHERE job_leases.until <= ?3 OR job_leases.holder = excluded.holder
         RETURNING holder",
        args![name, holder, now, until],
        |r| r.get::<String>(0),
    )?;
    Ok(got.as_deref() == Some(holder))
}

/// Deletes up to `BATCH` expired rows from each table, and audit entries older than
/// the retention (seconds, 0 keeps them); returns how many went.
pub fn purge_expired(conn: &Tx<'_>, now: i64, audit_retention: i64) -> Result<usize, DbError> {
    let mut total = 0;
    if audit_retention > 0 {
        total += conn.exec(
            &format!("DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?1 LIMIT {BATCH})"),
            args![now - audit_retention],
        )?;
    }
    for (table, key, condition) in TARGETS {
        let sql =
            format!("DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} WHERE {condition} LIMIT {BATCH})");
        total += if condition.contains("?2") {
            conn.exec(&sql, args![now, CODE_REPLAY_WINDOW])?
        } else {
            conn.exec(&sql, args![now])?
        };
    }
    Ok(total)
}
