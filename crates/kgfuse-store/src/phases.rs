//! How long each phase of a write took, logged at debug level
//! (`KGFUSE_LOG=kgfuse_store=debug kgfuse load ...`): where a slow load spends
//! its time, without a profiler.

use std::time::Instant;

/// Times consecutive phases of one write.
pub(crate) struct Phases {
    write: &'static str,
    started: Instant,
    last: Instant,
}

impl Phases {
    /// Starts the clock for a write called `write` (`load`, `ingest`).
    pub(crate) fn start(write: &'static str) -> Self {
        let now = Instant::now();
        Self {
            write,
            started: now,
            last: now,
        }
    }

    /// Logs the time since the previous phase ended as `phase`'s.
    pub(crate) fn lap(&mut self, phase: &str) {
        let now = Instant::now();
        tracing::debug!(
            "{} {phase}: {:.1} ms",
            self.write,
            now.duration_since(self.last).as_secs_f64() * 1e3
        );
        self.last = now;
    }

    /// Logs the whole write's time.
    pub(crate) fn finish(self) {
        tracing::debug!(
            "{} total: {:.1} ms",
            self.write,
            self.started.elapsed().as_secs_f64() * 1e3
        );
    }
}
