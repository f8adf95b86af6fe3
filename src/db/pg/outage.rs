//! Telling the operator that PostgreSQL is unreachable once per outage, not once per
//! attempt (see `db/outage.rs`). While the database is away the pool retries every
//! connection it lacks (up to every 2.5 s each, 16 of them) and every request times
//! out on its checkout: r2d2's own handler logged each failed attempt at ERROR,
//! hundreds of lines a minute that bury the one line that matters.

use std::sync::Arc;

use crate::db::outage::{Burst, Report};

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
