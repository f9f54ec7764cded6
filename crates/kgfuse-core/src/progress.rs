//! Progress reporting without a terminal dependency.
//!
//! Libraries call a [`Progress`] observer; the command-line tool implements it with a
//! progress bar that only draws on a terminal, tests and servers pass [`NoProgress`].

/// Observer of long-running work (loading, embedding, repairing).
pub trait Progress: Send + Sync {
    /// A new stage begins; `total` is the number of units when known.
    fn start(&self, stage: &str, total: Option<u64>);
    /// `delta` more units of the current stage are done.
    fn advance(&self, delta: u64);
    /// The current stage is over.
    fn finish(&self);
}

/// A [`Progress`] that ignores every report.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _stage: &str, _total: Option<u64>) {}
    fn advance(&self, _delta: u64) {}
    fn finish(&self) {}
}
