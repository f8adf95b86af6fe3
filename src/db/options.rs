//! How the SQLite engine opens its file, as the caller builds it from the settings.

/// SQLite's `synchronous` pragma: NORMAL is safe against process crashes in WAL mode;
/// FULL also survives power loss, at the price of an fsync per group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    Normal,
    Full,
}

/// The SQLite file's options; `Default` is the settings' defaults.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub wal: bool,
    pub synchronous: Synchronous,
    /// Bound of the writer's queue; a full queue answers 503 rather than waiting.
    pub writer_queue: usize,
    pub read_pool: u32,
    /// SQLite's automatic checkpoints (every 1000 WAL pages); off when another tool
    /// or Tessera's own replication checkpoints after shipping.
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
