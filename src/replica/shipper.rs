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

use super::format::{self, Commit, ObjectKey, Snapshot};
use super::layout::{self, Kind};
use super::store::Store;
use crate::clock::Clock;
use crate::db::{Checkpoint, Db, Frame, WalPosition, WalTap};

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

    /// Generation start: a checkpointed file copied as position 0. Retried until it works
    /// (a long read elsewhere can keep a checkpoint from completing) or the server stops.
    fn first_snapshot(&mut self) -> bool {
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

    fn next_backoff(&mut self) -> i64 {
        self.backoff_ms = (self.backoff_ms * 2).clamp(200, 30_000);
        self.backoff_ms
    }

    /// Puts a snapshot of the state after the last shipped position (retrying with
    /// back-off when it is the generation's first).
    fn put_snapshot(&mut self, db: Vec<u8>) -> bool {
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

    /// Merges a level's objects into one of the next level once there are enough of
    /// them (or, for the first level, once the oldest is old enough).
    fn compact(&mut self) {
        let now = self.clock.now_millis();
        for (level, &count) in MERGE_COUNT.iter().enumerate() {
            let list = &self.levels[level];
            let due = list.len() >= count
                || (level == 0 && list.len() >= 2 && list.first().is_some_and(|o| now - o.t1 >= MERGE_AGE_MS));
            if !due {
                continue;
            }
            let parts = std::mem::take(&mut self.levels[level]);
            match self.merge(&parts) {
                Ok(merged) => {
                    for part in &parts {
                        if let Err(e) = self.store.delete(&part.name) {
                            tracing::warn!(error = %e, object = %part.name, "replication: a merged object stays behind");
                        }
                    }
                    self.levels[level + 1].push(merged);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "replication: compaction failed; will retry");
                    self.levels[level] = parts;
                    return;
                }
            }
        }
    }

    fn merge(&mut self, parts: &[Shipped]) -> Result<Shipped, String> {
        let mut commits = Vec::new();
        for part in parts {
            let bytes = self.store.get(&part.name).map_err(|e| e.to_string())?;
            let body = format::unwrap(self.key.as_ref(), &part.name, &bytes).map_err(|e| e.to_string())?;
            commits.extend(format::decode_wal(&part.name, &body).map_err(|e| e.to_string())?.1);
        }
        let commits = by_second(commits);
        let (first, last) = (&parts[0], &parts[parts.len() - 1]);
        let merged = Shipped {
            name: layout::object_name(&self.generation, Kind::Wal, first.first, last.last, first.t0, last.t1),
            first: first.first,
            last: last.last,
            t0: first.t0,
            t1: last.t1,
        };
        let body = format::encode_wal(self.page_size, &commits);
        self.put(&merged.name, &body)
            .map_err(|()| "the merged object could not be stored".to_string())?;
        Ok(merged)
    }

    fn retention(&mut self) {
        let now = self.clock.now_millis();
        self.last_retention_ms = now;
        let objects = match self.store.list("") {
            Ok(list) => layout::parse(&list),
            Err(e) => {
                tracing::warn!(error = %e, "replication: cannot list the target for retention");
                return;
            }
        };
        for o in layout::expired(objects, now - self.retention_ms, &self.generation) {
            if let Err(e) = self.store.delete(&o.name) {
                tracing::warn!(error = %e, object = %o.name, "replication: cannot delete an expired object");
                continue;
            }
            for level in &mut self.levels {
                level.retain(|s| s.name != o.name);
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

/// Consecutive commits of the same second joined into one: a restore to a point in
/// time is to the second, so nothing it can ask for is lost, and a page written many
/// times in that second is kept once. Seconds end on their last millisecond's
/// boundary (`(t - 1) / 1000`), so a commit at exactly `x.000` belongs to second `x`'s
/// restore point.
fn by_second(commits: Vec<Commit>) -> Vec<Commit> {
    let mut out: Vec<Commit> = Vec::new();
    let mut group: Vec<Commit> = Vec::new();
    let second = |c: &Commit| (c.ts_ms - 1).div_euclid(1000);
    for c in commits {
        if group.last().is_some_and(|g| second(g) != second(&c)) {
            out.push(join(std::mem::take(&mut group)));
        }
        group.push(c);
    }
    if !group.is_empty() {
        out.push(join(group));
    }
    out
}

fn join(group: Vec<Commit>) -> Commit {
    let (from, seq, ts_ms) = (
        group.first().map_or(0, |c| c.from),
        group.last().map_or(0, |c| c.seq),
        group.last().map_or(0, |c| c.ts_ms),
    );
    Commit {
        from,
        seq,
        ts_ms,
        frames: coalesce(group.into_iter().map(|c| c.frames).collect()),
    }
}

/// Consecutive transactions as one: the last version of each page, in page order,
/// the database size after the last one on the final frame.
fn coalesce(commits: Vec<Vec<Frame>>) -> Vec<Frame> {
    let size = commits.last().and_then(|c| c.last()).map_or(0, |f| f.db_size);
    let mut pages: std::collections::BTreeMap<u32, Vec<u8>> = std::collections::BTreeMap::new();
    for frame in commits.into_iter().flatten() {
        pages.insert(frame.pgno, frame.data);
    }
    let mut frames: Vec<Frame> = pages
        .into_iter()
        .filter(|(pgno, _)| *pgno <= size)
        .map(|(pgno, data)| Frame { pgno, db_size: 0, data })
        .collect();
    if let Some(last) = frames.last_mut() {
        last.db_size = size;
    }
    frames
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pgno: u32, db_size: u32, fill: u8) -> Frame {
        Frame {
            pgno,
            db_size,
            data: vec![fill; 4],
        }
    }

    #[test]
    fn transactions_read_together_keep_each_pages_last_version_and_the_last_size() {
        let merged = coalesce(vec![
            vec![f(2, 0, 1), f(1, 5, 1)],
            vec![f(5, 0, 2), f(2, 0, 2), f(1, 3, 2)],
        ]);
        assert_eq!(merged, vec![f(1, 0, 2), f(2, 3, 2)], "page 5 is beyond the last size");
    }

    #[test]
    fn compaction_joins_commits_of_one_second_and_keeps_seconds_apart() {
        let c = |seq: u64, ts_ms: i64, fill: u8| Commit {
            from: seq,
            seq,
            ts_ms,
            frames: vec![f(1, 1, fill)],
        };
        let joined = by_second(vec![c(1, 1_001, 1), c(2, 1_500, 2), c(3, 2_000, 3), c(4, 2_001, 4)]);
        assert_eq!(joined.len(), 2, "{joined:?}");
        assert_eq!(
            (joined[0].from, joined[0].seq, joined[0].ts_ms),
            (1, 3, 2_000),
            "x.000 closes second x"
        );
        assert_eq!(joined[0].frames, vec![f(1, 1, 3)]);
        assert_eq!((joined[1].from, joined[1].seq), (4, 4));
    }
}
