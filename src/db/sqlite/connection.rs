//! Connection pragmas, set in one place for the writer, the readers and read-only
//! checks.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::db::DbError;
use crate::domain::{SqliteOptions, Synchronous};

const BUSY_TIMEOUT_MS: u32 = 5000;

/// Opens the read-write connection, creating the file with owner-only permissions: it
/// holds password hashes and private keys.
pub fn open_writer(path: &Path, settings: &SqliteOptions) -> Result<Connection, DbError> {
    create_private_file(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| DbError::Open(format!("{}: {e}", path.display())))?;
    configure_writer(&conn, settings)?;
    Ok(conn)
}

/// Refuses a path with no database: only `init` and `serve` create one.
pub fn require_existing(path: &Path) -> Result<(), DbError> {
    if path.is_file() {
        return Ok(());
    }
    Err(DbError::Open(format!(
        "no database at {}; check --db, or create one with `tessera init`",
        path.display()
    )))
}

/// A connection opened read-only that may still write another file: `VACUUM INTO`
/// for backups (`query_only` would refuse that too).
pub fn open_snapshot(path: &Path, settings: &SqliteOptions) -> Result<Connection, DbError> {
    require_existing(path)?;
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| DbError::Open(format!("{}: {e}", path.display())))?;
    configure_common(&conn, settings)?;
    Ok(conn)
}

/// A read-only connection that never migrates or creates anything (`tessera check`).
pub fn open_read_only(path: &Path, settings: &SqliteOptions) -> Result<Connection, DbError> {
    require_existing(path)?;
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| DbError::Open(format!("{}: {e}", path.display())))?;
    configure_common(&conn, settings)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}

fn create_private_file(path: &Path) -> Result<(), DbError> {
    if path.exists() {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(DbError::Open(format!("{}: {e}", path.display()))),
    }
}

fn configure_common(conn: &Connection, settings: &SqliteOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS.into()))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    let sync = match settings.synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

fn configure_writer(conn: &Connection, settings: &SqliteOptions) -> Result<(), DbError> {
    // WAL lets readers proceed while the writer commits; the rollback journal is for
    // filesystems without shared memory, where the busy timeout absorbs contention.
    let mode = if settings.wal { "WAL" } else { "DELETE" };
    let applied: String = conn.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0))?;
    if !applied.eq_ignore_ascii_case(mode) {
        return Err(DbError::Open(format!(
            "journal_mode {mode} not available (got {applied})"
        )));
    }
    configure_common(conn, settings)?;
    if settings.wal && !settings.autocheckpoint {
        // Checkpoints are someone else's: Litestream's, or the replication shipper's,
        // which checkpoints only frames it has shipped.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    }
    Ok(())
}

pub fn configure_reader(conn: &mut Connection, settings: &SqliteOptions) -> rusqlite::Result<()> {
    configure_common(conn, settings)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(())
}
