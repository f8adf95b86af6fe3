//! Storage: domain operations (one module per table family) over `Tx`, the engine-
//! neutral transaction of `sql.rs`, and `Db`, which hands each operation to the engine
//! behind it: SQLite (`sqlite/`: a writer thread that group-commits, read-only pooled
//! connections in WAL), the default and the single-node fast path, or PostgreSQL
//! (`pg/`: a pooled connection per transaction), which several nodes share.
//! Only those two modules and `sql.rs` know an engine.

pub mod apps;
pub mod audit;
pub mod branding;
pub mod claim_rules;
pub mod clients;
pub mod consents;
pub mod dashboard;
pub mod device;
pub mod devices;
pub mod email_tokens;
pub mod forward_auth;
#[cfg(test)]
mod fresh;
pub mod grants;
pub mod groups;
pub mod identities;
pub mod jtis;
pub mod keys;
pub mod logout;
pub mod mfa;
mod outage;
pub mod outbox;
pub mod par;
pub mod passkeys;
mod pg;
pub mod providers;
pub mod purge;
pub mod registration;
pub mod resources;
pub mod secrets;
pub mod sessions;
pub mod setup;
mod sql;
mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transfer;
pub mod users;

use std::path::Path;

// The options `Db::open` takes, named here too for the callers of the storage API.
pub use crate::domain::{SqliteOptions, Synchronous};
pub use pg::PoolStats;
pub use sql::Tx;
pub use sqlite::{Checkpoint, CommitHook, Frame, Tail, WalPosition, WalTap, WriterStats};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The writer's queue is full or it did not answer in time: shed load with a 503.
    #[error("database is busy")]
    Busy,
    /// The disk is full: nothing was written; shed the write with a 503 until there
    /// is room (reads go on).
    #[error("the disk is full")]
    Full,
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
    Postgres(pg::Postgres),
}

/// Checks a PostgreSQL URL (`postgres://` or `postgresql://`, libpq's form with
/// `sslmode` and `sslrootcert`) without connecting: the one-line reason when it is
/// not usable, never naming the password.
pub fn check_database_url(url: &str) -> Result<(), String> {
    pg::Target::parse(url).map(drop)
}

impl Db {
    /// Opens a database that must exist already (administration commands: a mistyped
    /// path is an error, never a new empty database).
    pub fn open_existing(path: &Path, settings: &SqliteOptions) -> Result<Self, DbError> {
        sqlite::require_existing(path)?;
        Self::open(path, settings)
    }

    /// Opens (creating if needed) the file, applies migrations, starts the writer thread
    /// and the read pool.
    pub fn open(path: &Path, settings: &SqliteOptions) -> Result<Self, DbError> {
        Ok(Self {
            engine: Engine::Sqlite(sqlite::Sqlite::open(path, settings)?),
        })
    }

    /// Connects to PostgreSQL with a pool of at most `pool_size` connections and, when
    /// `migrate`, applies the migrations (under an advisory lock, so that nodes starting
    /// together are safe). Connections are made on demand: without migrating, nothing
    /// is sent until the first operation (`startup::open_database` pings once).
    pub async fn open_postgres(url: &str, pool_size: u32, migrate: bool) -> Result<Self, DbError> {
        let target = pg::Target::parse(url).map_err(DbError::Open)?;
        let engine = tokio::task::spawn_blocking(move || pg::Postgres::open(target, pool_size, migrate))
            .await
            .map_err(|_| DbError::Panicked)??;
        Ok(Self {
            engine: Engine::Postgres(engine),
        })
    }

    /// Applies the migrations this binary knows (`tessera migrate`); SQLite's are
    /// applied on open.
    pub async fn migrate(&self) -> Result<(), DbError> {
        match &self.engine {
            Engine::Sqlite(_) => Ok(()),
            Engine::Postgres(e) => {
                let e = e.clone();
                tokio::task::spawn_blocking(move || e.migrate())
                    .await
                    .map_err(|_| DbError::Panicked)?
            }
        }
    }

    /// PostgreSQL's consistency problems (`tessera check`): a schema this binary does
    /// not match, constraints not validated, invalid indexes.
    pub async fn check(&self) -> Result<Vec<String>, DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.check(),
            Engine::Postgres(e) => {
                let e = e.clone();
                tokio::task::spawn_blocking(move || e.check())
                    .await
                    .map_err(|_| DbError::Panicked)?
            }
        }
    }

    /// How much the database takes (the file and its WAL; the PostgreSQL database's
    /// size), for `/metrics`.
    pub async fn size_bytes(&self) -> Result<u64, DbError> {
        match &self.engine {
            Engine::Sqlite(e) => Ok(e.size_bytes()),
            Engine::Postgres(_) => {
                let size = self
                    .read(|c| {
                        c.one("SELECT pg_database_size(current_database())", sql::args![], |r| {
                            r.get::<i64>(0)
                        })
                    })
                    .await?;
                Ok(u64::try_from(size).unwrap_or(0))
            }
        }
    }

    /// Runs `op` as one write transaction (with SQLite: in the writer's next group
    /// commit, the batch's first operation in the transaction itself and each later one
    /// under its own SAVEPOINT, so an error rolls back this operation only).
    /// Resolves once the write is durable.
    pub async fn write<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        match &self.engine {
            Engine::Sqlite(e) => e.write(op).await,
            Engine::Postgres(e) => e.write(op).await,
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
            Engine::Postgres(e) => e.read(op).await,
        }
    }

    /// Writes a consistent copy of the database to `target` (which must not exist),
    /// owner-only, while everything else goes on.
    pub async fn backup(&self, target: &Path) -> Result<(), DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.backup(target).await,
            Engine::Postgres(_) => Err(DbError::Open(
                "backup copies a SQLite file; on PostgreSQL use pg_dump (or tessera export)".into(),
            )),
        }
    }

    /// Every table that holds state as one document (`tessera export`), read on one
    /// snapshot so that it is consistent while the server goes on.
    pub async fn export(&self, exported_at: i64) -> Result<transfer::Export, DbError> {
        let op = move |tx: &Tx<'_>| transfer::export(tx, exported_at);
        match &self.engine {
            Engine::Sqlite(e) => e.read_snapshot(op).await,
            Engine::Postgres(e) => e.read_snapshot(op).await,
        }
    }

    /// Loads a checked export into this database, which must be empty (`tessera
    /// import`): every row in one transaction, all or nothing.
    pub async fn import(&self, export: transfer::Prepared) -> Result<transfer::Imported, transfer::TransferError> {
        let loads = export.0;
        let outcome = match &self.engine {
            Engine::Sqlite(e) => {
                e.write_unbounded(move |tx| transfer::import(tx, &loads, sqlite::after_import))
                    .await
            }
            Engine::Postgres(e) => e.write(move |tx| transfer::import(tx, &loads, pg::after_import)).await,
        };
        outcome?.map_err(transfer::TransferError::NotEmpty)
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

    /// A tap on SQLite's write-ahead log for replication, with `wake` called after
    /// each group commit; PostgreSQL has its own archiving.
    pub fn wal_tap(&self, wake: CommitHook) -> Result<WalTap, DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.wal_tap(wake),
            Engine::Postgres(_) => Err(DbError::Open(
                "replication ships a SQLite file; on PostgreSQL use WAL archiving".into(),
            )),
        }
    }

    /// The SQLite writer's counters; `None` on PostgreSQL, which has no writer.
    pub fn writer_stats(&self) -> Option<WriterStats> {
        match &self.engine {
            Engine::Sqlite(e) => Some(e.writer_stats()),
            Engine::Postgres(_) => None,
        }
    }

    /// The PostgreSQL pool's state; `None` on SQLite.
    pub fn pool_stats(&self) -> Option<PoolStats> {
        match &self.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(e) => Some(e.pool_stats()),
        }
    }

    /// Stops accepting writes and waits for what was accepted to be committed.
    pub fn shutdown(&self) {
        match &self.engine {
            Engine::Sqlite(e) => e.shutdown(),
            // Each write committed before it was acknowledged; nothing is queued.
            Engine::Postgres(_) => {}
        }
    }
}

/// Consistency problems of the database at `path`, opened read-only (`tessera check`):
/// nothing is migrated, created or changed. Empty when it is sound.
pub fn check_file(path: &Path, settings: &SqliteOptions) -> Result<Vec<String>, DbError> {
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

/// Storage failures as the server's own: a full queue or disk sheds load, anything
/// else is logged here, once, and answers as a failure.
impl From<DbError> for crate::error::Internal {
    fn from(e: DbError) -> Self {
        match e {
            // A full disk was logged where it was found, once per run.
            DbError::Busy | DbError::Full => Self::Busy,
            other => {
                tracing::error!(error = %other, "storage error");
                Self::Failed
            }
        }
    }
}
