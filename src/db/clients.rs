//! Relying parties: registration, lookup, secret rotation and removal.

use rusqlite::{params, Connection, Row};

use super::{optional, DbError};
use crate::crypto::TokenHash;

#[derive(Debug, Clone)]
pub struct Client {
    pub client_id: String,
    pub name: String,
    /// SHA-256 of the secret; `None` for a public client.
    pub secret_hash: Option<TokenHash>,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub created_at: i64,
}

impl Client {
    pub fn is_public(&self) -> bool {
        self.secret_hash.is_none()
    }
}

const COLUMNS: &str = "client_id, name, secret_hash, redirect_uris, post_logout_redirect_uris, created_at";

fn json_list(text: String) -> rusqlite::Result<Vec<String>> {
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e)))
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<Client> {
    let secret: Option<Vec<u8>> = r.get(2)?;
    Ok(Client {
        client_id: r.get(0)?,
        name: r.get(1)?,
        secret_hash: secret.as_deref().and_then(TokenHash::from_slice),
        redirect_uris: json_list(r.get(3)?)?,
        post_logout_redirect_uris: json_list(r.get(4)?)?,
        created_at: r.get(5)?,
    })
}

fn to_json(list: &[String]) -> String {
    serde_json::Value::from(list.to_vec()).to_string()
}

/// Registers a client; `DbError::Conflict` when the id is taken.
pub fn insert(conn: &Connection, client: &Client) -> Result<(), DbError> {
    conn.prepare_cached(
        "INSERT INTO clients (client_id, name, secret_hash, redirect_uris, post_logout_redirect_uris, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(params![
        client.client_id,
        client.name,
        client.secret_hash.as_ref().map(|h| h.as_bytes().to_vec()),
        to_json(&client.redirect_uris),
        to_json(&client.post_logout_redirect_uris),
        client.created_at,
    ])?;
    Ok(())
}

pub fn find(conn: &Connection, client_id: &str) -> Result<Option<Client>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM clients WHERE client_id = ?1");
    optional(conn.prepare_cached(&sql)?.query_row([client_id], from_row))
}

pub fn list(conn: &Connection) -> Result<Vec<Client>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM clients ORDER BY client_id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Replaces a confidential client's secret; `false` when there is no such client or
/// it is public (a public client has no secret to rotate).
pub fn set_secret(conn: &Connection, client_id: &str, hash: &TokenHash, now: i64) -> Result<bool, DbError> {
    let n = conn.execute(
        "UPDATE clients SET secret_hash = ?2, updated_at = ?3 WHERE client_id = ?1 AND secret_hash IS NOT NULL",
        params![client_id, hash.as_bytes().to_vec(), now],
    )?;
    Ok(n == 1)
}

/// Deletes a client and, through foreign keys, its codes, grants and tokens.
pub fn delete(conn: &Connection, client_id: &str) -> Result<bool, DbError> {
    Ok(conn.execute("DELETE FROM clients WHERE client_id = ?1", [client_id])? == 1)
}
