//! Operator tasks on the database file: an online backup and consistency checks.

use std::path::Path;

use rusqlite::Connection;

use super::DbError;

/// Writes a consistent copy of the database to `target` (which must not exist) while
/// the server keeps serving: `VACUUM INTO` reads one snapshot and takes no write lock.
pub fn backup(conn: &Connection, target: &Path) -> Result<(), DbError> {
    if target.exists() {
        return Err(DbError::Open(format!(
            "{} already exists; choose a new file",
            target.display()
        )));
    }
    let path = target
        .to_str()
        .ok_or_else(|| DbError::Open("the backup path is not UTF-8".into()))?;
    // The copy holds password hashes, TOTP secrets and (without a master key) private
    // keys: it is created owner-only before SQLite writes into it (VACUUM INTO fills an
    // empty file and keeps its mode), whatever the umask.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(target)
        .map_err(|e| DbError::Open(format!("{}: {e}", target.display())))?;
    if let Err(e) = conn.execute("VACUUM INTO ?1", [path]) {
        let _ = std::fs::remove_file(target);
        return Err(e.into());
    }
    Ok(())
}

/// Problems found by `PRAGMA integrity_check` and `PRAGMA foreign_key_check`; empty
/// when the database is sound.
pub fn check(conn: &Connection) -> Result<Vec<String>, DbError> {
    let mut problems = Vec::new();
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    for row in rows {
        let line = row?;
        if line != "ok" {
            problems.push(format!("integrity: {line}"));
        }
    }
    let mut stmt = conn.prepare("PRAGMA foreign_key_check")?;
    let rows = stmt.query_map([], |r| {
        Ok(format!(
            "foreign key: {} row {:?} -> {}",
            r.get::<_, String>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, String>(2)?
        ))
    })?;
    for row in rows {
        problems.push(row?);
    }
    Ok(problems)
}
