//! Browsers a user has signed in from, named by a long-lived cookie (its digest here):
//! known ones are not announced by mail again, and trusted ones skip the second factor
//! until `trusted_until`.

use super::sql::args;
use super::{DbError, Tx};
use crate::crypto::TokenHash;

/// Records a sign-in from this browser; whether it was new for the account.
pub fn seen(conn: &Tx<'_>, user_id: i64, digest: &TokenHash, label: &str, now: i64) -> Result<bool, DbError> {
    let updated = conn.exec(
        "UPDATE devices SET last_seen_at = ?3 WHERE user_id = ?1 AND digest = ?2",
        args![user_id, digest.as_bytes(), now],
    )?;
    if updated == 1 {
        return Ok(false);
    }
    conn.exec(
        "INSERT INTO devices (user_id, digest, label, created_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (user_id, digest) DO UPDATE SET last_seen_at = ?4",
        args![user_id, digest.as_bytes(), label, now],
    )?;
    Ok(true)
}

/// How many browsers the account has signed in from (that were seen in the last year).
pub fn count(conn: &Tx<'_>, user_id: i64) -> Result<i64, DbError> {
    conn.one("SELECT count(*) FROM devices WHERE user_id = ?1", args![user_id], |r| {
        r.get(0)
    })
}

/// Trusts this browser to skip the second factor until `until`.
pub fn trust(
    conn: &Tx<'_>,
    user_id: i64,
    digest: &TokenHash,
    label: &str,
    until: i64,
    now: i64,
) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO devices (user_id, digest, label, created_at, last_seen_at, trusted_until)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)
         ON CONFLICT (user_id, digest) DO UPDATE SET trusted_until = ?5, last_seen_at = ?4",
        args![user_id, digest.as_bytes(), label, now, until],
    )?;
    Ok(())
}

/// Whether this browser is trusted for the account now.
pub fn is_trusted(conn: &Tx<'_>, user_id: i64, digest: &TokenHash, now: i64) -> Result<bool, DbError> {
    Ok(conn
        .row(
            "SELECT 1 FROM devices WHERE user_id = ?1 AND digest = ?2 AND trusted_until > ?3",
            args![user_id, digest.as_bytes(), now],
            |r| r.get::<i64>(0),
        )?
        .is_some())
}

/// A trusted browser as the account page lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Trusted {
    pub id: i64,
    pub label: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub trusted_until: i64,
}

pub fn trusted(conn: &Tx<'_>, user_id: i64, now: i64) -> Result<Vec<Trusted>, DbError> {
    conn.rows(
        "SELECT id, label, created_at, last_seen_at, trusted_until FROM devices
         WHERE user_id = ?1 AND trusted_until > ?2 ORDER BY last_seen_at DESC",
        args![user_id, now],
        |r| {
            Ok(Trusted {
                id: r.get(0)?,
                label: r.get(1)?,
                created_at: r.get(2)?,
                last_seen_at: r.get(3)?,
                trusted_until: r.get(4)?,
            })
        },
    )
}

/// Ends the trust of one of the account's browsers; whether it was trusted.
pub fn untrust(conn: &Tx<'_>, user_id: i64, id: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "UPDATE devices SET trusted_until = NULL WHERE user_id = ?1 AND id = ?2 AND trusted_until IS NOT NULL",
        args![user_id, id],
    )? == 1)
}

/// Ends the trust of every browser of the account (password change or reset).
pub fn untrust_all(conn: &Tx<'_>, user_id: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE devices SET trusted_until = NULL WHERE user_id = ?1 AND trusted_until IS NOT NULL",
        args![user_id],
    )
}
