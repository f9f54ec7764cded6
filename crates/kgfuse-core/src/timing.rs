//! Wall time spent inside a component, summed over calls, so a caller can split a
//! request's latency into "inside Oxigraph", "inside LanceDB", "embedding" and
//! "kgfuse's own code" (the retrieval benchmark does).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A shared, thread-safe running total of wall time and of the calls it was
/// spent in. Clones share the totals.
#[derive(Debug, Clone, Default)]
pub struct TimeSpent(Arc<Totals>);

#[derive(Debug, Default)]
struct Totals {
    nanos: AtomicU64,
    calls: AtomicU64,
}

impl TimeSpent {
    /// Adds the duration of one call.
    pub fn add(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.0.nanos.fetch_add(nanos, Ordering::Relaxed);
        self.0.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs `f` and adds its wall time.
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(start.elapsed());
        out
    }

    /// The total so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.nanos.load(Ordering::Relaxed))
    }

    /// How many calls were measured so far.
    pub fn calls(&self) -> u64 {
        self.0.calls.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_total() {
        let spent = TimeSpent::default();
        let clone = spent.clone();
        clone.add(Duration::from_millis(3));
        assert_eq!(spent.measure(|| 7), 7);
        assert!(spent.total() >= Duration::from_millis(3));
        assert_eq!(spent.calls(), 2);
    }
}
