//! Storage inspection for the integration tests only (the `testing` feature): what a
//! test asserts about stored rows without reaching for SQL itself.

use super::sql::args;
use super::{pg, sqlite, DbError, Tx};

/// Rows in one of the tables tests look at (of `mail_outbox`, the mail to be sent:
/// decoys, which never are, are left out; `outbox` lists them).
pub fn count_rows(conn: &Tx<'_>, table: &str) -> Result<i64, DbError> {
    if table == "mail_outbox" {
        return conn.one("SELECT count(*) FROM mail_outbox WHERE kind <> 'decoy'", args![], |r| {
            r.get(0)
        });
    }
    let table = match table {
        "revoked_tokens"
        | "logout_deliveries"
        | "grants"
        | "refresh_tokens"
        | "sessions"
        | "audit_log"
        | "mail_outbox"
        | "email_tokens"
        | "devices"
        | "forward_auth_tokens"
        | "login_requests" => table,
        _ => return Err(DbError::Corrupt(format!("no counting of {table}"))),
    };
    conn.one(&format!("SELECT count(*) FROM {table}"), args![], |r| r.get(0))
}

/// Whether `hash` is the digest of a session id (of any session, live or not).
pub fn is_session_id(conn: &Tx<'_>, hash: &crate::crypto::TokenHash) -> Result<bool, DbError> {
    Ok(conn
        .row(
            "SELECT 1 FROM sessions WHERE id_hash = ?1",
            args![hash.as_bytes()],
            |r| r.get::<i64>(0),
        )?
        .is_some())
}

/// (attempts, next_at) of each queued back-channel delivery.
pub fn deliveries(conn: &Tx<'_>) -> Result<Vec<(i64, i64)>, DbError> {
    conn.rows(
        "SELECT attempts, next_at FROM logout_deliveries ORDER BY id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// The schema version stored in the file.
pub fn schema_version(conn: &Tx<'_>) -> Result<i64, DbError> {
    sqlite::testing::schema_version(conn)
}

/// Opens the file at `path` and runs `op` on it directly, outside any server: for
/// tests that look at (or age) a database a command wrote.
pub fn with_file<T>(path: &std::path::Path, op: impl FnOnce(&Tx<'_>) -> Result<T, DbError>) -> Result<T, DbError> {
    sqlite::testing::with_file(path, op)
}

/// Sets the stored schema version, to pretend a file comes from another release.
pub fn set_schema_version(conn: &Tx<'_>, version: i64) -> Result<(), DbError> {
    sqlite::testing::set_schema_version(conn, version)
}

/// Runs `sql` on a fresh connection to the PostgreSQL database at `url` (making the
/// schema a test runs in, copying the pre-generated keys into it).
pub fn postgres_batch(url: &str, sql: &str) -> Result<(), DbError> {
    pg::testing::batch(url, sql)
}

/// Refresh tokens not yet used or superseded, across every grant.
pub fn live_refresh_tokens(conn: &Tx<'_>) -> Result<i64, DbError> {
    conn.one(
        "SELECT count(*) FROM refresh_tokens WHERE used_at IS NULL",
        args![],
        |r| r.get(0),
    )
}

/// The ids of the access tokens revoked one by one, in order.
pub fn revoked_jtis(conn: &Tx<'_>) -> Result<Vec<String>, DbError> {
    conn.rows("SELECT jti FROM revoked_tokens ORDER BY jti", args![], |r| r.get(0))
}

/// Moves every mailed link and code `secs` into the past, as if that much time had
/// gone by since it was sent (the tests run on the system clock).
pub fn age_email_tokens(conn: &Tx<'_>, secs: i64) -> Result<usize, DbError> {
    conn.exec(
        "UPDATE email_tokens SET created_at = created_at - ?1, expires_at = expires_at - ?1",
        args![secs],
    )
}

/// Runs `op` on `conn` and returns, with its result, the text of every statement it
/// ran, in order (whitespace folded): for tests that compare the storage work of two
/// paths, on either engine.
pub fn recorded<T>(conn: &Tx<'_>, op: impl FnOnce(&Tx<'_>) -> Result<T, DbError>) -> Result<(T, Vec<String>), DbError> {
    let log = std::cell::RefCell::new(Vec::new());
    let out = op(&conn.tapped(&log))?;
    Ok((out, log.into_inner()))
}

/// Every stored mail, oldest first: (kind, to, text body, sent_at, failed_at).
#[allow(clippy::type_complexity)]
pub fn outbox(conn: &Tx<'_>) -> Result<Vec<(String, String, String, Option<i64>, Option<i64>)>, DbError> {
    conn.rows(
        "SELECT kind, to_addr, text_body, sent_at, failed_at FROM mail_outbox ORDER BY id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )
}
