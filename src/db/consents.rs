//! Remembered consent: which scopes, and which claims asked for by name, a user
//! approved for a client.

use super::sql::args;
use super::{DbError, Tx};
use crate::domain::Scope;

/// What a user approved for a client: space-separated scopes and claim names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consent {
    pub scope: String,
    pub claims: String,
}

pub fn find(conn: &Tx<'_>, user_id: i64, client_id: &str) -> Result<Option<Consent>, DbError> {
    conn.row(
        "SELECT scope, claims FROM consents WHERE user_id = ?1 AND client_id = ?2",
        args![user_id, client_id],
        |r| {
            Ok(Consent {
                scope: r.get(0)?,
                claims: r.get(1)?,
            })
        },
    )
}

/// `old` with the words of `new` it lacks appended.
fn union(old: &str, new: &str) -> String {
    let mut words: Vec<&str> = old.split(' ').filter(|w| !w.is_empty()).collect();
    for w in new.split(' ').filter(|w| !w.is_empty()) {
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words.join(" ")
}

/// Records approval of `scope` and of the claims named in `claims`, adding to what
/// was approved before.
pub fn grant(conn: &Tx<'_>, user_id: i64, client_id: &str, scope: &str, claims: &str, now: i64) -> Result<(), DbError> {
    // The union is computed here, so the row is locked (made, if it is the first
    // consent) before it is read: two nodes recording consents at once then take
    // turns and neither overwrites what the other added. A no-op upsert locks the row
    // on both engines.
    conn.exec(
        "INSERT INTO consents (user_id, client_id, scope, claims, granted_at) VALUES (?1, ?2, '', '', ?3)
         ON CONFLICT (user_id, client_id) DO UPDATE SET granted_at = consents.granted_at",
        args![user_id, client_id, now],
    )?;
    let before = find(conn, user_id, client_id)?.unwrap_or_default();
    let scope = Scope::parse(scope).unwrap_or_default().to_string();
    conn.exec(
        "UPDATE consents SET scope = ?3, claims = ?4, granted_at = ?5 WHERE user_id = ?1 AND client_id = ?2",
        args![
            user_id,
            client_id,
            union(&before.scope, &scope),
            union(&before.claims, claims),
            now
        ],
    )?;
    Ok(())
}

/// Withdraws consent and revokes every grant the client holds for the user.
pub fn revoke(conn: &Tx<'_>, user_id: i64, client_id: &str, now: i64) -> Result<bool, DbError> {
    let n = conn.exec(
        "DELETE FROM consents WHERE user_id = ?1 AND client_id = ?2",
        args![user_id, client_id],
    )?;
    conn.exec(
        "UPDATE grants SET revoked_at = ?3 WHERE user_id = ?1 AND client_id = ?2 AND revoked_at IS NULL",
        args![user_id, client_id, now],
    )?;
    Ok(n == 1)
}

/// Client ids and scopes a user has approved.
pub fn list_for_user(conn: &Tx<'_>, user_id: i64) -> Result<Vec<(String, String)>, DbError> {
    conn.rows(
        "SELECT client_id, scope FROM consents WHERE user_id = ?1 ORDER BY client_id",
        args![user_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// A consent as the account page lists it.
#[derive(Debug, Clone)]
pub struct Granted {
    pub client_id: String,
    pub client_name: String,
    pub scope: String,
    pub granted_at: i64,
}

/// The user's consents with the names of their clients, most recent first.
pub fn list_named(conn: &Tx<'_>, user_id: i64) -> Result<Vec<Granted>, DbError> {
    conn.rows(
        "SELECT k.client_id, c.name, k.scope, k.granted_at FROM consents k JOIN clients c ON c.client_id = k.client_id
         WHERE k.user_id = ?1 ORDER BY k.granted_at DESC",
        args![user_id],
        |r| {
            Ok(Granted {
                client_id: r.get(0)?,
                client_name: r.get(1)?,
                scope: r.get(2)?,
                granted_at: r.get(3)?,
            })
        },
    )
}
