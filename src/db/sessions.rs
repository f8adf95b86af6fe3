//! SSO sessions and the pending authorization requests that wait for a sign-in.

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

#[derive(Debug, Clone)]
pub struct Session {
    pub sid: String,
    pub user_id: i64,
    pub auth_time: i64,
    pub expires_at: i64,
    /// Authentication methods used (RFC 8176), space-separated: `pwd`, `pwd otp mfa`.
    pub amr: String,
    /// When the user last confirmed their password again in this session.
    pub reauth_at: Option<i64>,
}

impl Session {
    /// The last time this person proved who they are: the sign-in, or a later
    /// confirmation of the password.
    pub fn last_authenticated(&self) -> i64 {
        self.reauth_at.map_or(self.auth_time, |r| r.max(self.auth_time))
    }
}

pub struct NewSession<'a> {
    pub id_hash: &'a TokenHash,
    pub sid: &'a str,
    pub user_id: i64,
    pub auth_time: i64,
    pub now: i64,
    pub expires_at: i64,
    pub amr: &'a str,
    pub user_agent: Option<&'a str>,
    pub ip: Option<&'a str>,
}

pub fn create(conn: &Tx<'_>, s: &NewSession<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO sessions (id_hash, sid, user_id, auth_time, created_at, expires_at, amr, user_agent, ip)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        args![
            s.id_hash.as_bytes(),
            s.sid,
            s.user_id,
            s.auth_time,
            s.now,
            s.expires_at,
            s.amr,
            s.user_agent,
            s.ip
        ],
    )?;
    Ok(())
}

/// The live session behind a cookie: not ended, not expired, and its user enabled.
pub fn find_active(conn: &Tx<'_>, id_hash: &TokenHash, now: i64) -> Result<Option<Session>, DbError> {
    conn.row(
        "SELECT s.sid, s.user_id, s.auth_time, s.expires_at, s.amr, s.reauth_at FROM sessions s
             JOIN users u ON u.id = s.user_id
             WHERE s.id_hash = ?1 AND s.ended_at IS NULL AND s.expires_at > ?2 AND u.disabled = 0",
        args![id_hash.as_bytes(), now],
        |r| {
            Ok(Session {
                sid: r.get(0)?,
                user_id: r.get(1)?,
                auth_time: r.get(2)?,
                expires_at: r.get(3)?,
                amr: r.get(4)?,
                reauth_at: r.get(5)?,
            })
        },
    )
}

/// Records that the user of session `sid` confirmed their password just now.
pub fn mark_reauthenticated(conn: &Tx<'_>, sid: &str, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE sessions SET reauth_at = ?2 WHERE sid = ?1 AND ended_at IS NULL",
        args![sid, now],
    )?;
    Ok(n == 1)
}

/// Whether session `sid` is still live (not ended, not expired).
pub fn sid_active(conn: &Tx<'_>, sid: &str, now: i64) -> Result<bool, DbError> {
    Ok(conn
        .row(
            "SELECT 1 FROM sessions WHERE sid = ?1 AND ended_at IS NULL AND expires_at > ?2",
            args![sid, now],
            |_| Ok(()),
        )?
        .is_some())
}

pub fn end(conn: &Tx<'_>, id_hash: &TokenHash, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE sessions SET ended_at = ?2 WHERE id_hash = ?1 AND ended_at IS NULL",
        args![id_hash.as_bytes(), now],
    )?;
    Ok(n == 1)
}

/// An authorization request parked while the user signs in.
#[derive(Debug, Clone)]
pub struct LoginRequest {
    pub csrf_hash: TokenHash,
    pub browser_hash: TokenHash,
    pub params: String,
}

pub struct NewLoginRequest<'a> {
    pub id_hash: &'a TokenHash,
    pub csrf_hash: &'a TokenHash,
    pub browser_hash: &'a TokenHash,
    pub params: &'a str,
    pub now: i64,
    pub expires_at: i64,
}

pub fn create_login_request(conn: &Tx<'_>, r: &NewLoginRequest<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO login_requests (id_hash, csrf_hash, browser_hash, params, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        args![
            r.id_hash.as_bytes(),
            r.csrf_hash.as_bytes(),
            r.browser_hash.as_bytes(),
            r.params,
            r.now,
            r.expires_at
        ],
    )?;
    Ok(())
}

fn hash_col(r: &Row<'_>, i: usize) -> Result<TokenHash, DbError> {
    let bytes: Vec<u8> = r.get(i)?;
    TokenHash::from_slice(&bytes).ok_or_else(|| DbError::Corrupt(format!("column {i} is not a hash")))
}

/// A pending request that is neither used nor expired.
pub fn find_login_request(conn: &Tx<'_>, id_hash: &TokenHash, now: i64) -> Result<Option<LoginRequest>, DbError> {
    conn.row(
        "SELECT csrf_hash, browser_hash, params FROM login_requests
             WHERE id_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
        args![id_hash.as_bytes(), now],
        |r| {
            Ok(LoginRequest {
                csrf_hash: hash_col(r, 0)?,
                browser_hash: hash_col(r, 1)?,
                params: r.get(2)?,
            })
        },
    )
}

/// Takes a pending request; `Lost` when another submission got there first. The row
/// goes: nothing reads a used request again, and at some 650 bytes with its indexes
/// it was the largest row a sign-in left behind until its expiry.
pub fn consume_login_request(conn: &Tx<'_>, id_hash: &TokenHash, now: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "DELETE FROM login_requests WHERE id_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
        args![id_hash.as_bytes(), now],
    )?;
    Ok(Claim::of(n))
}

/// A live session as the account and admin pages list it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionInfo {
    pub sid: String,
    pub user_id: i64,
    pub created_at: i64,
    pub auth_time: i64,
    pub expires_at: i64,
    pub amr: String,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
}

impl SessionInfo {
    pub fn as_session(&self) -> Session {
        Session {
            sid: self.sid.clone(),
            user_id: self.user_id,
            auth_time: self.auth_time,
            expires_at: self.expires_at,
            amr: self.amr.clone(),
            reauth_at: None,
        }
    }
}

/// The `sid` of every live session of a user, however many (ending them all must
/// not stop at the page the account page lists).
pub fn live_sids(conn: &Tx<'_>, user_id: i64, now: i64) -> Result<Vec<String>, DbError> {
    conn.rows(
        "SELECT sid FROM sessions WHERE user_id = ?1 AND ended_at IS NULL AND expires_at > ?2",
        args![user_id, now],
        |r| r.get(0),
    )
}

/// A user's live sessions, newest first.
pub fn list_for_user(conn: &Tx<'_>, user_id: i64, now: i64) -> Result<Vec<SessionInfo>, DbError> {
    conn.rows(
        "SELECT sid, user_id, created_at, auth_time, expires_at, amr, user_agent, ip FROM sessions
         WHERE user_id = ?1 AND ended_at IS NULL AND expires_at > ?2 ORDER BY created_at DESC LIMIT 200",
        args![user_id, now],
        |r| {
            Ok(SessionInfo {
                sid: r.get(0)?,
                user_id: r.get(1)?,
                created_at: r.get(2)?,
                auth_time: r.get(3)?,
                expires_at: r.get(4)?,
                amr: r.get(5)?,
                user_agent: r.get(6)?,
                ip: r.get(7)?,
            })
        },
    )
}

/// Live sessions across all users (the dashboard).
pub fn count_active(conn: &Tx<'_>, now: i64) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM sessions WHERE ended_at IS NULL AND expires_at > ?1",
        args![now],
        |r| r.get(0),
    )
}

/// Marks a session as opened through an upstream provider, for the upstream's
/// back-channel logout.
pub fn set_federated(
    conn: &Tx<'_>,
    id_hash: &TokenHash,
    provider: &str,
    subject: &str,
    upstream_sid: Option<&str>,
) -> Result<(), DbError> {
    conn.exec(
        "UPDATE sessions SET fed_provider = ?2, fed_subject = ?3, fed_sid = ?4 WHERE id_hash = ?1",
        args![id_hash.as_bytes(), provider, subject, upstream_sid],
    )?;
    Ok(())
}

/// The live sessions an upstream's logout token names (OpenID Connect Back-Channel
/// Logout 1.0 §2.7): those with its `sid` when it has one (and, with a `sub` too,
/// that subject), else every session of the subject, opened by `opened_by` (a token
/// replayed later ends nothing newer); with the local user of each.
pub fn federated(
    conn: &Tx<'_>,
    provider: &str,
    subject: Option<&str>,
    upstream_sid: Option<&str>,
    now: i64,
    opened_by: i64,
) -> Result<Vec<(String, i64)>, DbError> {
    conn.rows(
        "SELECT sid, user_id FROM sessions
         WHERE fed_provider = ?1 AND (?2 IS NULL OR fed_subject = ?2) AND (?3 IS NULL OR fed_sid = ?3)
           AND ended_at IS NULL AND expires_at > ?4 AND created_at <= ?5
         ORDER BY created_at LIMIT 1000",
        args![provider, subject, upstream_sid, now, opened_by],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}
