//! Server-wide secrets made once and kept in the database, so every process on it
//! (the server, the command line, later nodes) uses the same one.

use rusqlite::params;

use super::{optional, DbError, Tx};

/// The secret named `name`, stored as `fresh` when there is none yet (the first
/// writer wins; everyone reads the stored value).
pub fn get_or_create(conn: &Tx<'_>, name: &str, fresh: &[u8]) -> Result<Vec<u8>, DbError> {
    conn.sql()
        .prepare_cached("INSERT INTO server_secrets (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING")?
        .execute(params![name, fresh])?;
    optional(
        conn.sql()
            .prepare_cached("SELECT value FROM server_secrets WHERE name = ?1")?
            .query_row([name], |r| r.get(0)),
    )?
    .ok_or_else(|| DbError::Corrupt(format!("server secret {name} vanished")))
}
