//! Signing keys at rest.

use rusqlite::{params, Connection};

use super::DbError;
use crate::crypto::keys::{Alg, SigningKeyRecord};

pub fn insert(conn: &Connection, key: &SigningKeyRecord) -> Result<(), DbError> {
    conn.execute(
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

pub fn list(conn: &Connection) -> Result<Vec<SigningKeyRecord>, DbError> {
    let mut stmt = conn.prepare(
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
