//! Progress bars on stderr, drawn only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kgfuse::Progress;
use std::io::IsTerminal;
use std::sync::Mutex;

/// A [`Progress`] that shows an indicatif bar (or spinner when the total is
/// unknown) on a terminal and stays silent when stderr is piped.
pub struct TerminalProgress {
    bar: Mutex<Option<ProgressBar>>,
    enabled: bool,
}

impl TerminalProgress {
    pub fn new() -> Self {
        Self {
            bar: Mutex::new(None),
            enabled: std::io::stderr().is_terminal(),
        }
    }
}

impl Progress for TerminalProgress {
    fn start(&self, stage: &str, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template(
                        "{msg:>24} [{bar:40}] {pos}/{len} ({per_sec}, {eta})",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{spinner} {msg} {pos} quads ({per_sec})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(stage.to_owned());
        if let Ok(mut slot) = self.bar.lock()
            && let Some(old) = slot.replace(bar)
        {
            old.finish_and_clear();
        }
    }

    fn advance(&self, delta: u64) {
        if let Ok(slot) = self.bar.lock()
            && let Some(bar) = slot.as_ref()
        {
            bar.inc(delta);
        }
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock()
            && let Some(bar) = slot.take()
        {
            bar.finish_and_clear();
        }
    }
}
