//! Storage inspection for the integration tests only (the `testing` feature): what a
//! test asserts about stored rows without reaching for SQL itself.

use super::{DbError, Tx};

/// Rows in one of the tables tests look at.
pub fn count_rows(conn: &Tx<'_>, table: &str) -> Result<i64, DbError> {
    let table = match table {
        "revoked_tokens" | "logout_deliveries" | "grants" | "refresh_tokens" | "sessions" | "audit_log" => table,
        _ => return Err(DbError::Corrupt(format!("no counting of {table}"))),
    };
    Ok(conn
        .sql()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?)
}

/// (attempts, next_at) of each queued back-channel delivery.
pub fn deliveries(conn: &Tx<'_>) -> Result<Vec<(i64, i64)>, DbError> {
    let mut stmt = conn
        .sql()
        .prepare("SELECT attempts, next_at FROM logout_deliveries ORDER BY id")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The schema version stored in the file.
pub fn schema_version(conn: &Tx<'_>) -> Result<i64, DbError> {
    Ok(conn.sql().query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Opens the file at `path` and runs `op` on it directly, outside any server: for
/// tests that look at (or age) a database a command wrote.
pub fn with_file<T>(path: &std::path::Path, op: impl FnOnce(&Tx<'_>) -> Result<T, DbError>) -> Result<T, DbError> {
    let conn = rusqlite::Connection::open(path)?;
    op(&Tx::new(&conn))
}

/// Sets the stored schema version, to pretend a file comes from another release.
pub fn set_schema_version(conn: &Tx<'_>, version: i64) -> Result<(), DbError> {
    conn.sql().pragma_update(None, "user_version", version)?;
    Ok(())
}
