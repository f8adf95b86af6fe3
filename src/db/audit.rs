//! The audit log: one row per security event, filtered and paged for the admin pages
//! and API, and pruned after the retention period.

use serde::Serialize;

use super::sql::{args, Row};
use super::{DbError, Tx};

pub struct NewEntry<'a> {
    pub at: i64,
    pub event: &'a str,
    pub actor: Option<&'a str>,
    pub target: Option<&'a str>,
    pub ip: Option<&'a str>,
    pub detail: &'a serde_json::Value,
}

pub fn record(conn: &Tx<'_>, e: &NewEntry<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO audit_log (at, event, actor, target, ip, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        args![e.at, e.event, e.actor, e.target, e.ip, e.detail.to_string()],
    )?;
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: i64,
    pub at: i64,
    pub event: String,
    pub actor: Option<String>,
    pub target: Option<String>,
    pub ip: Option<String>,
    pub detail: serde_json::Value,
}

pub(super) fn from_row(r: &Row<'_>) -> Result<Entry, DbError> {
    Ok(Entry {
        id: r.get(0)?,
        at: r.get(1)?,
        event: r.get(2)?,
        actor: r.get(3)?,
        target: r.get(4)?,
        ip: r.get(5)?,
        detail: serde_json::from_str(&r.get::<String>(6)?).unwrap_or_default(),
    })
}

/// What the audit list is narrowed to; every field optional.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// An event name, or a prefix ending in `.` (`login.`, `admin.`).
    pub event: Option<String>,
    /// Matches actor or target.
    pub who: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}

/// One page of entries, newest first, and how many match in all.
pub fn list(conn: &Tx<'_>, f: &Filter, limit: i64, offset: i64) -> Result<(Vec<Entry>, i64), DbError> {
    let event_like = f.event.as_ref().map(|e| {
        let escaped = e.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        if escaped.ends_with('.') {
            format!("{escaped}%")
        } else {
            escaped
        }
    });
    let condition = "(?1 IS NULL OR event LIKE ?1 ESCAPE '\\')
        AND (?2 IS NULL OR actor = ?2 OR target = ?2)
        AND (?3 IS NULL OR at >= ?3) AND (?4 IS NULL OR at < ?4)";
    let total = conn.one(
        &format!("SELECT count(*) FROM audit_log WHERE {condition}"),
        args![event_like, f.who, f.since, f.until],
        |r| r.get(0),
    )?;
    let rows = conn.rows(
        &format!(
            "SELECT id, at, event, actor, target, ip, detail FROM audit_log WHERE {condition}
         ORDER BY at DESC, id DESC LIMIT ?5 OFFSET ?6"
        ),
        args![event_like, f.who, f.since, f.until, limit, offset],
        from_row,
    )?;
    Ok((rows, total))
}

/// Counts events of one name since a time (the dashboard).
pub fn count_since(conn: &Tx<'_>, event: &str, since: i64) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM audit_log WHERE event = ?1 AND at >= ?2",
        args![event, since],
        |r| r.get(0),
    )
}
