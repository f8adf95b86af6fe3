//! Server-wide secrets made once and kept in the database, so every process on it
//! (the server, the command line, later nodes) uses the same one.

use super::sql::args;
use super::{DbError, Tx};

/// The secret named `name`, stored as `fresh` when there is none yet (the first
/// writer wins; everyone reads the stored value).
pub fn get_or_create(conn: &Tx<'_>, name: &str, fresh: &[u8]) -> Result<Vec<u8>, DbError> {
    conn.exec(
        "INSERT INTO server_secrets (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
        args![name, fresh],
    )?;
    conn.row("SELECT value FROM server_secrets WHERE name = ?1", args![name], |r| {
        r.get(0)
    })?
    .ok_or_else(|| DbError::Corrupt(format!("server secret {name} vanished")))
}
