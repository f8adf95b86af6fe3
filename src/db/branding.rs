//! Branding: the one row of the organisation's name, logo, accent colour and extra
//! stylesheet, and the applications' own logos. What is stored has been checked
//! (`branding::`); this module only keeps it.

use super::sql::args;
use super::{DbError, Tx};

/// The row without the logo's bytes (read on every cache refresh).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub org_name: Option<String>,
    pub accent_color: Option<String>,
    pub stylesheet: Option<String>,
    /// The logo's media type, when there is one.
    pub logo_type: Option<String>,
    pub version: i64,
}

/// A change to the row: `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Default)]
pub struct Change<'a> {
    pub org_name: Option<Option<&'a str>>,
    pub accent_color: Option<Option<&'a str>>,
    pub stylesheet: Option<Option<&'a str>>,
    /// The logo's bytes and media type.
    pub logo: Option<Option<(&'a [u8], &'a str)>>,
}

pub fn get(conn: &Tx<'_>) -> Result<Settings, DbError> {
    let row = conn.row(
        "SELECT org_name, accent_color, stylesheet, logo_type, version FROM branding WHERE id = 1",
        args![],
        |r| {
            Ok(Settings {
                org_name: r.get(0)?,
                accent_color: r.get(1)?,
                stylesheet: r.get(2)?,
                logo_type: r.get(3)?,
                version: r.get(4)?,
            })
        },
    )?;
    Ok(row.unwrap_or_default())
}

/// Applies `change` (creating the row on first use) and returns the new version.
pub fn update(conn: &Tx<'_>, change: &Change<'_>, now: i64) -> Result<i64, DbError> {
    conn.exec(
        "INSERT INTO branding (id, version, updated_at) VALUES (1, 0, ?1) ON CONFLICT (id) DO NOTHING",
        args![now],
    )?;
    if let Some(v) = change.org_name {
        conn.exec("UPDATE branding SET org_name = ?1 WHERE id = 1", args![v])?;
    }
    if let Some(v) = change.accent_color {
        conn.exec("UPDATE branding SET accent_color = ?1 WHERE id = 1", args![v])?;
    }
    if let Some(v) = change.stylesheet {
        conn.exec("UPDATE branding SET stylesheet = ?1 WHERE id = 1", args![v])?;
    }
    if let Some(v) = change.logo {
        let (bytes, kind) = v.map_or((None, None), |(b, k)| (Some(b), Some(k)));
        conn.exec(
            "UPDATE branding SET logo = ?1, logo_type = ?2 WHERE id = 1",
            args![bytes, kind],
        )?;
    }
    conn.one(
        "UPDATE branding SET version = version + 1, updated_at = ?1 WHERE id = 1 RETURNING version",
        args![now],
        |r| r.get(0),
    )
}

/// The organisation's logo: its bytes and media type.
pub fn logo(conn: &Tx<'_>) -> Result<Option<(Vec<u8>, String)>, DbError> {
    let row = conn.row(
        "SELECT logo, logo_type FROM branding WHERE id = 1 AND logo IS NOT NULL",
        args![],
        |r| Ok((r.get::<Vec<u8>>(0)?, r.get::<String>(1)?)),
    )?;
    Ok(row)
}

/// Every application with a logo, and when it was set (the cached resource's version).
pub fn client_logo_versions(conn: &Tx<'_>) -> Result<Vec<(String, i64)>, DbError> {
    conn.rows("SELECT client_id, updated_at FROM client_logos", args![], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

pub fn client_logo(conn: &Tx<'_>, client_id: &str) -> Result<Option<(Vec<u8>, String)>, DbError> {
    conn.row(
        "SELECT logo, logo_type FROM client_logos WHERE client_id = ?1",
        args![client_id],
        |r| Ok((r.get::<Vec<u8>>(0)?, r.get::<String>(1)?)),
    )
}

/// Sets (or with `None` removes) an application's logo; `false` when there is no such
/// application.
pub fn set_client_logo(conn: &Tx<'_>, client_id: &str, logo: Option<(&[u8], &str)>, now: i64) -> Result<bool, DbError> {
    let known = conn
        .row("SELECT 1 FROM clients WHERE client_id = ?1", args![client_id], |r| {
            r.get::<i64>(0)
        })?
        .is_some();
    if !known {
        return Ok(false);
    }
    match logo {
        Some((bytes, kind)) => conn.exec(
            "INSERT INTO client_logos (client_id, logo, logo_type, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (client_id) DO UPDATE SET logo = ?2, logo_type = ?3, updated_at = ?4",
            args![client_id, bytes, kind, now],
        )?,
        None => conn.exec("DELETE FROM client_logos WHERE client_id = ?1", args![client_id])?,
    };
    Ok(true)
}
