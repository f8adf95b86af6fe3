//! The SQLite engine: one writer thread that group-commits (`writer.rs`), a pool of
//! read-only connections that read in place under WAL, the pragmas (`connection.rs`),
//! the schema (`migrations.rs`) and the file-level tasks (`maintenance.rs`). The only
//! place, with `sql.rs`, that uses rusqlite.

mod connection;
mod maintenance;
mod migrations;
mod tap;
mod wal;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;

use super::{DbError, Tx};
use crate::domain::SqliteOptions;
pub use tap::{Checkpoint, WalTap};
pub use wal::{Frame, Tail, WalPosition};
pub use writer::{CommitHook, WriterStats};

pub(super) use connection::require_existing;

/// How long a request waits for the writer before it is told to come back later.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                DbError::Conflict
            }
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                super::outage::disk_full(&e)
            }
            _ => DbError::Engine(Box::new(e)),
        }
    }
}

impl From<r2d2::Error> for DbError {
    fn from(e: r2d2::Error) -> Self {
        DbError::Engine(Box::new(e))
    }
}

#[derive(Clone)]
pub(super) struct Sqlite {
    writer: writer::Writer,
    readers: r2d2::Pool<SqliteConnectionManager>,
    /// In WAL mode a read never waits for the writer: a point query costs
    /// microseconds of CPU, less than handing it to another thread. With the rollback
    /// journal a read can wait on a lock, so it moves off the async threads.
    inline_reads: bool,
    /// The file, for operations that need a connection of their own (backups).
    path: Arc<Path>,
    settings: SqliteOptions,
}

impl Sqlite {
    /// Opens (creating if needed) the file, applies migrations, starts the writer thread
    /// and the read pool.
    pub(super) fn open(path: &Path, settings: &SqliteOptions) -> Result<Self, DbError> {
        let mut conn = connection::open_writer(path, settings)?;
        migrations::apply(&mut conn)?;
        let writer = writer::Writer::start(conn, settings.writer_queue)?;
        let read_settings = settings.clone();
        let manager = SqliteConnectionManager::file(path)
            .with_flags(
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .with_init(move |c| connection::configure_reader(c, &read_settings));
        let readers = r2d2::Pool::builder()
            .max_size(settings.read_pool)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(5))
            .build(manager)?;
        Ok(Self {
            writer,
            readers,
            inline_reads: settings.wal,
            path: Arc::from(path),
            settings: settings.clone(),
        })
    }

    /// Runs `op` in the writer's next group commit, under its own SAVEPOINT: an error
    /// rolls back this operation only. Resolves once the batch is durable.
    pub(super) async fn write<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let reply = self.writer.submit(op)?;
        match tokio::time::timeout(WRITE_DEADLINE, reply).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(DbError::WriterGone),
            Err(_) => Err(DbError::Busy),
        }
    }

    /// `write` without the deadline, for `tessera import`: one long transaction on a
    /// database nobody uses yet, whose caller must learn whether it committed rather
    /// than be told "busy" while it still runs.
    pub(super) async fn write_unbounded<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.writer.submit(op)?.await.map_err(|_| DbError::WriterGone)?
    }

    /// Runs `op` inside one read transaction on a pooled connection, off the async
    /// threads: without `BEGIN` each statement would see the database as of its own
    /// start, and an export of several tables would not be one moment's state.
    pub(super) async fn read_snapshot<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(true, op).await
    }

    /// Runs `op` on a read-only pooled connection (off the async threads unless WAL
    /// makes the read lock-free).
    pub(super) async fn read<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        if self.inline_reads {
            let conn = self.readers.get()?;
            return op(&Tx::sqlite(&conn));
        }
        self.blocking(false, op).await
    }

    /// Runs `op` on a pooled connection on a blocking thread, erased (`sql::erase`: one
    /// task type for them all), in one read transaction when `snapshot`.
    async fn blocking<T, F>(&self, snapshot: bool, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let (op, slot) = crate::db::sql::erase(op);
        self.spawn_erased(snapshot, op).await?;
        slot.take()
    }

    async fn spawn_erased(&self, snapshot: bool, op: crate::db::sql::Erased) -> Result<(), DbError> {
        let pool = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.get()?;
            if !snapshot {
                return op(&Tx::sqlite(&conn));
            }
            // Deferred: the snapshot is taken at the first read and held to the end;
            // dropping the transaction ends it (it wrote nothing).
            let snapshot = conn.transaction()?;
            op(&Tx::sqlite(&snapshot))
        })
        .await
        .map_err(|_| DbError::Panicked)?
    }

    /// `VACUUM INTO` on a connection of its own, since the pooled readers may not
    /// write even elsewhere.
    pub(super) async fn backup(&self, target: &Path) -> Result<(), DbError> {
        let (path, settings, target) = (self.path.clone(), self.settings.clone(), target.to_path_buf());
        tokio::task::spawn_blocking(move || {
            let conn = connection::open_snapshot(&path, &settings)?;
            maintenance::backup(&conn, &target)
        })
        .await
        .map_err(|_| DbError::Panicked)?
    }

    /// Integrity and foreign-key problems of the open file (read-only).
    pub(super) fn check(&self) -> Result<Vec<String>, DbError> {
        check_file(&self.path, &self.settings)
    }

    /// The file and its write-ahead log.
    pub(super) fn size_bytes(&self) -> u64 {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.as_os_str().to_owned();
        wal.push("-wal");
        size(&self.path) + size(Path::new(&wal))
    }

    /// A tap on the write-ahead log for replication, and the writer told to wake
    /// `wake` after each commit.
    pub(super) fn wal_tap(&self, wake: writer::CommitHook) -> Result<WalTap, DbError> {
        let tap = WalTap::open(&self.path, &self.settings)?;
        self.writer.on_commit(wake);
        Ok(tap)
    }

    pub(super) fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }

    pub(super) fn shutdown(&self) {
        self.writer.shutdown();
    }
}

/// What an import needs after inserting rows with their own ids: nothing here, since an
/// `INTEGER PRIMARY KEY` takes the largest id + 1 for the next row (no table uses
/// `AUTOINCREMENT`, whose counter would also follow inserted ids).
pub(super) fn after_import(_: &Tx<'_>) -> Result<(), DbError> {
    Ok(())
}

/// `PRAGMA integrity_check` and `foreign_key_check` on the file, opened read-only.
pub(super) fn check_file(path: &Path, settings: &SqliteOptions) -> Result<Vec<String>, DbError> {
    let conn = connection::open_read_only(path, settings)?;
    maintenance::check(&conn)
}

/// For the integration tests (`db::testing`): the file outside any server.
#[cfg(any(test, feature = "testing"))]
pub(super) mod testing {
    use super::*;

    pub fn with_file<T>(path: &Path, op: impl FnOnce(&Tx<'_>) -> Result<T, DbError>) -> Result<T, DbError> {
        let conn = rusqlite::Connection::open(path)?;
        op(&Tx::sqlite(&conn))
    }

    pub fn schema_version(conn: &Tx<'_>) -> Result<i64, DbError> {
        let c = conn.sqlite_connection().ok_or(DbError::NotFound)?;
        Ok(c.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    pub fn set_schema_version(conn: &Tx<'_>, version: i64) -> Result<(), DbError> {
        let c = conn.sqlite_connection().ok_or(DbError::NotFound)?;
        c.pragma_update(None, "user_version", version)?;
        Ok(())
    }
}
