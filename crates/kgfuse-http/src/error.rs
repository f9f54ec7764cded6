//! Errors as HTTP responses: a status and a one-line message, never a backtrace.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A failed request: the status and the message the client sees.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    /// Render as `{"error": message}` (the JSON API) instead of plain text (the
    /// SPARQL and Graph Store protocols).
    json: bool,
    /// A header to send with it (`WWW-Authenticate` with a 401).
    header: Option<(HeaderName, HeaderValue)>,
}

impl ApiError {
    /// An error with a plain-text body.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            json: false,
            header: None,
        }
    }

    /// The same error with a header.
    pub(crate) fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.header = Some((name, value));
        self
    }

    /// 400 Bad Request.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// The same error with a JSON body.
    pub(crate) fn into_json(mut self) -> Self {
        self.json = true;
        self
    }

    /// The HTTP status.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<kgfuse::Error> for ApiError {
    /// Input problems are 400, a query timeout 503, a failed language model 502,
    /// a full disk 507 (the message says whether the write committed); anything
    /// else is a 500 whose details go to the server log, not to the client.
    fn from(error: kgfuse::Error) -> Self {
        use kgfuse::Error as E;
        use kgfuse::GraphError as G;
        use kgfuse::StoreError as S;
        let status = match &error {
            E::Invalid(_) | E::Store(S::Invalid(_)) => StatusCode::BAD_REQUEST,
            E::Store(S::Graph(
                G::Syntax(_)
                | G::UpdateRefused
                | G::Usage(_)
                | G::Parse { .. }
                | G::UnknownFormat(_)
                | G::Unsupported(_),
            )) => StatusCode::BAD_REQUEST,
            E::Store(S::Graph(G::Timeout(_))) => StatusCode::SERVICE_UNAVAILABLE,
            _ if error.is_disk_full() => StatusCode::INSUFFICIENT_STORAGE,
            E::Model(_) => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INSUFFICIENT_STORAGE {
            tracing::error!("disk full: {error}");
            let outcome = match &error {
                E::Store(S::PartlyWritten { .. }) | E::IngestStopped { .. } => {
                    "the write's graph change is committed; the store finishes the rest \
                     (derived graph, vectors) before its next write, once there is space"
                }
                _ => "the write changed nothing",
            };
            return Self::new(
                status,
                format!("the disk holding the store is full: {outcome}"),
            );
        }
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!("internal error: {error}");
            return Self::new(status, "internal server error (details in the server log)");
        }
        Self::new(status, one_line(&error.to_string()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = if self.json {
            let body = serde_json::json!({ "error": self.message });
            (self.status, axum::Json(body)).into_response()
        } else {
            (
                self.status,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("{}\n", self.message),
            )
                .into_response()
        };
        if let Some((name, value)) = self.header {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// Collapses whitespace runs (parser messages span lines) into single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_full() -> kgfuse::StoreError {
        kgfuse::StoreError::Io {
            path: "graph/000034.log".into(),
            source: std::io::Error::from_raw_os_error(28),
        }
    }

    #[test]
    fn a_full_disk_is_507_saying_whether_the_write_committed() {
        let nothing = ApiError::from(kgfuse::Error::Store(kgfuse::StoreError::NothingWritten {
            operation: "load",
            cause: Box::new(disk_full()),
        }));
        assert_eq!(nothing.status(), StatusCode::INSUFFICIENT_STORAGE);
        assert!(
            nothing.message.contains("changed nothing"),
            "{}",
            nothing.message
        );
        assert!(!nothing.message.contains("000034"), "no server paths");
        let partly = ApiError::from(kgfuse::Error::Store(kgfuse::StoreError::PartlyWritten {
            operation: "load",
            committed: "10 quads from 1 files".into(),
            step: "writing the vector rows",
            cause: Box::new(disk_full()),
        }));
        assert_eq!(partly.status(), StatusCode::INSUFFICIENT_STORAGE);
        assert!(
            partly.message.contains("is committed"),
            "{}",
            partly.message
        );
        let other = ApiError::from(kgfuse::Error::Io {
            path: "x".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        });
        assert_eq!(other.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
