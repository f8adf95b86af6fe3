//! Initial access tokens (RFC 7591 §3) and registration access tokens (RFC 7592).

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

/// An initial access token as stored (its digest, never the token).
#[derive(Debug, Clone)]
pub struct InitialToken {
    pub token_hash: TokenHash,
    pub created_at: i64,
    pub expires_at: i64,
    /// Registrations it still allows; `None`: any number until it expires.
    pub uses_left: Option<i64>,
    pub created_by: String,
}

fn from_row(r: &Row<'_>) -> Result<InitialToken, DbError> {
    let hash: Vec<u8> = r.get(0)?;
    Ok(InitialToken {
        token_hash: TokenHash::from_slice(&hash)
            .ok_or_else(|| DbError::Corrupt("registration_tokens.token_hash is not a digest".into()))?,
        created_at: r.get(1)?,
        expires_at: r.get(2)?,
        uses_left: r.get(3)?,
        created_by: r.get(4)?,
    })
}

pub fn insert_token(conn: &Tx<'_>, t: &InitialToken) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO registration_tokens (token_hash, created_at, expires_at, uses_left, created_by)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        args![
            t.token_hash.as_bytes().to_vec(),
            t.created_at,
            t.expires_at,
            t.uses_left,
            t.created_by
        ],
    )?;
    Ok(())
}

/// Whether the token would allow a registration now (a read, before the metadata is
/// checked; the use itself is `use_token`, in the registration's transaction).
pub fn token_usable(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<bool, DbError> {
    conn.one(
        "SELECT EXISTS (SELECT 1 FROM registration_tokens
         WHERE token_hash = ?1 AND expires_at > ?2 AND (uses_left IS NULL OR uses_left > 0))",
        args![hash.as_bytes().to_vec(), now],
        |r| r.get(0),
    )
}

/// Uses the token once: one conditional UPDATE, so of two registrations racing for
/// its last use exactly one wins.
pub fn use_token(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "UPDATE registration_tokens SET uses_left = CASE WHEN uses_left IS NULL THEN NULL ELSE uses_left - 1 END
         WHERE token_hash = ?1 AND expires_at > ?2 AND (uses_left IS NULL OR uses_left > 0)",
        args![hash.as_bytes().to_vec(), now],
    )?;
    Ok(Claim::of(n))
}

/// The tokens that still allow a registration, newest first.
pub fn live_tokens(conn: &Tx<'_>, now: i64) -> Result<Vec<InitialToken>, DbError> {
    conn.rows(
        "SELECT token_hash, created_at, expires_at, uses_left, created_by FROM registration_tokens
         WHERE expires_at > ?1 AND (uses_left IS NULL OR uses_left > 0)
         ORDER BY created_at DESC, token_hash",
        args![now],
        from_row,
    )
}

pub fn delete_token(conn: &Tx<'_>, hash: &TokenHash) -> Result<bool, DbError> {
    Ok(conn.exec(
        "DELETE FROM registration_tokens WHERE token_hash = ?1",
        args![hash.as_bytes().to_vec()],
    )? == 1)
}

/// Replaces a registered client's registration access token (RFC 7592 §2.2 rotation).
pub fn set_access_token(conn: &Tx<'_>, client_id: &str, hash: &TokenHash, now: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "UPDATE clients SET registration_token_hash = ?2, updated_at = ?3 WHERE client_id = ?1",
        args![client_id, hash.as_bytes().to_vec(), now],
    )? == 1)
}

/// A metadata document fetched again and found unchanged: only its freshness moves.
pub fn renew_document(conn: &Tx<'_>, client_id: &str, expires_at: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "UPDATE clients SET metadata_expires_at = ?2 WHERE client_id = ?1 AND origin = 'metadata_document'",
        args![client_id, expires_at],
    )? == 1)
}
