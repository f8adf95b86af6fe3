//! Storage: one writer thread that group-commits, a pool of read-only connections, and
//! domain operations over them. The only module that uses rusqlite.

pub mod audit;
pub mod clients;
pub mod connection;
pub mod consents;
pub mod device;
pub mod grants;
pub mod groups;
pub mod keys;
pub mod logout;
pub mod maintenance;
pub mod mfa;
pub mod migrations;
pub mod passkeys;
pub mod purge;
pub mod secrets;
pub mod sessions;
pub mod setup;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod users;
mod writer;

use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

/// What every domain operation runs on: one storage transaction (a savepoint in the
/// writer's group commit) or a read snapshot. The engine behind it is visible only
/// inside `db`, so the rest of the code cannot depend on it, and a second engine
/// (PostgreSQL) can stand behind the same operations.
#[derive(Clone, Copy)]
pub struct Tx<'a> {
    conn: &'a Connection,
}

impl<'a> Tx<'a> {
    pub(in crate::db) fn new(conn: &'a Connection) -> Self {
        Self { conn }
    }

    /// The SQLite connection, for the operations in this module.
    pub(in crate::db) fn sql(&self) -> &'a Connection {
        self.conn
    }
}

use crate::config::SqliteSettings;
pub use writer::WriterStats;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The writer's queue is full or it did not answer in time: shed load with a 503.
    #[error("database is busy")]
    Busy,
    #[error("database writer has stopped")]
    WriterGone,
    #[error("commit failed: {0}")]
    Commit(String),
    #[error("record already exists")]
    Conflict,
    #[error("database operation panicked")]
    Panicked,
    #[error("schema version {found} is newer than this binary supports ({supported}); upgrade Tessera")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("{0}")]
    Migration(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    #[error(transparent)]
    Pool(#[from] r2d2::Error),
    #[error("cannot open database: {0}")]
    Open(String),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                DbError::Conflict
            }
            _ => DbError::Sqlite(e),
        }
    }
}

/// How long a request waits for the writer before it is told to come back later.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// The database handle shared by all handlers: cheap to clone.
#[derive(Clone)]
pub struct Db {
    writer: writer::Writer,
    readers: r2d2::Pool<SqliteConnectionManager>,
    /// In WAL mode a read never waits for the writer: a point query costs
    /// microseconds of CPU, less than handing it to another thread. With the rollback
    /// journal a read can wait on a lock, so it moves off the async threads.
    inline_reads: bool,
    /// The file, for operations that need a connection of their own (backups).
    path: std::sync::Arc<std::path::Path>,
    settings: SqliteSettings,
}

impl Db {
    /// Opens a database that must exist already (administration commands: a mistyped
    /// path is an error, never a new empty database).
    pub fn open_existing(path: &std::path::Path, settings: &SqliteSettings) -> Result<Self, DbError> {
        connection::require_existing(path)?;
        Self::open(path, settings)
    }

    /// Opens (creating if needed) the file, applies migrations, starts the writer thread
    /// and the read pool.
    pub fn open(path: &std::path::Path, settings: &SqliteSettings) -> Result<Self, DbError> {
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
            path: std::sync::Arc::from(path),
            settings: settings.clone(),
        })
    }

    /// Writes a consistent copy of the database to `target` (which must not exist),
    /// owner-only, while everything else goes on: on a connection of its own, since
    /// the pooled readers may not write even elsewhere.
    pub async fn backup(&self, target: &std::path::Path) -> Result<(), DbError> {
        let (path, settings, target) = (self.path.clone(), self.settings.clone(), target.to_path_buf());
        tokio::task::spawn_blocking(move || {
            let conn = connection::open_snapshot(&path, &settings)?;
            maintenance::backup(&Tx::new(&conn), &target)
        })
        .await
        .map_err(|_| DbError::Panicked)?
    }

    /// Runs `op` in the writer's next group commit, under its own SAVEPOINT: an error
    /// rolls back this operation only. Resolves once the batch is durable.
    pub async fn write<T, F>(&self, op: F) -> Result<T, DbError>
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

    /// Runs `op` on a read-only pooled connection (off the async threads unless WAL
    /// makes the read lock-free).
    pub async fn read<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        if self.inline_reads {
            let conn = self.readers.get()?;
            return op(&Tx::new(&conn));
        }
        let pool = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let conn = pool.get()?;
            op(&Tx::new(&conn))
        })
        .await
        .map_err(|_| DbError::Panicked)?
    }

    /// Whether the database answers a read (readiness probes).
    pub async fn ping(&self) -> Result<(), DbError> {
        self.read(maintenance::ping).await
    }

    /// Whether the writer commits (readiness probes): an empty operation through the
    /// queue and a group commit.
    pub async fn write_probe(&self) -> Result<(), DbError> {
        self.write(|_| Ok(())).await
    }

    pub fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }

    /// Stops accepting writes and waits for the queue to be committed.
    pub fn shutdown(&self) {
        self.writer.shutdown();
    }
}

/// The outcome of claiming a single-use value (a code, a refresh token, a one-time
/// step) with one conditional UPDATE: of two parallel claims exactly one is `Won`.
/// Ignoring it would hand out what another request already spent, so it cannot be
/// dropped unread.
#[must_use = "a single-use value may already have been spent by another request"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Won,
    Lost,
}

impl Claim {
    pub(crate) fn of(rows: usize) -> Self {
        if rows == 1 {
            Claim::Won
        } else {
            Claim::Lost
        }
    }

    pub fn won(self) -> bool {
        self == Claim::Won
    }
}

/// Maps "no row" to `None` while keeping every other error: a failing database is never
/// mistaken for a missing record.
pub(crate) fn optional<T>(r: rusqlite::Result<T>) -> Result<Option<T>, DbError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
