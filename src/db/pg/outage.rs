//! Telling the operator that PostgreSQL is unreachable once per outage, not once per
//! attempt. While the database is away the pool retries every connection it lacks
//! (up to every 2.5 s each, 16 of them) and every request times out on its checkout:
//! r2d2's own handler logged each failed attempt at ERROR, hundreds of lines a minute
//! that bury the one line that matters. Here the first failure of a run is a warning
//! with its cause, a reminder follows at most every `REMIND_EVERY` with the count, and
//! the end of the run is one line saying how long it lasted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a failure that goes on is mentioned again.
const REMIND_EVERY: Duration = Duration::from_secs(30);

/// One kind of failure that comes in runs: `failed` on each, `ended` when things work.
#[derive(Debug, Default)]
pub(super) struct Burst {
    /// Whether a run is under way: lets `ended`, called on every success, skip the lock.
    active: AtomicBool,
    run: Mutex<Run>,
}

/// What a failure should say.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Report {
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
    count: u64,
}

impl Run {
    fn fail(&mut self, now: Instant) -> Report {
        self.count += 1;
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

    /// The run's failures and length, if one was under way.
    fn end(&mut self, now: Instant) -> Option<(u64, Duration)> {
        let started = self.started.take()?;
        self.reported = None;
        Some((std::mem::take(&mut self.count), now.duration_since(started)))
    }
}

impl Burst {
    pub(super) fn failed(&self) -> Report {
        let mut run = self.run.lock().unwrap_or_else(|p| p.into_inner());
        self.active.store(true, Ordering::Release);
        run.fail(Instant::now())
    }

    /// The failures and length of the run this success ends, if any.
    pub(super) fn ended(&self) -> Option<(u64, Duration)> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut run = self.run.lock().unwrap_or_else(|p| p.into_inner());
        self.active.store(false, Ordering::Release);
        run.end(Instant::now())
    }
}

/// The pool's connection failures (a connection attempt refused, a pooled connection
/// found dead at checkout), in place of r2d2's `LoggingErrorHandler`; a connection
/// made ends the run.
#[derive(Debug, Clone, Default)]
pub(super) struct Connections(Arc<Burst>);

impl r2d2::HandleError<postgres::Error> for Connections {
    fn handle_error(&self, error: postgres::Error) {
        match self.0.failed() {
            Report::First => tracing::warn!(%error, "PostgreSQL is unreachable; answering 503 until it is back"),
            Report::Again { count, lasting } => tracing::warn!(
                %error,
                failed_attempts = count,
                for_s = lasting.as_secs(),
                "PostgreSQL is still unreachable"
            ),
            Report::Quiet => tracing::debug!(%error, "PostgreSQL connection failed"),
        }
    }
}

impl r2d2::HandleEvent for Connections {
    fn handle_acquire(&self, _: r2d2::event::AcquireEvent) {
        if let Some((count, lasting)) = self.0.ended() {
            tracing::info!(
                failed_attempts = count,
                after_s = lasting.as_secs(),
                "PostgreSQL is reachable again"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_reported_first_then_every_so_often_then_ended() {
        let t0 = Instant::now();
        let mut run = Run::default();
        assert_eq!(run.end(t0), None, "no run, nothing to end");
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
        assert_eq!(run.end(t0 + REMIND_EVERY * 2), Some((5, REMIND_EVERY * 2)));
        assert_eq!(run.fail(t0 + REMIND_EVERY * 3), Report::First, "a new outage is news");
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
