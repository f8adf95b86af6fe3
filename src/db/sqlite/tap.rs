//! What replication needs from the database file: the write-ahead log's committed
//! frames, a hold that keeps frames from being overwritten before they are shipped,
//! and checkpoints that happen only once everything in the log has been shipped.
//!
//! The hold is a read transaction kept open on a connection of its own. While a
//! reader uses the log, SQLite never restarts it (writing from its first frame again)
//! and never checkpoints past that reader's snapshot; a reader that started on a
//! fully checkpointed log blocks checkpoints altogether. So no frame is lost while
//! the hold is in place, whichever process writes. The hold is released only under
//! the write lock, after checking that nothing unshipped is left, for a checkpoint.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::wal::{self, Tail, WalPosition};
use crate::db::DbError;
use crate::domain::SqliteOptions;

pub struct WalTap {
    db: PathBuf,
    wal: PathBuf,
    /// Holds the read transaction (and runs the checkpoints, outside it).
    hold: Connection,
    /// Takes the write lock around a checkpoint.
    lock: Connection,
    held: bool,
}

/// What a checkpoint attempt did.
pub enum Checkpoint {
    /// Committed frames the caller has not shipped are in the log: ship them first.
    Behind,
    /// Done; `full` when every frame reached the database file (the log may then
    /// restart). `snapshot` is the database file at `position`, when asked for and full.
    Done {
        full: bool,
        position: WalPosition,
        snapshot: Option<Vec<u8>>,
    },
}

fn open(path: &Path, settings: &SqliteOptions) -> Result<Connection, DbError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| DbError::Open(format!("{}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let sync = match settings.synchronous {
        crate::domain::Synchronous::Normal => "NORMAL",
        crate::domain::Synchronous::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    Ok(conn)
}

impl WalTap {
    pub fn open(db: &Path, settings: &SqliteOptions) -> Result<Self, DbError> {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let mut tap = Self {
            db: db.to_path_buf(),
            wal: PathBuf::from(wal),
            hold: open(db, settings)?,
            lock: open(db, settings)?,
            held: false,
        };
        tap.hold()?;
        Ok(tap)
    }

    fn hold(&mut self) -> Result<(), DbError> {
        if !self.held {
            // A deferred transaction takes its snapshot at the first read.
            self.hold.execute_batch("BEGIN")?;
            self.hold
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
            self.held = true;
        }
        Ok(())
    }

    fn release(&mut self) -> Result<(), DbError> {
        if self.held {
            self.hold.execute_batch("COMMIT")?;
            self.held = false;
        }
        Ok(())
    }

    /// The transactions committed after `from`.
    pub fn read(&self, from: &WalPosition) -> Result<Tail, DbError> {
        wal::read_tail(&self.wal, from).map_err(|e| DbError::Open(format!("{}: {e}", self.wal.display())))
    }

    /// Checkpoints the log if `shipped` is its end (`None`: the caller starts afresh
    /// and ships nothing older, so whatever the log holds may be checkpointed), and
    /// copies the database file when `snapshot` is asked and the checkpoint is full.
    pub fn checkpoint(&mut self, shipped: Option<&WalPosition>, snapshot: bool) -> Result<Checkpoint, DbError> {
        // The write lock keeps the log's end where it is until the hold is back.
        self.lock.execute_batch("BEGIN IMMEDIATE")?;
        let result = self.checkpoint_locked(shipped, snapshot);
        let hold = self.hold();
        let unlock = self.lock.execute_batch("ROLLBACK");
        let result = result?;
        hold?;
        unlock?;
        let Checkpoint::Done { full, position, .. } = result else {
            return Ok(result);
        };
        // Read after the lock is gone: the hold, taken on a fully checkpointed log,
        // keeps any checkpoint from changing the file meanwhile, and a restart of the
        // log does not touch it.
        let snapshot = match snapshot && full {
            true => Some(std::fs::read(&self.db).map_err(|e| DbError::Open(format!("{}: {e}", self.db.display())))?),
            false => None,
        };
        Ok(Checkpoint::Done {
            full,
            position,
            snapshot,
        })
    }

    fn checkpoint_locked(&mut self, shipped: Option<&WalPosition>, snapshot: bool) -> Result<Checkpoint, DbError> {
        let _ = snapshot;
        let position = match shipped {
            Some(pos) => {
                let tail = self.read(pos)?;
                if !tail.commits.is_empty() {
                    return Ok(Checkpoint::Behind);
                }
                tail.end
            }
            None => {
                // The end of whatever log is there, read through under the lock.
                let mut end = WalPosition::default();
                loop {
                    let tail = self.read(&end)?;
                    end = tail.end;
                    if !tail.more {
                        break;
                    }
                }
                end
            }
        };
        self.release()?;
        let (busy, log, done): (i64, i64, i64) = self.hold.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        Ok(Checkpoint::Done {
            full: busy == 0 && log == done,
            position,
            snapshot: None,
        })
    }
}
