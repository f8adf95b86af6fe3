//! Single-use links (and their codes) sent by mail: email verification, password reset,
//! sign-in, invitation and the email second factor. Only digests are stored; a new
//! token of a purpose voids the account's earlier ones of that purpose (verification
//! links only those sent to another address: `create_beside`).

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

pub const VERIFY: &str = "verify";
pub const RESET: &str = "reset";
pub const SIGNIN: &str = "signin";
pub const INVITE: &str = "invite";
pub const MFA: &str = "mfa";

#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    pub digest: &'a TokenHash,
    pub purpose: &'a str,
    pub user_id: Option<i64>,
    pub email: &'a str,
    /// What the token carries (JSON): an invitation's groups and role, where to go on.
    pub data: &'a str,
    pub code: Option<&'a TokenHash>,
    pub request: Option<&'a TokenHash>,
    pub expires_at: i64,
}

/// Stores a token, first voiding the unused ones of the same purpose for the account
/// (invitations, which have no account yet, are voided by address).
/// One statement for both, so that a decoy (no account) costs what a real token does.
pub fn create(conn: &Tx<'_>, t: &NewToken<'_>, now: i64) -> Result<i64, DbError> {
    conn.exec(
        "UPDATE email_tokens SET used_at = ?4
         WHERE purpose = ?2 AND used_at IS NULL
           AND (user_id = ?1 OR (?1 IS NULL AND user_id IS NULL AND lower(email) = lower(?3)))",
        args![t.user_id, t.purpose, t.email, now],
    )?;
    insert(conn, t, now)
}

fn insert(conn: &Tx<'_>, t: &NewToken<'_>, now: i64) -> Result<i64, DbError> {
    conn.one(
        "INSERT INTO email_tokens (digest, purpose, user_id, email, data, code_digest, request_hash, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
        args![
            t.digest.as_bytes(),
            t.purpose,
            t.user_id,
            t.email,
            t.data,
            t.code.map(|c| c.as_bytes().to_vec()),
            t.request.map(|r| r.as_bytes().to_vec()),
            now,
            t.expires_at
        ],
        |r| r.get(0),
    )
}

/// Stores a verification token beside the account's live ones sent to the same
/// address (each stays valid until one is used: `void_for_address`), voiding those sent
/// to another address.
pub fn create_beside(conn: &Tx<'_>, t: &NewToken<'_>, now: i64) -> Result<i64, DbError> {
    conn.exec(
        "UPDATE email_tokens SET used_at = ?4
         WHERE user_id = ?1 AND purpose = ?2 AND lower(email) <> lower(?3) AND used_at IS NULL",
        args![t.user_id, t.purpose, t.email, now],
    )?;
    insert(conn, t, now)
}

/// When the account's newest live token of this purpose to this address was made.
pub fn newest_to(conn: &Tx<'_>, user_id: i64, purpose: &str, email: &str, now: i64) -> Result<Option<i64>, DbError> {
    conn.one(
        "SELECT max(created_at) FROM email_tokens
         WHERE user_id = ?1 AND purpose = ?2 AND lower(email) = lower(?3) AND used_at IS NULL AND expires_at > ?4",
        args![user_id, purpose, email, now],
        |r| r.get(0),
    )
}

/// Voids the account's unused tokens of this purpose sent to this address (the others
/// of a set, once one of them is used).
pub fn void_for_address(conn: &Tx<'_>, user_id: i64, purpose: &str, email: &str, now: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE email_tokens SET used_at = ?4
         WHERE user_id = ?1 AND purpose = ?2 AND lower(email) = lower(?3) AND used_at IS NULL",
        args![user_id, purpose, email, now],
    )
}

/// A live token as read back.
#[derive(Debug, Clone)]
pub struct Token {
    pub id: i64,
    pub purpose: String,
    pub user_id: Option<i64>,
    pub email: String,
    pub data: String,
    pub code: Option<Vec<u8>>,
    pub attempts: i64,
    pub created_at: i64,
    pub expires_at: i64,
}

const COLUMNS: &str = "id, purpose, user_id, email, data, code_digest, attempts, created_at, expires_at";

fn from_row(r: &Row<'_>) -> Result<Token, DbError> {
    Ok(Token {
        id: r.get(0)?,
        purpose: r.get(1)?,
        user_id: r.get(2)?,
        email: r.get(3)?,
        data: r.get(4)?,
        code: r.get(5)?,
        attempts: r.get(6)?,
        created_at: r.get(7)?,
        expires_at: r.get(8)?,
    })
}

/// The unused, unexpired token of this purpose with this digest.
pub fn find(conn: &Tx<'_>, digest: &TokenHash, purpose: &str, now: i64) -> Result<Option<Token>, DbError> {
    conn.row(
        &format!(
            "SELECT {COLUMNS} FROM email_tokens
             WHERE digest = ?1 AND purpose = ?2 AND used_at IS NULL AND expires_at > ?3"
        ),
        args![digest.as_bytes(), purpose, now],
        from_row,
    )
}

/// The live token of this purpose bound to a parked request (a sign-in code).
pub fn find_by_request(conn: &Tx<'_>, request: &TokenHash, purpose: &str, now: i64) -> Result<Option<Token>, DbError> {
    conn.row(
        &format!(
            "SELECT {COLUMNS} FROM email_tokens
             WHERE request_hash = ?1 AND purpose = ?2 AND used_at IS NULL AND expires_at > ?3
             ORDER BY id DESC LIMIT 1"
        ),
        args![request.as_bytes(), purpose, now],
        from_row,
    )
}

/// The live token of this purpose for an account (the email second factor's code).
pub fn find_for_user(conn: &Tx<'_>, user_id: i64, purpose: &str, now: i64) -> Result<Option<Token>, DbError> {
    conn.row(
        &format!(
            "SELECT {COLUMNS} FROM email_tokens
             WHERE user_id = ?1 AND purpose = ?2 AND used_at IS NULL AND expires_at > ?3
             ORDER BY id DESC LIMIT 1"
        ),
        args![user_id, purpose, now],
        from_row,
    )
}

/// Spends a token: of two parallel uses exactly one wins.
pub fn claim(conn: &Tx<'_>, id: i64, now: i64) -> Result<Claim, DbError> {
    Ok(Claim::of(conn.exec(
        "UPDATE email_tokens SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL AND expires_at > ?2",
        args![id, now],
    )?))
}

/// Counts a wrong code; returns the attempts so far.
pub fn wrong_code(conn: &Tx<'_>, id: i64) -> Result<i64, DbError> {
    conn.one(
        "UPDATE email_tokens SET attempts = attempts + 1 WHERE id = ?1 RETURNING attempts",
        args![id],
        |r| r.get(0),
    )
}

/// Voids every unused token of these purposes for an account (after a password reset,
/// the other reset links; on deletion, all).
pub fn void_for_user(conn: &Tx<'_>, user_id: i64, purposes: &[&str], now: i64) -> Result<usize, DbError> {
    let mut n = 0;
    for p in purposes {
        n += conn.exec(
            "UPDATE email_tokens SET used_at = ?3 WHERE user_id = ?1 AND purpose = ?2 AND used_at IS NULL",
            args![user_id, *p, now],
        )?;
    }
    Ok(n)
}

/// Voids one token by id (an administrator revoking an invitation); whether it was live.
pub fn void(conn: &Tx<'_>, id: i64, purpose: &str, now: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "UPDATE email_tokens SET used_at = ?3 WHERE id = ?1 AND purpose = ?2 AND used_at IS NULL AND expires_at > ?3",
        args![id, purpose, now],
    )? == 1)
}

/// Live tokens of a purpose, newest first (pending invitations).
pub fn live(conn: &Tx<'_>, purpose: &str, now: i64) -> Result<Vec<Token>, DbError> {
    conn.rows(
        &format!(
            "SELECT {COLUMNS} FROM email_tokens WHERE purpose = ?1 AND used_at IS NULL AND expires_at > ?2
             ORDER BY id DESC"
        ),
        args![purpose, now],
        from_row,
    )
}
