//! The one place that reads wall-clock time; tests move it instead of sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, the unit every expiry in Tessera is stored in.
pub type UnixTime = i64;

/// Wall clock with an adjustable offset. Cloning shares the offset, so a test that
/// advances its handle moves the clock the server reads.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset: Arc<AtomicI64>,
}

impl Clock {
    pub fn system() -> Self {
        Self::default()
    }

    /// Current time in whole seconds (JWT `NumericDate`, RFC 7519 §2).
    #[allow(clippy::disallowed_methods)] // the one sanctioned reading of the wall clock
    pub fn now(&self) -> UnixTime {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        secs + self.offset.load(Ordering::Relaxed)
    }

    /// Current time in milliseconds, for replication's point-in-time positions.
    #[allow(clippy::disallowed_methods)] // the one sanctioned reading of the wall clock
    pub fn now_millis(&self) -> i64 {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        millis + self.offset.load(Ordering::Relaxed) * 1000
    }

    /// Moves this clock (and every clone of it) forward by `secs`.
    pub fn advance(&self, secs: i64) {
        self.offset.fetch_add(secs, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_a_clone_moves_the_original() {
        let clock = Clock::system();
        let before = clock.now();
        clock.clone().advance(3600);
        assert!(clock.now() >= before + 3600);
    }
}
