//! How the SQLite file is opened: the options the settings hold and the storage engine
//! is given, with their defaults in this one place (the settings may not import the
//! storage, nor the storage the settings).

/// SQLite's `synchronous` pragma: NORMAL is safe against process crashes in WAL mode;
/// FULL also survives power loss, at the price of an fsync per group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    Normal,
    Full,
}

/// The SQLite file's options.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub wal: bool,
    pub synchronous: Synchronous,
    /// Bound of the writer's queue; a full queue answers 503 rather than waiting.
    pub writer_queue: usize,
    pub read_pool: u32,
    /// SQLite's automatic checkpoints (every 1000 WAL pages). Off for a Litestream
    /// sidecar, which checkpoints itself; Tessera's own replication turns them off on
    /// the server's writer and checkpoints after shipping.
    pub autocheckpoint: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            wal: true,
            synchronous: Synchronous::Normal,
            writer_queue: 8192,
            read_pool: 8,
            autocheckpoint: true,
        }
    }
}
