//! Authorization codes, grants (token families), refresh tokens and revocation.
//! Single-use values are consumed by one conditional UPDATE, so of two parallel
//! redemptions exactly one wins.

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

pub struct NewCode<'a> {
    pub code_hash: &'a TokenHash,
    pub grant_id: &'a str,
    pub client_id: &'a str,
    pub user_id: i64,
    pub redirect_uri: &'a str,
    pub scope: &'a str,
    pub nonce: Option<&'a str>,
    pub code_challenge: Option<&'a str>,
    pub claims_request: Option<&'a str>,
    pub sid: &'a str,
    pub auth_time: i64,
    pub amr: &'a str,
    pub now: i64,
    pub expires_at: i64,
    /// RFC 8707 resources the request named (space-separated), if any.
    pub resource: Option<&'a str>,
    /// RFC 9449 §10: the JWK thumbprint the code is bound to (`dpop_jkt`).
    pub dpop_jkt: Option<&'a str>,
}

pub fn insert_code(conn: &Tx<'_>, c: &NewCode<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO auth_codes (code_hash, grant_id, client_id, user_id, redirect_uri, scope, nonce,
                                 code_challenge, sid, auth_time, created_at, expires_at, claims_request, amr,
                                 resource, dpop_jkt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        args![
            c.code_hash.as_bytes(),
            c.grant_id,
            c.client_id,
            c.user_id,
            c.redirect_uri,
            c.scope,
            c.nonce,
            c.code_challenge,
            c.sid,
            c.auth_time,
            c.now,
            c.expires_at,
            c.claims_request,
            c.amr,
            c.resource,
            c.dpop_jkt
        ],
    )?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct Code {
    pub grant_id: String,
    pub client_id: String,
    pub user_id: i64,
    pub redirect_uri: String,
    pub scope: String,
    pub nonce: Option<String>,
    pub code_challenge: Option<String>,
    pub sid: String,
    pub auth_time: i64,
    pub expires_at: i64,
    pub claims_request: Option<String>,
    pub amr: String,
    pub resource: Option<String>,
    pub dpop_jkt: Option<String>,
}

/// The outcome of presenting a single-use value.
#[derive(Debug)]
pub enum Consumed<T> {
    /// First use: the caller now owns it.
    Fresh(T),
    /// Used before: the grant it created (RFC 6749 §4.1.2 asks to revoke its tokens).
    Replayed {
        grant_id: String,
    },
    Unknown,
}

pub fn consume_code(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<Consumed<Code>, DbError> {
    let fresh = conn.row(
        "UPDATE auth_codes SET used_at = ?2 WHERE code_hash = ?1 AND used_at IS NULL
         RETURNING grant_id, client_id, user_id, redirect_uri, scope, nonce, code_challenge, sid, auth_time,
                   expires_at, claims_request, amr, resource, dpop_jkt",
        args![hash.as_bytes(), now],
        |r| {
            Ok(Code {
                grant_id: r.get(0)?,
                client_id: r.get(1)?,
                user_id: r.get(2)?,
                redirect_uri: r.get(3)?,
                scope: r.get(4)?,
                nonce: r.get(5)?,
                code_challenge: r.get(6)?,
                sid: r.get(7)?,
                auth_time: r.get(8)?,
                expires_at: r.get(9)?,
                claims_request: r.get(10)?,
                amr: r.get(11)?,
                resource: r.get(12)?,
                dpop_jkt: r.get(13)?,
            })
        },
    )?;
    if let Some(code) = fresh {
        return Ok(Consumed::Fresh(code));
    }
    let used = conn.row(
        "SELECT grant_id FROM auth_codes WHERE code_hash = ?1",
        args![hash.as_bytes()],
        |r| r.get(0),
    )?;
    Ok(match used {
        Some(grant_id) => Consumed::Replayed { grant_id },
        None => Consumed::Unknown,
    })
}

#[derive(Debug, Clone)]
pub struct Grant {
    pub id: String,
    pub client_id: String,
    pub user_id: Option<i64>,
    pub scope: String,
    pub sid: Option<String>,
    pub auth_time: Option<i64>,
    pub nonce: Option<String>,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    pub claims_request: Option<String>,
    pub amr: Option<String>,
    /// When the grant was opened (the sign-in or code exchange); its absolute lifetime
    /// counts from here.
    pub created_at: i64,
    /// RFC 8707 resources its tokens are for (space-separated); `None`: the client.
    pub resource: Option<String>,
    /// RFC 9449 §5: the JWK thumbprint its refresh tokens are bound to.
    pub dpop_jkt: Option<String>,
}

pub fn insert_grant(conn: &Tx<'_>, g: &Grant, now: i64) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO grants (id, client_id, user_id, scope, sid, auth_time, nonce, created_at, expires_at, claims_request, amr,
                             resource, dpop_jkt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        args![
        g.id,
        g.client_id,
        g.user_id,
        g.scope,
        g.sid,
        g.auth_time,
        g.nonce,
        now,
        g.expires_at,
        g.claims_request,
        g.amr,
        g.resource,
        g.dpop_jkt
        ],
    )?;
    Ok(())
}

const GRANT_COLUMNS: &str =
    "id, client_id, user_id, scope, sid, auth_time, nonce, expires_at, revoked_at, claims_request, amr, created_at,
     resource, dpop_jkt";

fn grant_from_row(r: &Row<'_>) -> Result<Grant, DbError> {
    Ok(Grant {
        id: r.get(0)?,
        client_id: r.get(1)?,
        user_id: r.get(2)?,
        scope: r.get(3)?,
        sid: r.get(4)?,
        auth_time: r.get(5)?,
        nonce: r.get(6)?,
        expires_at: r.get(7)?,
        revoked_at: r.get(8)?,
        claims_request: r.get(9)?,
        amr: r.get(10)?,
        created_at: r.get(11)?,
        resource: r.get(12)?,
        dpop_jkt: r.get(13)?,
    })
}

pub fn find_grant(conn: &Tx<'_>, id: &str) -> Result<Option<Grant>, DbError> {
    let sql = format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = ?1");
    conn.row(&sql, args![id], grant_from_row)
}

/// Revokes a grant and with it every access and refresh token of the family.
pub fn revoke_grant(conn: &Tx<'_>, id: &str, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE grants SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        args![id, now],
    )?;
    Ok(n == 1)
}

pub fn insert_refresh(
    conn: &Tx<'_>,
    hash: &TokenHash,
    grant_id: &str,
    scope: &str,
    now: i64,
    expires_at: i64,
) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO refresh_tokens (token_hash, grant_id, scope, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        args![hash.as_bytes(), grant_id, scope, now, expires_at],
    )?;
    conn.exec(
        "UPDATE grants SET expires_at = CASE WHEN expires_at < ?2 THEN ?2 ELSE expires_at END WHERE id = ?1",
        args![grant_id, expires_at],
    )?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct Refresh {
    pub grant: Grant,
    pub scope: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

/// Takes the lock on the grant behind a refresh token for the rest of the transaction
/// (a no-op write): refreshes of one family then run one after another, on every node,
/// so that the reuse and retry rules see each other's successors. SQLite's single
/// writer serializes them anyway, so there it is skipped.
pub fn lock_family(conn: &Tx<'_>, hash: &TokenHash) -> Result<(), DbError> {
    if conn.writes_one_at_a_time() {
        return Ok(());
    }
    conn.exec(
        "UPDATE grants SET revoked_at = revoked_at
         WHERE id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = ?1)",
        args![hash.as_bytes()],
    )?;
    Ok(())
}

/// A refresh token with its grant, looked up without using it (refresh, introspection,
/// revocation).
pub fn find_refresh(conn: &Tx<'_>, hash: &TokenHash) -> Result<Option<Refresh>, DbError> {
    let row = conn.row(
        "SELECT grant_id, scope, created_at, expires_at, used_at FROM refresh_tokens WHERE token_hash = ?1",
        args![hash.as_bytes()],
        |r| Ok((r.get::<String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    let Some((grant_id, scope, created_at, expires_at, used_at)) = row else {
        return Ok(None);
    };
    // Read statement by statement: a grant deleted (purged, its user or client
    // removed) since the token was read leaves a token of nothing.
    let Some(grant) = find_grant(conn, &grant_id)? else {
        return Ok(None);
    };
    Ok(Some(Refresh {
        grant,
        scope,
        created_at,
        expires_at,
        used_at,
    }))
}

/// `used_at` of a refresh token that was superseded before anyone used it: far
/// outside any retry window, so presenting it is always reuse.
pub const SUPERSEDED: i64 = 0;

/// Before a retried refresh mints a new successor, the earlier successors die, so at
/// most one branch of the family lives; whoever presents one of them later is caught
/// as reusing it.
pub fn retire_live_refresh(conn: &Tx<'_>, grant_id: &str) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE refresh_tokens SET used_at = ?2 WHERE grant_id = ?1 AND used_at IS NULL",
        args![grant_id, SUPERSEDED],
    )
}

/// Revokes the user's grants, all of them or all but those of session `keep_sid`.
pub fn revoke_user_grants(conn: &Tx<'_>, user_id: i64, keep_sid: Option<&str>, now: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE grants SET revoked_at = ?3
         WHERE user_id = ?1 AND revoked_at IS NULL AND (?2 IS NULL OR sid IS NULL OR sid <> ?2)",
        args![user_id, keep_sid, now],
    )
}

/// Revokes the user grants of clients with allowed groups whose user is no longer in
/// any of them (after a membership change or a change of a client's groups); narrowed
/// to one user or one client when given.
pub fn revoke_outside_allowed_groups(
    conn: &Tx<'_>,
    user_id: Option<i64>,
    client_id: Option<&str>,
    now: i64,
) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE grants SET revoked_at = ?3
         WHERE revoked_at IS NULL AND user_id IS NOT NULL
           AND (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR client_id = ?2)
           AND EXISTS (SELECT 1 FROM client_allowed_groups a WHERE a.client_id = grants.client_id)
           AND NOT EXISTS (
               SELECT 1 FROM client_allowed_groups a JOIN user_groups ug ON ug.group_id = a.group_id
               WHERE a.client_id = grants.client_id AND ug.user_id = grants.user_id)",
        args![user_id, client_id, now],
    )
}

/// Marks a refresh token used; `false` when it already was (one UPDATE, so of two
/// parallel uses exactly one wins).
pub fn use_refresh(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<Claim, DbError> {
    let updated = conn.exec(
        "UPDATE refresh_tokens SET used_at = ?2 WHERE token_hash = ?1 AND used_at IS NULL",
        args![hash.as_bytes(), now],
    )?;
    Ok(Claim::of(updated))
}

/// Whether an access token is still good as far as the database knows: its grant is
/// neither revoked nor its user disabled, and the token itself was not revoked.
pub fn access_token_active(conn: &Tx<'_>, grant_id: &str, jti: &str) -> Result<bool, DbError> {
    let active = conn.row(
        "SELECT g.revoked_at IS NULL
                AND coalesce(u.disabled, 0) = 0
                AND NOT EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = ?2)
         FROM grants g LEFT JOIN users u ON u.id = g.user_id WHERE g.id = ?1",
        args![grant_id, jti],
        |r| r.get::<bool>(0),
    )?;
    Ok(active.unwrap_or(false))
}

/// Revokes one access token (RFC 7009) until it would have expired anyway.
pub fn revoke_jti(conn: &Tx<'_>, jti: &str, expires_at: i64) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO revoked_tokens (jti, expires_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        args![jti, expires_at],
    )?;
    Ok(())
}
