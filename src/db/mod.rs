//! Storage: domain operations (one module per table family) over `Tx`, the engine-
//! neutral transaction of `sql.rs`, and `Db`, which hands each operation to the engine
//! behind it. SQLite (`sqlite/`: a writer thread that group-commits, read-only pooled
//! connections in WAL) is the only module that knows its engine.

pub mod audit;
pub mod clients;
pub mod consents;
pub mod device;
pub mod grants;
pub mod groups;
pub mod keys;
pub mod logout;
pub mod mfa;
pub mod passkeys;
pub mod purge;
pub mod secrets;
pub mod sessions;
pub mod setup;
mod sql;
mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod users;

use std::path::Path;

use crate::config::SqliteSettings;
pub use sql::Tx;
pub use sqlite::WriterStats;

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
    /// A row the operation requires is not there (a statement that always yields one).
    #[error("record not found")]
    NotFound,
    #[error("database operation panicked")]
    Panicked,
    #[error("schema version {found} is newer than this binary supports ({supported}); upgrade Tessera")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("{0}")]
    Migration(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Whatever else the engine reports (I/O, a broken file, a lost connection).
    #[error("database error: {0}")]
    Engine(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot open database: {0}")]
    Open(String),
}

/// The database handle shared by all handlers: cheap to clone. Each call goes to the
/// engine the server was started on.
#[derive(Clone)]
pub struct Db {
    engine: Engine,
}

#[derive(Clone)]
enum Engine {
    Sqlite(sqlite::Sqlite),
}

impl Db {
    /// Opens a database that must exist already (administration commands: a mistyped
    /// path is an error, never a new empty database).
    pub fn open_existing(path: &Path, settings: &SqliteSettings) -> Result<Self, DbError> {
        sqlite::require_existing(path)?;
        Self::open(path, settings)
    }

    /// Opens (creating if needed) the file, applies migrations, starts the writer thread
    /// and the read pool.
    pub fn open(path: &Path, settings: &SqliteSettings) -> Result<Self, DbError> {
        Ok(Self {
            engine: Engine::Sqlite(sqlite::Sqlite::open(path, settings)?),
        })
    }

    /// Runs `op` as one write transaction (with SQLite: under its own SAVEPOINT in the
    /// writer's next group commit, so an error rolls back this operation only).
    /// Resolves once the write is durable.
    pub async fn write<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        match &self.engine {
            Engine::Sqlite(e) => e.write(op).await,
        }
    }

    /// Runs `op` on a read-only snapshot.
    pub async fn read<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        match &self.engine {
            Engine::Sqlite(e) => e.read(op).await,
        }
    }

    /// Writes a consistent copy of the database to `target` (which must not exist),
    /// owner-only, while everything else goes on.
    pub async fn backup(&self, target: &Path) -> Result<(), DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.backup(target).await,
        }
    }

    /// Whether the database answers a read (readiness probes).
    pub async fn ping(&self) -> Result<(), DbError> {
        self.read(|c| c.one("SELECT 1", sql::args![], |r| r.get::<i64>(0)).map(drop))
            .await
    }

    /// Whether writes commit (readiness probes): an empty operation through the queue
    /// and a group commit.
    pub async fn write_probe(&self) -> Result<(), DbError> {
        self.write(|_| Ok(())).await
    }

    pub fn writer_stats(&self) -> WriterStats {
        match &self.engine {
            Engine::Sqlite(e) => e.writer_stats(),
        }
    }

    /// Stops accepting writes and waits for what was accepted to be committed.
    pub fn shutdown(&self) {
        match &self.engine {
            Engine::Sqlite(e) => e.shutdown(),
        }
    }
}

/// Consistency problems of the database at `path`, opened read-only (`tessera check`):
/// nothing is migrated, created or changed. Empty when it is sound.
pub fn check_file(path: &Path, settings: &SqliteSettings) -> Result<Vec<String>, DbError> {
    sqlite::check_file(path, settings)
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
