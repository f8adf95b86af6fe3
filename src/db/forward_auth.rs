//! Forward-auth tokens: the value of the `tessera_fa` cookie (stored as its SHA-256),
//! bound to the SSO session that signed in, and the first access of each to an app.

use super::sql::args;
use super::{DbError, Tx};
use crate::crypto::TokenHash;

/// Who a live forward-auth token stands for, read with its session in one statement.
#[derive(Debug, Clone)]
pub struct Holder {
    pub sid: String,
    pub user_id: i64,
    pub username: String,
    pub email: Option<String>,
    pub name: Option<String>,
    /// The session's authentication methods (RFC 8176), space-separated.
    pub amr: String,
    /// Group names, sorted.
    pub groups: Vec<String>,
}

/// Stores a token for session `sid`, living as long as the session.
pub fn insert(conn: &Tx<'_>, hash: &TokenHash, sid: &str, now: i64, expires_at: i64) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO forward_auth_tokens (token_hash, sid, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
        args![hash.as_bytes(), sid, now, expires_at],
    )?;
    Ok(())
}

/// The holder of a token whose session is live (not ended, not expired) and whose
/// user is not disabled; `None` otherwise, so signing out, an expired session, a
/// back-channel logout or a disabled account end forward-auth access at once.
pub fn holder(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<Option<Holder>, DbError> {
    let found = conn.row(
        "SELECT s.sid, u.id, u.username, u.email, u.name, s.amr
           FROM forward_auth_tokens t
           JOIN sessions s ON s.sid = t.sid
           JOIN users u ON u.id = s.user_id
          WHERE t.token_hash = ?1 AND t.expires_at > ?2
            AND s.ended_at IS NULL AND s.expires_at > ?2 AND u.disabled = 0",
        args![hash.as_bytes(), now],
        |r| {
            Ok(Holder {
                sid: r.get(0)?,
                user_id: r.get(1)?,
                username: r.get(2)?,
                email: r.get(3)?,
                name: r.get(4)?,
                amr: r.get(5)?,
                groups: Vec::new(),
            })
        },
    )?;
    let Some(mut h) = found else {
        return Ok(None);
    };
    h.groups = conn.rows(
        "SELECT g.name FROM groups g JOIN user_groups ug ON ug.group_id = g.id WHERE ug.user_id = ?1 ORDER BY g.name",
        args![h.user_id],
        |r| r.get(0),
    )?;
    Ok(Some(h))
}

/// Records the first access of a token to an app; `true` when this call recorded it
/// (so exactly one node audits it).
pub fn first_access(conn: &Tx<'_>, hash: &TokenHash, app_id: &str, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        // Only while the token and the app still exist: a purge or a deletion in
        // between leaves nothing to record rather than failing the request.
        "INSERT INTO forward_auth_access (token_hash, app_id, at)
         SELECT ?1, ?2, ?3
          WHERE EXISTS (SELECT 1 FROM forward_auth_tokens WHERE token_hash = ?1)
            AND EXISTS (SELECT 1 FROM apps WHERE id = ?2)
         ON CONFLICT (token_hash, app_id) DO NOTHING",
        args![hash.as_bytes(), app_id, now],
    )?;
    Ok(n == 1)
}
