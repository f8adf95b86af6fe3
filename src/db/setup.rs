//! The one-time setup link: valid until used, until an hour has passed, or until an
//! active administrator exists (users made before one, say with the command line, do
//! not close it).

use super::sql::args;
use super::{users, DbError, Tx};
use crate::crypto::TokenHash;

pub fn create(conn: &Tx<'_>, hash: &TokenHash, now: i64, expires_at: i64) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO setup_tokens (token_hash, created_at, expires_at) VALUES (?1, ?2, ?3)",
        args![hash.as_bytes(), now, expires_at],
    )?;
    Ok(())
}

/// Whether the link still works: unused, unexpired, and no active administrator yet.
pub fn usable(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<bool, DbError> {
    let found = conn.row(
        "SELECT 1 FROM setup_tokens WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
        args![hash.as_bytes(), now],
        |r| r.get::<i64>(0),
    )?;
    Ok(found.is_some() && users::count_active_admins(conn)? == 0)
}

/// Uses the link and creates the administrator in one transaction step; `false`
/// when the link was used, expired, or an administrator appeared meanwhile.
pub fn complete(conn: &Tx<'_>, hash: &TokenHash, admin: &users::NewUser<'_>, now: i64) -> Result<bool, DbError> {
    if !usable(conn, hash, now)? {
        return Ok(false);
    }
    conn.exec(
        "UPDATE setup_tokens SET used_at = ?2 WHERE token_hash = ?1",
        args![hash.as_bytes(), now],
    )?;
    users::insert(conn, admin)?;
    Ok(true)
}
