//! Ending a session with a Back-Channel Logout queued for each client that must be
//! told, and the deliveries waiting to be sent.

use super::sql::args;
use super::{DbError, Tx};

/// A client to notify about the end of a session.
#[derive(Debug, Clone)]
pub struct Audience {
    pub client_id: String,
    pub uri: String,
    pub wants_sid: bool,
    pub alg: String,
}

/// Clients with a back-channel endpoint that hold a grant from session `sid`.
pub fn audience_of_session(conn: &Tx<'_>, sid: &str) -> Result<Vec<Audience>, DbError> {
    conn.rows(
        "SELECT DISTINCT c.client_id, c.backchannel_logout_uri, c.backchannel_logout_session_required, c.id_token_alg
         FROM grants g JOIN clients c ON c.client_id = g.client_id
         WHERE g.sid = ?1 AND c.backchannel_logout_uri IS NOT NULL",
        args![sid],
        |r| {
            Ok(Audience {
                client_id: r.get(0)?,
                uri: r.get(1)?,
                wants_sid: r.get(2)?,
                alg: r.get(3)?,
            })
        },
    )
}

/// Front-Channel Logout 1.0 §2: the `frontchannel_logout_uri` (and whether it wants
/// `iss` and `sid`) of each client that holds a grant from session `sid`, by client id.
pub fn frontchannel_of_session(conn: &Tx<'_>, sid: &str) -> Result<Vec<(String, bool)>, DbError> {
    conn.rows(
        "SELECT DISTINCT c.client_id, c.frontchannel_logout_uri, c.frontchannel_logout_session_required
         FROM grants g JOIN clients c ON c.client_id = g.client_id
         WHERE g.sid = ?1 AND c.frontchannel_logout_uri IS NOT NULL
         ORDER BY c.client_id",
        args![sid],
        |r| Ok((r.get::<String>(1)?, r.get::<bool>(2)?)),
    )
}

/// Ends the grants of a session that were not granted for offline use.
pub fn revoke_session_grants(conn: &Tx<'_>, sid: &str, now: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE grants SET revoked_at = ?2
         WHERE sid = ?1 AND revoked_at IS NULL AND ' ' || scope || ' ' NOT LIKE '% offline_access %'",
        args![sid, now],
    )
}

/// A session's end to tell one client about.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: i64,
    pub audience: Audience,
    pub sub: Option<String>,
    pub sid: String,
    pub attempts: i64,
}

pub fn enqueue(
    conn: &Tx<'_>,
    a: &Audience,
    sub: Option<&str>,
    sid: &str,
    now: i64,
    expires_at: i64,
) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO logout_deliveries (client_id, uri, sub, sid, wants_sid, alg, next_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        args![a.client_id, a.uri, sub, sid, a.wants_sid, a.alg, now, expires_at],
    )?;
    Ok(())
}

/// Claims up to `limit` deliveries that are due, moving each one's `next_at` to
/// `lease_until`: another node's deliverer skips them meanwhile, and if this node dies
/// before recording the outcome they come due again when the lease runs out. The
/// outer `next_at <= ?1` is re-checked on the locked row (PostgreSQL re-evaluates it
/// after waiting for a parallel claim), so two claimers never get the same delivery;
/// one that met rows a parallel claim took returns fewer, and the rest wait a pass.
pub fn claim_due(conn: &Tx<'_>, now: i64, lease_until: i64, limit: i64) -> Result<Vec<Delivery>, DbError> {
    conn.rows(
        "UPDATE logout_deliveries SET next_at = ?3
         WHERE next_at <= ?1 AND expires_at > ?1
           AND id IN (SELECT id FROM logout_deliveries WHERE next_at <= ?1 AND expires_at > ?1
                      ORDER BY next_at LIMIT ?2)
         RETURNING id, client_id, uri, wants_sid, alg, sub, sid, attempts",
        args![now, limit, lease_until],
        |r| {
            Ok(Delivery {
                id: r.get(0)?,
                audience: Audience {
                    client_id: r.get(1)?,
                    uri: r.get(2)?,
                    wants_sid: r.get(3)?,
                    alg: r.get(4)?,
                },
                sub: r.get(5)?,
                sid: r.get(6)?,
                attempts: r.get(7)?,
            })
        },
    )
}

pub fn delivered(conn: &Tx<'_>, id: i64) -> Result<(), DbError> {
    conn.exec("DELETE FROM logout_deliveries WHERE id = ?1", args![id])?;
    Ok(())
}

pub fn retry_later(conn: &Tx<'_>, id: i64, next_at: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE logout_deliveries SET attempts = attempts + 1, next_at = ?2 WHERE id = ?1",
        args![id, next_at],
    )?;
    Ok(())
}

/// Ends every live session of a user with this sid; returns whether one was live.
pub fn end_session_by_sid(conn: &Tx<'_>, sid: &str, now: i64) -> Result<bool, DbError> {
    Ok(conn.exec(
        "UPDATE sessions SET ended_at = ?2 WHERE sid = ?1 AND ended_at IS NULL",
        args![sid, now],
    )? == 1)
}

/// How long undelivered logout tokens are retried.
const DELIVERY_WINDOW: i64 = 24 * 3600;

/// Ends session `sid` of user `uid` inside the caller's transaction (the caller wakes
/// the deliverer after it commits): the session ends, its grants not for offline use
/// are revoked and each client with a back-channel endpoint is queued a logout. The
/// token itself is signed when it is sent, so every retry carries a fresh one.
pub fn end_session(conn: &Tx<'_>, sid: &str, uid: i64, now: i64) -> Result<(), DbError> {
    let audience = audience_of_session(conn, sid)?;
    let sub = super::users::find_by_id(conn, uid)?.map(|u| u.sub);
    end_session_by_sid(conn, sid, now)?;
    revoke_session_grants(conn, sid, now)?;
    for a in &audience {
        enqueue(conn, a, sub.as_deref(), sid, now, now + DELIVERY_WINDOW)?;
    }
    Ok(())
}

/// Ends every live session of a user inside the caller's transaction, as `end_session`.
pub fn end_all_sessions(conn: &Tx<'_>, uid: i64, now: i64) -> Result<usize, DbError> {
    let live = super::sessions::live_sids(conn, uid, now)?;
    for sid in &live {
        end_session(conn, sid, uid, now)?;
    }
    Ok(live.len())
}
