//! Signing keys at rest.

use rusqlite::params;

use super::{DbError, Tx};
use crate::crypto::keys::{Alg, SigningKeyRecord};

pub fn insert(conn: &Tx<'_>, key: &SigningKeyRecord) -> Result<(), DbError> {
    conn.sql().execute(
        "INSERT INTO signing_keys (kid, alg, private_pem, public_jwk, created_at, retired_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
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

pub fn list(conn: &Tx<'_>) -> Result<Vec<SigningKeyRecord>, DbError> {
    let mut stmt = conn.sql().prepare(
        "SELECT kid, alg, private_pem, public_jwk, created_at, retired_at FROM signing_keys ORDER BY created_at",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
    })?;
    let mut keys = Vec::new();
    for row in rows {
        let (kid, alg, private_pem, public_jwk, created_at, retired_at) = row?;
        let alg = Alg::parse(&alg).ok_or_else(|| DbError::Corrupt(format!("key {kid} has unknown alg {alg}")))?;
        keys.push(SigningKeyRecord {
            kid,
            alg,
            private_pem,
            public_jwk,
            created_at,
            retired_at,
        });
    }
    Ok(keys)
}

/// Retires every active key of `alg`: it stops signing but stays published.
pub fn retire_active(conn: &Tx<'_>, alg: Alg, now: i64) -> Result<usize, DbError> {
    Ok(conn.sql().execute(
        "UPDATE signing_keys SET retired_at = ?2 WHERE alg = ?1 AND retired_at IS NULL",
        params![alg.as_str(), now],
    )?)
}

/// A cheap fingerprint of the key table; when it changes, the key set is reloaded.
pub fn fingerprint(conn: &Tx<'_>) -> Result<(i64, i64, i64), DbError> {
    Ok(conn.sql().query_row(
        "SELECT count(*), coalesce(max(created_at), 0), coalesce(max(retired_at), 0) FROM signing_keys",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

/// Replaces a key's stored private part (sealing keys kept in clear).
pub fn set_private(conn: &Tx<'_>, kid: &str, private_pem: &str) -> Result<(), DbError> {
    conn.sql().execute(
        "UPDATE signing_keys SET private_pem = ?2 WHERE kid = ?1",
        params![kid, private_pem],
    )?;
    Ok(())
}
