//! The audit log: one JSON line per request — time, token id (never the token),
//! store, endpoint, status, duration, rows returned — on stderr or appended to a
//! file.

use axum::http::Method;
use axum::response::Response;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Where the audit lines go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AuditTarget {
    /// No audit log.
    #[default]
    Off,
    /// Standard error, beside the server's log.
    Stderr,
    /// Appended to this file (created with mode 0600 when missing).
    File(PathBuf),
}

/// How many rows a response carries (a query's solutions or triples, a
/// retrieval's items): handlers put it in the response's extensions for the
/// audit log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowCount(pub(crate) usize);

/// The open audit log.
pub(crate) struct Audit {
    sink: Option<Mutex<Box<dyn Write + Send>>>,
}

impl Audit {
    /// Opens the target (a file is created or appended to).
    pub(crate) fn open(target: &AuditTarget) -> std::io::Result<Self> {
        let sink: Option<Box<dyn Write + Send>> = match target {
            AuditTarget::Off => None,
            AuditTarget::Stderr => Some(Box::new(std::io::stderr())),
            AuditTarget::File(path) => {
                let mut options = std::fs::OpenOptions::new();
                options.create(true).append(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                Some(Box::new(options.open(path)?))
            }
        };
        Ok(Self {
            sink: sink.map(Mutex::new),
        })
    }

    /// Writes one request's line; a failed write is logged, never fails the request.
    pub(crate) fn record(
        &self,
        method: &Method,
        path: &str,
        store: Option<&str>,
        token: Option<&str>,
        response: &Response,
        took: Duration,
    ) {
        let Some(sink) = &self.sink else {
            return;
        };
        let line = serde_json::json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "token": token,
            "store": store,
            "method": method.as_str(),
            "endpoint": path,
            "status": response.status().as_u16(),
            "ms": (took.as_secs_f64() * 1000.0 * 10.0).round() / 10.0,
            "rows": response.extensions().get::<RowCount>().map(|rows| rows.0),
        });
        let mut sink = sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = writeln!(sink, "{line}").and_then(|()| sink.flush()) {
            tracing::error!("cannot write the audit log: {error}");
        }
    }
}
