//! Telling the operator of a failure that comes in runs once per run, not once per
//! attempt: PostgreSQL unreachable (`pg/outage.rs`), or the disk full. While the
//! database is away the pool retries every connection it lacks and every request
//! times out on its checkout; while the disk is full every write fails. One line per
//! failure would be hundreds a minute that bury the one that matters. Here the first
//! failure of a run is logged with its cause, a reminder follows at most every
//! `REMIND_EVERY` with the count, and the end of the run is one line saying how long
//! it lasted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use super::DbError;

/// How often a failure that goes on is mentioned again.
const REMIND_EVERY: Duration = Duration::from_secs(30);

/// One kind of failure that comes in runs: `failed` on each, `ended` when things work.
#[derive(Debug, Default)]
pub(crate) struct Burst {
    /// Whether a run is under way: lets `ended`, called on every success, skip the lock.
    active: AtomicBool,
    run: Mutex<Run>,
}

/// What a failure should say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// The first of a run: say what went wrong.
    First,
    /// Still failing: `count` failures in `lasting`.
    Again { count: u64, lasting: Duration },
    /// Already said.
    Quiet,
}

#[derive(Debug, Default)]
struct Run {
    started: Option<Instant>,
    reported: Option<Instant>,
    /// The latest failure of the run.
    last: Option<Instant>,
    count: u64,
}

impl Run {
    fn fail(&mut self, now: Instant) -> Report {
        self.count += 1;
        self.last = Some(now);
        match (self.started, self.reported) {
            (Some(started), Some(reported)) if now.duration_since(reported) >= REMIND_EVERY => {
                self.reported = Some(now);
                Report::Again {
                    count: self.count,
                    lasting: now.duration_since(started),
                }
            }
            (Some(_), _) => Report::Quiet,
            (None, _) => {
                self.started = Some(now);
                self.reported = Some(now);
                Report::First
            }
        }
    }

    /// The run's failures and length, if one was under way and its latest failure is
    /// at least `quiet` old.
    fn end(&mut self, now: Instant, quiet: Duration) -> Option<(u64, Duration)> {
        if self.last.is_some_and(|last| now.duration_since(last) < quiet) {
            return None;
        }
        let started = self.started.take()?;
        self.reported = None;
        self.last = None;
        Some((std::mem::take(&mut self.count), now.duration_since(started)))
    }
}

impl Burst {
    pub(crate) fn failed(&self) -> Report {
        let mut run = self.run.lock().unwrap_or_else(|p| p.into_inner());
        self.active.store(true, Ordering::Release);
        run.fail(Instant::now())
    }

    /// The failures and length of the run this success ends, if any.
    pub(crate) fn ended(&self) -> Option<(u64, Duration)> {
        self.ended_after(Duration::ZERO)
    }

    /// `ended`, but a success within `quiet` of the latest failure leaves the run
    /// going: where successes and failures interleave (a full disk, where a write
    /// sometimes fits in space the log has freed), the run ends only once the
    /// failures have stopped.
    pub(crate) fn ended_after(&self, quiet: Duration) -> Option<(u64, Duration)> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut run = self.run.lock().unwrap_or_else(|p| p.into_inner());
        let ended = run.end(Instant::now(), quiet)?;
        self.active.store(false, Ordering::Release);
        Some(ended)
    }
}

/// Writes refused because the disk is full (SQLite's `SQLITE_FULL`, PostgreSQL's
/// `disk_full`, 53100).
static DISK_FULL: LazyLock<Burst> = LazyLock::new(Burst::default);

/// How long writes must go without a refusal before a full disk counts as over.
const DISK_ROOM_AFTER: Duration = Duration::from_secs(2);

/// A write failed for want of disk space: said once per run, and the request is
/// answered 503 (`DbError::Full`). Nothing was written, so the client can retry; reads
/// go on meanwhile, and the next write after room is made succeeds, without a restart.
pub(super) fn disk_full(cause: &dyn std::fmt::Display) -> DbError {
    match DISK_FULL.failed() {
        Report::First => tracing::error!(
            error = %cause,
            "the disk is full: writes are refused with 503 until there is room; reads go on"
        ),
        Report::Again { count, lasting } => tracing::error!(
            error = %cause,
            refused_writes = count,
            for_s = lasting.as_secs(),
            "the disk is still full"
        ),
        Report::Quiet => tracing::debug!(error = %cause, "write refused: the disk is full"),
    }
    DbError::Full
}

/// A write committed: ends a run of disk-full refusals, if one was under way (an
/// atomic load otherwise).
pub(super) fn wrote() {
    if let Some((count, lasting)) = DISK_FULL.ended_after(DISK_ROOM_AFTER) {
        tracing::info!(
            refused_writes = count,
            after_s = lasting.as_secs(),
            "there is room on the disk again; writes resume"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_reported_first_then_every_so_often_then_ended() {
        let t0 = Instant::now();
        let mut run = Run::default();
        assert_eq!(run.end(t0, Duration::ZERO), None, "no run, nothing to end");
        assert_eq!(run.fail(t0), Report::First);
        assert_eq!(run.fail(t0 + Duration::from_secs(1)), Report::Quiet);
        assert_eq!(run.fail(t0 + REMIND_EVERY - Duration::from_millis(1)), Report::Quiet);
        assert_eq!(
            run.fail(t0 + REMIND_EVERY),
            Report::Again {
                count: 4,
                lasting: REMIND_EVERY
            }
        );
        assert_eq!(run.fail(t0 + REMIND_EVERY + Duration::from_secs(1)), Report::Quiet);
        assert_eq!(
            run.end(t0 + REMIND_EVERY * 2, Duration::ZERO),
            Some((5, REMIND_EVERY * 2))
        );
        assert_eq!(run.fail(t0 + REMIND_EVERY * 3), Report::First, "a new outage is news");
    }

    #[test]
    fn a_run_with_a_quiet_period_ends_only_once_the_failures_have_stopped() {
        let t0 = Instant::now();
        let quiet = Duration::from_secs(2);
        let mut run = Run::default();
        assert_eq!(run.fail(t0), Report::First);
        assert_eq!(
            run.end(t0 + Duration::from_secs(1), quiet),
            None,
            "a success between failures"
        );
        assert_eq!(
            run.fail(t0 + Duration::from_millis(1500)),
            Report::Quiet,
            "still the same run"
        );
        assert_eq!(run.end(t0 + Duration::from_millis(3000), quiet), None);
        assert_eq!(
            run.end(t0 + Duration::from_millis(3500), quiet),
            Some((2, Duration::from_millis(3500)))
        );
        assert_eq!(run.end(t0 + Duration::from_secs(9), quiet), None, "ended once");
    }

    #[test]
    fn a_burst_ends_once() {
        let burst = Burst::default();
        assert_eq!(burst.ended(), None);
        assert_eq!(burst.failed(), Report::First);
        assert_eq!(burst.failed(), Report::Quiet);
        assert_eq!(burst.ended().map(|(n, _)| n), Some(2));
        assert_eq!(burst.ended(), None);
    }
}
