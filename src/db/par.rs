//! Pushed authorization requests (RFC 9126), used once by the client that pushed them.

use super::sql::args;
use super::{DbError, Tx};
use crate::crypto::TokenHash;

/// Stores pushed parameters (`params`: a JSON list of `[name, value]` pairs) under the
/// hash of the random part of their `request_uri`.
pub fn insert(
    conn: &Tx<'_>,
    handle: &TokenHash,
    client_id: &str,
    params: &str,
    now: i64,
    expires_at: i64,
) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO pushed_requests (handle_hash, client_id, params, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        args![handle.as_bytes(), client_id, params, now, expires_at],
    )?;
    Ok(())
}

/// Takes the pushed parameters once (RFC 9126 §4, §7.3): one conditional `UPDATE`, so
/// of two uses on any nodes exactly one gets them. `None` when the handle is unknown,
/// was pushed by another client, was used, or has expired; another client's attempt
/// does not spend it.
pub fn consume(conn: &Tx<'_>, handle: &TokenHash, client_id: &str, now: i64) -> Result<Option<String>, DbError> {
    conn.row(
        "UPDATE pushed_requests SET used_at = ?3
         WHERE handle_hash = ?1 AND client_id = ?2 AND used_at IS NULL AND expires_at > ?3
         RETURNING params",
        args![handle.as_bytes(), client_id, now],
        |r| r.get(0),
    )
}
