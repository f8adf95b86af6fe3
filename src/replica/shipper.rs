//! The replication thread. Woken after each group commit, it reads the newly
//! committed transactions from the write-ahead log and ships them as one object
//! (a step), at most every `SHIP_EVERY_MS`, so that a committed write reaches the target
//! well within a second. After shipping it checkpoints the log (only then: a frame is
//! never checkpointed away before it is shipped), now and then with a snapshot of the
//! file, so that a restore reads a snapshot and a short log. Small log objects are
//! merged into larger ones (compaction) and history older than the retention goes.
//!
//! The target being down never touches a request: the writer only pokes this thread.
//! Unshipped transactions wait in the log (never checkpointed) and in memory, the
//! failure is counted and logged, and shipping resumes with back-off until it is
//! caught up.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

mod compaction;
mod snapshot;

use super::format::{self, Commit, ObjectKey};
use super::layout::{self, Kind};
use super::store::Store;
use crate::clock::Clock;
use crate::db::{Checkpoint, Db, WalPosition, WalTap};

use compaction::coalesce;
pub use snapshot::page_size_of;

/// Least time between two shipments.
const SHIP_EVERY_MS: i64 = 100;
/// Frames in the log after which it is checkpointed (SQLite's own default).
const CHECKPOINT_FRAMES: u64 = 1000;
/// Bytes of log held in memory at most while the target is unreachable; more stays
/// in the (unchecked-pointed) log file until shipping catches up.
const MAX_PENDING: usize = 64 << 20;
/// A snapshot at least this often, and whenever the log shipped since the last one
/// is this many times the file (and at least 16 MB): a restore reads at most that.
const SNAPSHOT_EVERY_MS: i64 = 24 * 3600 * 1000;
const SNAPSHOT_LOG_FACTOR: u64 = 16;
/// Compaction: log objects of a level merged into one of the next level.
const MERGE_COUNT: [usize; 2] = [32, 16];
const MERGE_AGE_MS: i64 = 10 * 60 * 1000;
const RETENTION_EVERY_MS: i64 = 10 * 60 * 1000;

/// What `/metrics` and the log report.
#[derive(Default, Debug)]
pub struct Stats {
    /// Time of the oldest transaction read but not shipped (0: caught up).
    pub oldest_pending_ms: AtomicI64,
    /// Time of the first commit since the log was last read (0: none), set by the
    /// commit hook, so that commits made while a slow upload runs count as lag too.
    pub oldest_unread_ms: AtomicI64,
    pub last_shipped_ms: AtomicI64,
    pub failures: AtomicU64,
    pub shipped_bytes: AtomicU64,
    pub steps: AtomicU64,
    pub snapshots: AtomicU64,
}

impl Stats {
    /// Seconds the replica is behind: the age of the oldest unshipped transaction.
    pub fn lag_seconds(&self, now_ms: i64) -> f64 {
        let oldest = [&self.oldest_pending_ms, &self.oldest_unread_ms]
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .filter(|t| *t > 0)
            .min();
        match oldest {
            None => 0.0,
            Some(t) => (now_ms - t).max(0) as f64 / 1000.0,
        }
    }
}

#[derive(Default)]
struct Wake {
    poked: Mutex<bool>,
    cond: Condvar,
}

impl Wake {
    fn poke(&self) {
        if let Ok(mut p) = self.poked.lock() {
            *p = true;
            self.cond.notify_one();
        }
    }

    fn wait(&self, timeout: Duration) {
        let Ok(guard) = self.poked.lock() else { return };
        if let Ok((mut guard, _)) = self.cond.wait_timeout_while(guard, timeout, |p| !*p) {
            *guard = false;
        }
    }
}

pub struct Shipper {
    stop: Arc<AtomicBool>,
    wake: Arc<Wake>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub stats: Arc<Stats>,
}

impl Shipper {
    /// Starts shipping `db` to `store`: a new generation begins with a snapshot.
    pub fn start(
        db: &Db,
        store: Box<dyn Store>,
        key: Option<ObjectKey>,
        retention_secs: u64,
        clock: Clock,
    ) -> Result<Self, String> {
        let wake = Arc::new(Wake::default());
        let stats = Arc::new(Stats::default());
        let (poke, hooked, hook_clock) = (wake.clone(), stats.clone(), clock.clone());
        let tap = db
            .wal_tap(Box::new(move || {
                let now = hook_clock.now_millis();
                let _ = hooked
                    .oldest_unread_ms
                    .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
                poke.poke();
            }))
            .map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let generation = layout::generation_name(clock.now_millis(), rand::random());
        let mut run = Run {
            tap,
            store,
            key,
            clock,
            stats: stats.clone(),
            wake: wake.clone(),
            stop: stop.clone(),
            retention_ms: retention_secs as i64 * 1000,
            generation,
            page_size: 0,
            read: WalPosition::default(),
            shipped: WalPosition::default(),
            pending: Vec::new(),
            pending_bytes: 0,
            seq: 0,
            shipped_seq: 0,
            first_done: false,
            frames_since_checkpoint: 0,
            bytes_since_snapshot: 0,
            snapshot_size: 0,
            last_snapshot_ms: 0,
            last_ship_ms: 0,
            retry_at_ms: 0,
            backoff_ms: 0,
            levels: [Vec::new(), Vec::new(), Vec::new()],
            last_retention_ms: 0,
        };
        let thread = std::thread::Builder::new()
            .name("tessera-replica".into())
            .spawn(move || run.main())
            .map_err(|e| format!("cannot start the replication thread: {e}"))?;
        Ok(Self {
            stop,
            wake,
            thread: Mutex::new(Some(thread)),
            stats,
        })
    }

    /// Ships what is committed (trying for a few seconds if the target is down) and
    /// stops. Call after the writer has flushed.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.poke();
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// A shipped log object, as compaction tracks it.
#[derive(Debug, Clone)]
struct Shipped {
    name: String,
    first: u64,
    last: u64,
    t0: i64,
    t1: i64,
}

struct Run {
    tap: WalTap,
    store: Box<dyn Store>,
    key: Option<ObjectKey>,
    clock: Clock,
    stats: Arc<Stats>,
    wake: Arc<Wake>,
    stop: Arc<AtomicBool>,
    retention_ms: i64,
    generation: String,
    page_size: u32,
    /// Where reading the log stopped, and the end of what is shipped.
    read: WalPosition,
    shipped: WalPosition,
    pending: Vec<Commit>,
    pending_bytes: usize,
    /// The position of the last pass read from the log, and of the last one shipped.
    seq: u64,
    shipped_seq: u64,
    first_done: bool,
    frames_since_checkpoint: u64,
    bytes_since_snapshot: u64,
    snapshot_size: u64,
    last_snapshot_ms: i64,
    last_ship_ms: i64,
    retry_at_ms: i64,
    backoff_ms: i64,
    levels: [Vec<Shipped>; 3],
    last_retention_ms: i64,
}

impl Run {
    fn main(&mut self) {
        tracing::info!(target_store = %self.store.describe(), generation = %self.generation, "replication starting");
        if !self.first_snapshot() {
            return;
        }
        self.retention();
        loop {
            let stopping = self.stop.load(Ordering::SeqCst);
            if !stopping {
                self.wake.wait(Duration::from_millis(250));
            }
            self.read_log();
            let now = self.clock.now_millis();
            if !self.pending.is_empty()
                && now >= self.retry_at_ms
                && (now - self.last_ship_ms >= SHIP_EVERY_MS || stopping)
            {
                self.ship();
            }
            if stopping {
                self.finish();
                return;
            }
            if self.pending.is_empty() {
                self.maybe_checkpoint();
                self.compact();
                if now - self.last_retention_ms >= RETENTION_EVERY_MS {
                    self.retention();
                }
            } else if self.last_ship_ms + SHIP_EVERY_MS > now {
                // The next shipment is due soon: do not wait for another commit.
                std::thread::sleep(Duration::from_millis(
                    (self.last_ship_ms + SHIP_EVERY_MS - now).clamp(1, 100) as u64,
                ));
            }
        }
    }

    fn next_backoff(&mut self) -> i64 {
        self.backoff_ms = (self.backoff_ms * 2).clamp(200, 30_000);
        self.backoff_ms
    }

    /// One put, with the outcome counted.
    fn put(&mut self, name: &str, body: &[u8]) -> Result<(), ()> {
        let wrapped = match format::wrap(self.key.as_ref(), name, body) {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "replication cannot seal an object");
                return Err(());
            }
        };
        match self.store.put(name, &wrapped) {
            Ok(()) => {
                self.backoff_ms = 0;
                self.stats
                    .shipped_bytes
                    .fetch_add(wrapped.len() as u64, Ordering::Relaxed);
                self.stats
                    .last_shipped_ms
                    .store(self.clock.now_millis(), Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                let failures = self.stats.failures.fetch_add(1, Ordering::Relaxed) + 1;
                // Logged once, then every tenth time, so an outage does not flood.
                if failures == 1 || failures % 10 == 0 {
                    tracing::warn!(error = %e, failures, "replication cannot ship; retrying, requests are not affected");
                }
                Err(())
            }
        }
    }

    fn read_log(&mut self) {
        while self.pending_bytes < MAX_PENDING {
            let tail = match self.tap.read(&self.read) {
                Ok(t) => t,
                Err(e) => {
                    self.stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "replication cannot read the log");
                    return;
                }
            };
            if tail.commits.is_empty() {
                if tail.restarted {
                    self.read = tail.end;
                }
                return;
            }
            let now = self.clock.now_millis();
            // The commits read now date from the first commit since the last read.
            let committed = self.stats.oldest_unread_ms.swap(0, Ordering::Relaxed);
            if self.pending.is_empty() {
                let since = if committed > 0 { committed.min(now) } else { now };
                self.stats.oldest_pending_ms.store(since, Ordering::Relaxed);
            }
            self.frames_since_checkpoint += tail.commits.iter().map(|c| c.len() as u64).sum::<u64>();
            // Transactions read together share their time, so no restore can tell
            // them apart: they are kept as one, each page's last version and the last
            // size, which is what a checkpoint of them writes (and much smaller).
            let frames = coalesce(tail.commits);
            self.pending_bytes += frames.iter().map(|f| f.data.len() + 8).sum::<usize>();
            self.seq += 1;
            self.pending.push(Commit {
                from: self.seq,
                seq: self.seq,
                ts_ms: now,
                frames,
            });
            self.read = tail.end;
            if !tail.more {
                return;
            }
        }
    }

    fn ship(&mut self) {
        let (Some(first), Some(last)) = (self.pending.first(), self.pending.last()) else {
            return;
        };
        let (from, to, t0, t1) = (first.from, last.seq, first.ts_ms, last.ts_ms);
        let name = layout::object_name(&self.generation, Kind::Wal, from, to, t0, t1);
        let body = format::encode_wal(self.page_size, &self.pending);
        match self.put(&name, &body) {
            Ok(()) => {
                self.shipped_seq = to;
                self.shipped = self.read;
                self.pending.clear();
                self.bytes_since_snapshot += self.pending_bytes as u64;
                self.pending_bytes = 0;
                self.last_ship_ms = self.clock.now_millis();
                self.stats.oldest_pending_ms.store(0, Ordering::Relaxed);
                self.stats.steps.fetch_add(1, Ordering::Relaxed);
                self.levels[0].push(Shipped {
                    name,
                    first: from,
                    last: to,
                    t0,
                    t1,
                });
            }
            Err(()) => {
                let wait = self.next_backoff();
                self.retry_at_ms = self.clock.now_millis() + wait;
            }
        }
    }

    /// Everything shipped: the log may be checkpointed, with a snapshot when due. The
    /// checkpoint needs a moment when nothing unshipped is in the log; while writes
    /// keep arriving, what came since is shipped at once and the checkpoint tried
    /// again, a few times, then at the next pass (the log is checkpointed at the
    /// first pause in writing, as SQLite's own checkpoints are).
    fn maybe_checkpoint(&mut self) {
        if self.frames_since_checkpoint < CHECKPOINT_FRAMES {
            return;
        }
        for _ in 0..8 {
            let now = self.clock.now_millis();
            let snapshot = now - self.last_snapshot_ms >= SNAPSHOT_EVERY_MS
                || self.bytes_since_snapshot >= (SNAPSHOT_LOG_FACTOR * self.snapshot_size).max(16 << 20);
            match self.tap.checkpoint(Some(&self.shipped), snapshot) {
                Ok(Checkpoint::Behind) => {
                    self.read_log();
                    self.ship();
                    if !self.pending.is_empty() {
                        return;
                    }
                }
                Ok(Checkpoint::Done {
                    full,
                    position,
                    snapshot,
                }) => {
                    self.read = position;
                    self.shipped = position;
                    if full {
                        self.frames_since_checkpoint = 0;
                    }
                    if let Some(db) = snapshot {
                        self.put_snapshot(db);
                    }
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "replication: checkpoint failed; the log keeps growing until it works");
                    return;
                }
            }
        }
    }

    /// At stop: ship what is left, for a few seconds at most.
    fn finish(&mut self) {
        for _ in 0..10 {
            self.read_log();
            if self.pending.is_empty() {
                break;
            }
            self.ship();
            if !self.pending.is_empty() {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        if !self.pending.is_empty() {
            tracing::warn!(
                "replication stopped with unshipped writes; the next start begins with a snapshot that holds them"
            );
        }
        tracing::info!(position = self.shipped_seq, "replication stopped");
    }
}
