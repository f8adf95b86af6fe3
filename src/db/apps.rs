//! Applications protected through forward-auth at a reverse proxy, matched by host,
//! with the groups allowed through.

use super::sql::{args, Row};
use super::{DbError, Tx};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub id: String,
    /// The origin as registered (`https://app.example.org`).
    pub url: String,
    /// Lower case, with the port when it is not the scheme's default.
    pub host: String,
    pub require_mfa: bool,
    pub header_prefix: String,
    /// Group names, sorted; empty lets every signed-in user through.
    pub allowed_groups: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, url, host, require_mfa, header_prefix, created_at, updated_at";

fn from_row(r: &Row<'_>) -> Result<App, DbError> {
    Ok(App {
        id: r.get(0)?,
        url: r.get(1)?,
        host: r.get(2)?,
        require_mfa: r.get(3)?,
        header_prefix: r.get(4)?,
        allowed_groups: Vec::new(),
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

fn with_groups(conn: &Tx<'_>, mut app: App) -> Result<App, DbError> {
    app.allowed_groups = conn.rows(
        "SELECT g.name FROM app_allowed_groups a JOIN groups g ON g.id = a.group_id
         WHERE a.app_id = ?1 ORDER BY g.name",
        args![app.id.as_str()],
        |r| r.get(0),
    )?;
    Ok(app)
}

/// Registers an app with its allowed groups (each must exist: the caller checks).
/// `DbError::Conflict` when the id or the host is taken.
pub fn insert(conn: &Tx<'_>, app: &App) -> Result<(), DbError> {
    conn.exec(
        &format!("INSERT INTO apps ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        args![
            app.id.as_str(),
            app.url.as_str(),
            app.host.as_str(),
            app.require_mfa,
            app.header_prefix.as_str(),
            app.created_at,
            app.updated_at
        ],
    )?;
    for name in &app.allowed_groups {
        conn.exec(
            "INSERT INTO app_allowed_groups (app_id, group_id) SELECT ?1, id FROM groups WHERE name = ?2",
            args![app.id.as_str(), name.as_str()],
        )?;
    }
    Ok(())
}

pub fn find(conn: &Tx<'_>, id: &str) -> Result<Option<App>, DbError> {
    let app = conn.row(
        &format!("SELECT {COLUMNS} FROM apps WHERE id = ?1"),
        args![id],
        from_row,
    )?;
    app.map(|a| with_groups(conn, a)).transpose()
}

/// The app registered for `host` (already lower case, default port left out).
pub fn find_by_host(conn: &Tx<'_>, host: &str) -> Result<Option<App>, DbError> {
    let app = conn.row(
        &format!("SELECT {COLUMNS} FROM apps WHERE host = ?1"),
        args![host],
        from_row,
    )?;
    app.map(|a| with_groups(conn, a)).transpose()
}

pub fn list(conn: &Tx<'_>) -> Result<Vec<App>, DbError> {
    let apps = conn.rows(&format!("SELECT {COLUMNS} FROM apps ORDER BY id"), args![], from_row)?;
    apps.into_iter().map(|a| with_groups(conn, a)).collect()
}

/// Removes an app; its allowed groups and access records go with it.
pub fn delete(conn: &Tx<'_>, id: &str) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM apps WHERE id = ?1", args![id])? == 1)
}

/// The apps that admit only groups including `name`.
pub fn requiring_group(conn: &Tx<'_>, name: &str) -> Result<Vec<String>, DbError> {
    conn.rows(
        "SELECT a.app_id FROM app_allowed_groups a JOIN groups g ON g.id = a.group_id
         WHERE g.name = ?1 ORDER BY a.app_id",
        args![name],
        |r| r.get(0),
    )
}
