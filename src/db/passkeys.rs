//! Passkeys: stored WebAuthn credentials and the one-time challenges of their
//! ceremonies.

use serde::Serialize;

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

#[derive(Debug, Clone, Serialize)]
pub struct Passkey {
    pub id: i64,
    pub user_id: i64,
    #[serde(skip)]
    pub public_jwk: String,
    pub alg: String,
    #[serde(skip)]
    pub sign_count: u32,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

const COLUMNS: &str = "id, user_id, public_jwk, alg, sign_count, name, created_at, last_used_at";

fn from_row(r: &Row<'_>) -> Result<Passkey, DbError> {
    Ok(Passkey {
        id: r.get(0)?,
        user_id: r.get(1)?,
        public_jwk: r.get(2)?,
        alg: r.get(3)?,
        sign_count: r.get(4)?,
        name: r.get(5)?,
        created_at: r.get(6)?,
        last_used_at: r.get(7)?,
    })
}

pub struct NewPasskey<'a> {
    pub user_id: i64,
    pub credential_id: &'a [u8],
    pub public_jwk: &'a str,
    pub alg: &'a str,
    pub sign_count: u32,
    pub name: &'a str,
    pub now: i64,
}

/// Stores a credential; `DbError::Conflict` when its id is already registered.
pub fn insert(conn: &Tx<'_>, p: &NewPasskey<'_>) -> Result<i64, DbError> {
    conn.one(
        "INSERT INTO passkeys (user_id, credential_id, public_jwk, alg, sign_count, name, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        args![
            p.user_id,
            p.credential_id,
            p.public_jwk,
            p.alg,
            p.sign_count,
            p.name,
            p.now
        ],
        |r| r.get(0),
    )
}

pub fn find_by_credential(conn: &Tx<'_>, credential_id: &[u8]) -> Result<Option<Passkey>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM passkeys WHERE credential_id = ?1");
    conn.row(&sql, args![credential_id], from_row)
}

pub fn list_for_user(conn: &Tx<'_>, user_id: i64) -> Result<Vec<Passkey>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM passkeys WHERE user_id = ?1 ORDER BY created_at");
    conn.rows(&sql, args![user_id], from_row)
}

/// The credential ids a user already has (excluded when registering another).
pub fn credential_ids(conn: &Tx<'_>, user_id: i64) -> Result<Vec<Vec<u8>>, DbError> {
    conn.rows(
        "SELECT credential_id FROM passkeys WHERE user_id = ?1",
        args![user_id],
        |r| r.get(0),
    )
}

/// Records a use; `false` when the counter did not grow past the stored one (two
/// assertions raced, or the authenticator was cloned).
pub fn record_use(conn: &Tx<'_>, id: i64, old_count: u32, new_count: u32, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE passkeys SET sign_count = ?3, last_used_at = ?4 WHERE id = ?1 AND sign_count = ?2",
        args![id, old_count, new_count, now],
    )?;
    Ok(n == 1)
}

pub fn delete(conn: &Tx<'_>, user_id: i64, id: i64) -> Result<Option<String>, DbError> {
    let name: Option<String> = conn.row(
        "DELETE FROM passkeys WHERE id = ?1 AND user_id = ?2 RETURNING name",
        args![id, user_id],
        |r| r.get(0),
    )?;
    Ok(name)
}

/// A challenge's binding: the user registering, the login request signing in, the
/// mailed link a passkey is made through, or the signed-in user confirming who they are.
pub enum Binding {
    Register(i64),
    Login(TokenHash),
    /// A link's digest (invitation, reset, verification) and the subject of the account
    /// the passkey is for, which becomes its user handle.
    Enrol(TokenHash, String),
    Reauth(i64),
}

pub fn create_challenge(conn: &Tx<'_>, hash: &TokenHash, binding: &Binding, expires_at: i64) -> Result<(), DbError> {
    let (purpose, user, request, subject) = match binding {
        Binding::Register(uid) => ("register", Some(*uid), None, None),
        Binding::Login(r) => ("login", None, Some(r.as_bytes().to_vec()), None),
        Binding::Enrol(link, sub) => ("enrol", None, Some(link.as_bytes().to_vec()), Some(sub.as_str())),
        Binding::Reauth(uid) => ("reauth", Some(*uid), None, None),
    };
    conn.exec(
        "INSERT INTO webauthn_challenges (challenge_hash, purpose, user_id, request_hash, expires_at, subject)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        args![hash.as_bytes(), purpose, user, request, expires_at, subject],
    )?;
    Ok(())
}

/// Spends a challenge issued for this binding; `false` when unknown, used, expired or
/// issued for something else. An enrolment's subject must match as well.
pub fn consume_challenge(conn: &Tx<'_>, hash: &TokenHash, binding: &Binding, now: i64) -> Result<Claim, DbError> {
    let n = match binding {
        Binding::Register(uid) | Binding::Reauth(uid) => {
            let purpose = if matches!(binding, Binding::Register(_)) {
                "register"
            } else {
                "reauth"
            };
            conn.exec(
                "UPDATE webauthn_challenges SET used_at = ?3 WHERE challenge_hash = ?1 AND purpose = ?4
                 AND user_id = ?2 AND used_at IS NULL AND expires_at > ?3",
                args![hash.as_bytes(), uid, now, purpose],
            )?
        }
        Binding::Login(r) => conn.exec(
            "UPDATE webauthn_challenges SET used_at = ?3 WHERE challenge_hash = ?1 AND purpose = 'login'
             AND request_hash = ?2 AND used_at IS NULL AND expires_at > ?3",
            args![hash.as_bytes(), r.as_bytes(), now],
        )?,
        Binding::Enrol(link, sub) => conn.exec(
            "UPDATE webauthn_challenges SET used_at = ?3 WHERE challenge_hash = ?1 AND purpose = 'enrol'
             AND request_hash = ?2 AND subject = ?4 AND used_at IS NULL AND expires_at > ?3",
            args![hash.as_bytes(), link.as_bytes(), now, sub.as_str()],
        )?,
    };
    Ok(Claim::of(n))
}

/// The subject a live enrolment challenge was issued for through this link, to spend it
/// with (`consume_challenge`) in the same transaction.
pub fn enrolment_subject(
    conn: &Tx<'_>,
    hash: &TokenHash,
    link: &TokenHash,
    now: i64,
) -> Result<Option<String>, DbError> {
    let subject: Option<Option<String>> = conn.row(
        "SELECT subject FROM webauthn_challenges WHERE challenge_hash = ?1 AND purpose = 'enrol'
         AND request_hash = ?2 AND used_at IS NULL AND expires_at > ?3",
        args![hash.as_bytes(), link.as_bytes(), now],
        |r| r.get(0),
    )?;
    Ok(subject.flatten())
}

/// Removes every passkey of a user (a lost device, an administrator's reset).
pub fn delete_all(conn: &Tx<'_>, user_id: i64) -> Result<usize, DbError> {
    conn.exec("DELETE FROM passkeys WHERE user_id = ?1", args![user_id])
}

pub fn count_for_user(conn: &Tx<'_>, user_id: i64) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM passkeys WHERE user_id = ?1",
        args![user_id],
        |r| r.get(0),
    )
}
