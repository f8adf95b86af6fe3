//! Second factors: a user's TOTP secret (sealed when a master key is set) with the
//! last time step it accepted, and hashed single-use recovery codes.

use super::sql::args;
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

/// `Debug` leaves the secret out.
#[derive(Clone)]
pub struct Totp {
    /// Base32 secret, or its sealed form.
    pub secret: String,
    pub confirmed: bool,
    pub last_step: i64,
    /// When the first code confirmed it (the credential's creation, as listed).
    pub confirmed_at: Option<i64>,
}

impl std::fmt::Debug for Totp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Totp")
            .field("secret", &"<redacted>")
            .field("confirmed", &self.confirmed)
            .field("last_step", &self.last_step)
            .finish_non_exhaustive()
    }
}

pub fn find(conn: &Tx<'_>, user_id: i64) -> Result<Option<Totp>, DbError> {
    conn.row(
        "SELECT secret, confirmed_at IS NOT NULL, last_step, confirmed_at FROM totp WHERE user_id = ?1",
        args![user_id],
        |r| {
            Ok(Totp {
                secret: r.get(0)?,
                confirmed: r.get(1)?,
                last_step: r.get(2)?,
                confirmed_at: r.get(3)?,
            })
        },
    )
}

pub fn enabled(conn: &Tx<'_>, user_id: i64) -> Result<bool, DbError> {
    Ok(find(conn, user_id)?.is_some_and(|t| t.confirmed))
}

/// Stores a new unconfirmed secret, replacing an earlier unconfirmed one; `false`
/// when a confirmed secret exists (it must be disabled first).
pub fn begin(conn: &Tx<'_>, user_id: i64, secret: &str, now: i64) -> Result<bool, DbError> {
    if find(conn, user_id)?.is_some_and(|t| t.confirmed) {
        return Ok(false);
    }
    conn.exec(
        "INSERT INTO totp (user_id, secret, confirmed_at, last_step, created_at) VALUES (?1, ?2, NULL, 0, ?3)
         ON CONFLICT (user_id) DO UPDATE
         SET secret = excluded.secret, confirmed_at = NULL, last_step = 0, created_at = excluded.created_at",
        args![user_id, secret, now],
    )?;
    Ok(true)
}

/// Marks the secret confirmed at `step` and replaces the recovery codes.
pub fn confirm(conn: &Tx<'_>, user_id: i64, step: i64, recovery: &[TokenHash], now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE totp SET confirmed_at = ?2, last_step = ?3 WHERE user_id = ?1 AND confirmed_at IS NULL",
        args![user_id, now, step],
    )?;
    if n != 1 {
        return Ok(false);
    }
    conn.exec("DELETE FROM recovery_codes WHERE user_id = ?1", args![user_id])?;
    for hash in recovery {
        conn.exec(
            "INSERT INTO recovery_codes (user_id, code_hash) VALUES (?1, ?2)",
            args![user_id, hash.as_bytes()],
        )?;
    }
    Ok(true)
}

/// Records `step` as used; `false` when it (or a later one) already was, so of two
/// submissions of one code exactly one wins.
pub fn use_step(conn: &Tx<'_>, user_id: i64, step: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "UPDATE totp SET last_step = ?2 WHERE user_id = ?1 AND confirmed_at IS NOT NULL AND last_step < ?2",
        args![user_id, step],
    )?;
    Ok(Claim::of(n))
}

/// Spends a recovery code; `false` when unknown or already used.
pub fn use_recovery(conn: &Tx<'_>, user_id: i64, hash: &TokenHash, now: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "UPDATE recovery_codes SET used_at = ?3 WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NULL",
        args![user_id, hash.as_bytes(), now],
    )?;
    Ok(Claim::of(n))
}

pub fn recovery_left(conn: &Tx<'_>, user_id: i64) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM recovery_codes WHERE user_id = ?1 AND used_at IS NULL",
        args![user_id],
        |r| r.get(0),
    )
}

/// Removes the secret and the recovery codes; `false` when there was none.
pub fn disable(conn: &Tx<'_>, user_id: i64) -> Result<bool, DbError> {
    conn.exec("DELETE FROM recovery_codes WHERE user_id = ?1", args![user_id])?;
    Ok(conn.exec("DELETE FROM totp WHERE user_id = ?1", args![user_id])? == 1)
}
