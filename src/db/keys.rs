//! Signing keys at rest.

use super::sql::args;
use super::{DbError, Tx};
use crate::crypto::keys::{Alg, SigningKeyRecord};

pub fn insert(conn: &Tx<'_>, key: &SigningKeyRecord) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO signing_keys (kid, alg, private_pem, public_jwk, created_at, retired_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        args![
            key.kid,
            key.alg.as_str(),
            key.private_pem,
            key.public_jwk,
            key.created_at,
            key.retired_at
        ],
    )?;
    Ok(())
}

/// Stores `key` unless its algorithm already has an active key: whether it was stored.
/// Nodes starting together on an empty database each generate a key; the first to
/// commit wins and the others adopt it, because the check runs behind a lock on one
/// row (`job_leases`' `signing-keys`), taken by a no-op upsert that both engines
/// accept (SQLite's single writer serializes it anyway).
pub fn insert_unless_active(conn: &Tx<'_>, key: &SigningKeyRecord) -> Result<bool, DbError> {
    lock(conn)?;
    let active: i64 = conn.one(
        "SELECT count(*) FROM signing_keys WHERE alg = ?1 AND retired_at IS NULL",
        args![key.alg.as_str()],
        |r| r.get(0),
    )?;
    if active > 0 {
        return Ok(false);
    }
    insert(conn, key)?;
    Ok(true)
}

/// Takes the lock every change to the set of active keys takes first (held to the end
/// of the transaction), so that two nodes creating or rotating keys at once take
/// turns and each sees what the other stored.
pub fn lock(conn: &Tx<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO job_leases (name, holder, until) VALUES ('signing-keys', '', 0)
         ON CONFLICT (name) DO UPDATE SET until = job_leases.until",
        args![],
    )?;
    Ok(())
}

pub fn list(conn: &Tx<'_>) -> Result<Vec<SigningKeyRecord>, DbError> {
    conn.rows(
        "SELECT kid, alg, private_pem, public_jwk, created_at, retired_at FROM signing_keys ORDER BY created_at",
        args![],
        |r| {
            let kid: String = r.get(0)?;
            let alg: String = r.get(1)?;
            let private_pem = r.get(2)?;
            let public_jwk = r.get(3)?;
            let created_at = r.get(4)?;
            let retired_at = r.get(5)?;
            let alg = Alg::parse(&alg).ok_or_else(|| DbError::Corrupt(format!("key {kid} has unknown alg {alg}")))?;
            Ok(SigningKeyRecord {
                kid,
                alg,
                private_pem,
                public_jwk,
                created_at,
                retired_at,
            })
        },
    )
}

/// Retires every active key of `alg` at `at` (ahead of now when a rotation has
/// published a successor): from then it stops signing but stays published.
pub fn retire_active(conn: &Tx<'_>, alg: Alg, at: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE signing_keys SET retired_at = ?2 WHERE alg = ?1 AND retired_at IS NULL",
        args![alg.as_str(), at],
    )
}

/// A cheap fingerprint of the key table; when it changes, the key set is reloaded.
pub fn fingerprint(conn: &Tx<'_>) -> Result<(i64, i64, i64), DbError> {
    conn.one(
        "SELECT count(*), coalesce(max(created_at), 0), coalesce(max(retired_at), 0) FROM signing_keys",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// Replaces a key's stored private part (sealing keys kept in clear).
pub fn set_private(conn: &Tx<'_>, kid: &str, private_pem: &str) -> Result<(), DbError> {
    conn.exec(
        "UPDATE signing_keys SET private_pem = ?2 WHERE kid = ?1",
        args![kid, private_pem],
    )?;
    Ok(())
}
