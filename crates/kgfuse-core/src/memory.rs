//! This process's resident memory (Linux `/proc/self/status`; 0 elsewhere), for
//! log lines and benchmarks that say where the memory goes.

/// Current resident set size (`VmRSS`), in MiB.
pub fn resident_mib() -> f64 {
    status_mib("VmRSS:")
}

/// Peak resident set size so far (`VmHWM`), in MiB.
pub fn peak_resident_mib() -> f64 {
    status_mib("VmHWM:")
}

/// Starts a new peak: Linux resets `VmHWM` to the current resident size when
/// `5` is written to `/proc/self/clear_refs`. Where that is refused, the next
/// [`peak_resident_mib`] is the process's peak so far.
pub fn reset_peak_resident() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A kB field of `/proc/self/status`, in MiB (0 where unavailable).
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_holds_memory_and_its_peak_is_at_least_that() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let now = resident_mib();
        assert!(now > 0.0, "{now}");
        reset_peak_resident();
        assert!(peak_resident_mib() + 1.0 >= resident_mib());
    }
}
