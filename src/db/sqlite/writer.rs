//! The writer thread: owns the only read-write connection, drains its queue into one
//! transaction per batch (group commit) and runs each operation after the first under a
//! SAVEPOINT.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::db::{DbError, Tx};

/// Upper bound on operations per transaction, so one batch cannot hold the lock long.
const MAX_BATCH: usize = 512;

/// Told the outcome of the batch's COMMIT; replies to the waiting request.
type Completion = Box<dyn FnOnce(Result<(), Failure>) + Send>;

/// Why a batch was not committed, as each of its operations is told.
#[derive(Clone, Debug)]
enum Failure {
    /// The disk is full (`SQLITE_FULL`): logged once per run by `outage`.
    Full,
    Other(String),
}

impl Failure {
    /// Classifies an engine error and logs it: a full disk once per run (`outage`),
    /// anything else each time, with `what` failed.
    fn of(e: &rusqlite::Error, what: &str) -> Self {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            let _ = crate::db::outage::disk_full(e);
            Failure::Full
        } else {
            tracing::error!(error = %e, "{what}");
            Failure::Other(e.to_string())
        }
    }

    fn into_error(self) -> DbError {
        match self {
            Failure::Full => DbError::Full,
            Failure::Other(reason) => DbError::Commit(reason),
        }
    }
}

trait WriteJob: Send {
    /// Runs the operation; `true` when it succeeded and its savepoint is to be kept.
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Completion);
    /// Answers without running, when the batch cannot even begin.
    fn abandon(self: Box<Self>, reason: Failure);
}

struct Job<F, T> {
    op: F,
    reply: oneshot::Sender<Result<T, DbError>>,
}

impl<F, T> WriteJob for Job<F, T>
where
    F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
    T: Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Completion) {
        let Job { op, reply } = *self;
        let tx = Tx::sqlite(conn);
        let result = catch_unwind(AssertUnwindSafe(|| op(&tx))).unwrap_or(Err(DbError::Panicked));
        let ok = result.is_ok();
        let completion: Completion = Box::new(move |commit| {
            // A result is only reported once it is committed: a client is never told
            // of a write that a crash could still undo.
            let outcome = match commit {
                Ok(()) => result,
                Err(e) => Err(e.into_error()),
            };
            let _ = reply.send(outcome);
        });
        (ok, completion)
    }

    fn abandon(self: Box<Self>, reason: Failure) {
        let _ = self.reply.send(Err(reason.into_error()));
    }
}

enum Msg {
    Job(Box<dyn WriteJob>),
    Stop(std::sync::mpsc::Sender<()>),
}

/// Counters for metrics and benchmarks.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriterStats {
    pub batches: u64,
    pub operations: u64,
    pub commit_micros_total: u64,
}

#[derive(Default)]
struct Counters {
    /// Operations sent and not yet taken by the writer thread: the queue's bound is
    /// counted rather than preallocated (a bounded channel of 8,192 would hold 256 KB
    /// from start-up on).
    queued: AtomicUsize,
    batches: AtomicU64,
    operations: AtomicU64,
    commit_micros: AtomicU64,
}

/// Called after each successful group commit (replication's wake-up).
pub type CommitHook = Box<dyn Fn() + Send + Sync>;

#[derive(Clone)]
pub struct Writer {
    queue: Sender<Msg>,
    capacity: usize,
    counters: Arc<Counters>,
    hook: Arc<OnceLock<CommitHook>>,
}

impl Writer {
    pub fn start(conn: Connection, capacity: usize) -> Result<Self, DbError> {
        let (queue, rx) = channel();
        let counters = Arc::new(Counters::default());
        let hook: Arc<OnceLock<CommitHook>> = Arc::default();
        let (thread_counters, thread_hook) = (counters.clone(), hook.clone());
        std::thread::Builder::new()
            .name("tessera-db-writer".into())
            .spawn(move || run(conn, rx, &thread_counters, &thread_hook))
            .map_err(|e| DbError::Open(format!("cannot start writer thread: {e}")))?;
        Ok(Self {
            queue,
            capacity: capacity.max(1),
            counters,
            hook,
        })
    }

    /// Sets the function told of each commit; only the first call has an effect.
    pub fn on_commit(&self, hook: CommitHook) {
        let _ = self.hook.set(hook);
    }

    pub fn submit<T, F>(&self, op: F) -> Result<oneshot::Receiver<Result<T, DbError>>, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let queued = &self.counters.queued;
        if queued.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            queued.fetch_sub(1, Ordering::Relaxed);
            return Err(DbError::Busy);
        }
        let (reply, rx) = oneshot::channel();
        match self.queue.send(Msg::Job(Box::new(Job { op, reply }))) {
            Ok(()) => Ok(rx),
            Err(_) => {
                queued.fetch_sub(1, Ordering::Relaxed);
                Err(DbError::WriterGone)
            }
        }
    }

    pub fn stats(&self) -> WriterStats {
        WriterStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            operations: self.counters.operations.load(Ordering::Relaxed),
            commit_micros_total: self.counters.commit_micros.load(Ordering::Relaxed),
        }
    }

    /// Commits everything queued before this call, then stops the thread.
    pub fn shutdown(&self) {
        let (ack, done) = std::sync::mpsc::channel();
        if self.queue.send(Msg::Stop(ack)).is_ok() {
            let _ = done.recv_timeout(Duration::from_secs(30));
        }
    }
}

fn run(conn: Connection, rx: Receiver<Msg>, counters: &Counters, hook: &OnceLock<CommitHook>) {
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::new();
        let mut stop = None;
        let taken = |job: Box<dyn WriteJob>| {
            counters.queued.fetch_sub(1, Ordering::Relaxed);
            job
        };
        match first {
            Msg::Job(job) => batch.push(taken(job)),
            Msg::Stop(ack) => stop = Some(ack),
        }
        while stop.is_none() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Job(job)) => batch.push(taken(job)),
                Ok(Msg::Stop(ack)) => stop = Some(ack),
                Err(_) => break,
            }
        }
        if !batch.is_empty() && commit_batch(&conn, batch, counters) {
            if let Some(hook) = hook.get() {
                hook();
            }
        }
        if let Some(ack) = stop {
            let _ = ack.send(());
            return;
        }
    }
}

/// Runs and commits one batch; `true` when the commit succeeded.
fn commit_batch(conn: &Connection, batch: Vec<Box<dyn WriteJob>>, counters: &Counters) -> bool {
    let started = Instant::now();
    let size = batch.len() as u64;
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let failure = Failure::of(&e, "writer could not begin a transaction");
        for job in batch {
            job.abandon(failure.clone());
        }
        return false;
    }
    let mut completions = Vec::with_capacity(batch.len());
    // Whether the batch writes anything: an operation refused for a full disk is
    // rolled back (the transaction, or its savepoint), and the empty COMMIT that
    // follows proves no room.
    let mut kept = false;
    let mut jobs = batch.into_iter();
    while let Some(job) = jobs.next() {
        if !kept {
            // Nothing of the batch is in the transaction yet, so the operation runs in
            // it directly: rolling the transaction back undoes a failed one as its
            // savepoint would, without the savepoint's journal, which copies every page
            // the operation changes.
            let (ok, completion) = job.run(conn);
            completions.push(completion);
            if ok {
                kept = true;
                continue;
            }
            let begun = || {
                // SQLite has already rolled back after some errors (a full disk, I/O).
                if !conn.is_autocommit() {
                    conn.execute_batch("ROLLBACK")?;
                }
                conn.execute_batch("BEGIN IMMEDIATE")
            };
            if let Err(e) = begun() {
                let failure = Failure::of(&e, "writer could not begin a transaction again");
                // The failed operations report their own errors; the rest could not run.
                for completion in completions {
                    completion(Ok(()));
                }
                for job in jobs {
                    job.abandon(failure.clone());
                }
                return false;
            }
            continue;
        }
        if let Err(e) = conn.execute_batch("SAVEPOINT op") {
            job.abandon(Failure::Other(e.to_string()));
            continue;
        }
        let (ok, completion) = job.run(conn);
        kept |= ok;
        let end = if ok { "RELEASE op" } else { "ROLLBACK TO op; RELEASE op" };
        if let Err(e) = conn.execute_batch(end) {
            tracing::error!(error = %e, "writer could not close a savepoint");
            completion(Err(Failure::Other(e.to_string())));
            continue;
        }
        completions.push(completion);
    }
    // A full disk fails the COMMIT (the log cannot grow) and rolls the batch back:
    // every operation in it is told so, and nothing of it is kept.
    let commit = conn.execute_batch("COMMIT").map_err(|e| {
        let failure = Failure::of(&e, "group commit failed; the batch is rolled back");
        let _ = conn.execute_batch("ROLLBACK");
        failure
    });
    // Counted before anyone is answered, so a caller that has its reply sees its
    // operation in the statistics.
    counters.batches.fetch_add(1, Ordering::Relaxed);
    counters.operations.fetch_add(size, Ordering::Relaxed);
    counters
        .commit_micros
        .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    let committed = commit.is_ok();
    if committed && kept {
        crate::db::outage::wrote();
    }
    for completion in completions {
        completion(commit.clone());
    }
    committed
}
