//! Snapshots: the generation's first copy of the file, and the later ones that keep a
//! restore's log short.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Run;
use crate::db::Checkpoint;
use crate::replica::format::{self, Snapshot};
use crate::replica::layout::{self, Kind};

impl Run {
    /// Generation start: a checkpointed file copied as position 0. Retried until it works
    /// (a long read elsewhere can keep a checkpoint from completing) or the server stops.
    pub(super) fn first_snapshot(&mut self) -> bool {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            match self.tap.checkpoint(None, true) {
                Ok(Checkpoint::Done {
                    full: true,
                    position,
                    snapshot: Some(db),
                }) => {
                    self.read = position;
                    self.shipped = position;
                    if self.put_snapshot(db) {
                        return true;
                    }
                }
                Ok(_) => tracing::debug!("replication: the first checkpoint is not complete yet; retrying"),
                Err(e) => {
                    self.stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "replication cannot read the database; retrying");
                }
            }
            let wait = self.next_backoff();
            self.wake.wait(Duration::from_millis(wait as u64));
        }
    }

    /// Puts a snapshot of the state after the last shipped position (retrying with
    /// back-off when it is the generation's first).
    pub(super) fn put_snapshot(&mut self, db: Vec<u8>) -> bool {
        let page_size = page_size_of(&db);
        if page_size == 0 {
            tracing::error!("replication: the database file has no valid header");
            return false;
        }
        self.page_size = page_size;
        let now = self.clock.now_millis();
        let name = layout::object_name(
            &self.generation,
            Kind::Snapshot,
            self.shipped_seq,
            self.shipped_seq,
            now,
            now,
        );
        let size = db.len() as u64;
        let body = format::encode_snapshot(&Snapshot {
            page_size,
            step: self.shipped_seq,
            ts_ms: now,
            db,
        });
        loop {
            match self.put(&name, &body) {
                Ok(()) => break,
                Err(()) if self.first_done => return false,
                Err(()) => {
                    if self.stop.load(Ordering::SeqCst) {
                        return false;
                    }
                    let wait = self.next_backoff();
                    self.wake.wait(Duration::from_millis(wait as u64));
                }
            }
        }
        self.stats.snapshots.fetch_add(1, Ordering::Relaxed);
        self.first_done = true;
        self.snapshot_size = size;
        self.bytes_since_snapshot = 0;
        self.last_snapshot_ms = now;
        tracing::info!(object = %name, bytes = size, "replication snapshot shipped");
        true
    }
}

/// The page size in a database file's header (offset 16, big-endian; 1 means 65536).
pub fn page_size_of(db: &[u8]) -> u32 {
    if db.len() < 100 || &db[..16] != b"SQLite format 3\0" {
        return 0;
    }
    match u16::from_be_bytes([db[16], db[17]]) {
        1 => 65536,
        n => n as u32,
    }
}
