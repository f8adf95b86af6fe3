//! Registered resource servers (RFC 8707).

use super::sql::{args, Row};
use super::{DbError, Tx};

/// A resource server access tokens may be restricted to (`aud`, RFC 8707 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// An absolute URI without a fragment (RFC 8707 §2).
    pub uri: String,
    /// Scopes the resource accepts; empty: any scope of the request.
    pub scopes: Vec<String>,
    pub created_at: i64,
}

fn from_row(r: &Row<'_>) -> Result<Resource, DbError> {
    let scopes: String = r.get(1)?;
    Ok(Resource {
        uri: r.get(0)?,
        scopes: scopes
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        created_at: r.get(2)?,
    })
}

/// Registers a resource; `DbError::Conflict` when its URI is registered already.
pub fn insert(conn: &Tx<'_>, r: &Resource) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO resources (uri, scopes, created_at) VALUES (?1, ?2, ?3)",
        args![r.uri.as_str(), r.scopes.join(" "), r.created_at],
    )?;
    Ok(())
}

pub fn find(conn: &Tx<'_>, uri: &str) -> Result<Option<Resource>, DbError> {
    conn.row(
        "SELECT uri, scopes, created_at FROM resources WHERE uri = ?1",
        args![uri],
        from_row,
    )
}

/// The registered resources among `uris`, in the order asked (unknown ones left out).
pub fn find_all(conn: &Tx<'_>, uris: &[String]) -> Result<Vec<Resource>, DbError> {
    let mut found = Vec::with_capacity(uris.len());
    for uri in uris {
        if let Some(r) = find(conn, uri)? {
            found.push(r);
        }
    }
    Ok(found)
}

/// Every registered resource, by URI.
pub fn list(conn: &Tx<'_>) -> Result<Vec<Resource>, DbError> {
    conn.rows(
        "SELECT uri, scopes, created_at FROM resources ORDER BY uri",
        args![],
        from_row,
    )
}

/// Removes a resource; whether there was one.
pub fn delete(conn: &Tx<'_>, uri: &str) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM resources WHERE uri = ?1", args![uri])? > 0)
}
