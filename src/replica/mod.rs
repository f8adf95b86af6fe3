//! Continuous replication of the SQLite file: the writer's new WAL frames are shipped
//! to a directory or S3-compatible object storage after each group commit
//! (`shipper.rs`), with periodic snapshots, compaction and retention; `restore.rs`
//! rebuilds a database from a replica at its latest state or at a point in time, and
//! `status.rs` describes one. `format.rs` is the object format (optionally sealed
//! with a key derived from the master key), `store.rs` the targets.

pub mod backups;
pub mod format;
pub mod layout;
pub mod restore;
pub mod s3;
pub mod shipper;
pub mod status;
pub mod store;

pub use store::Store;

pub use crate::config::replication::{S3Settings, Target};

/// The store each target names.
impl Target {
    /// Opens the store behind the target (S3 reads its credentials from the
    /// environment now).
    pub fn open(&self, s3: &S3Settings) -> Result<Box<dyn Store>, String> {
        match self {
            Target::Dir(path) => Ok(Box::new(store::FileStore::new(path.clone()))),
            Target::S3 { bucket, prefix } => Ok(Box::new(s3::S3Store::new(bucket, prefix, s3)?)),
        }
    }
}
