//! The facade's errors as the exceptions of `kgfuse.errors` (defined in Python,
//! so that each can also be the built-in exception it behaves like: a malformed
//! query is a `ValueError`, a timeout a `TimeoutError`). The message is the
//! facade's own, the one the CLI prints after `error:`.

use kgfuse::{Error, GraphError, StoreError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The name of the `kgfuse.errors` class for `error`.
fn class_name(error: &Error) -> &'static str {
    if let Some(graph) = error.graph() {
        return match graph {
            GraphError::Syntax(_) => "SparqlSyntaxError",
            GraphError::Parse { .. } | GraphError::UnknownFormat(_) => "RdfSyntaxError",
            GraphError::Timeout(_) => "QueryTimeoutError",
            GraphError::Io { .. } => "FileError",
            GraphError::Usage(_) => "InvalidInputError",
            _ => "StoreError",
        };
    }
    match error {
        Error::Invalid(_) | Error::Store(StoreError::Invalid(_)) => "InvalidInputError",
        Error::Io { .. } | Error::Store(StoreError::Io { .. }) => "FileError",
        Error::Model(_) => "ModelError",
        Error::Ingest(_) | Error::IngestStopped { .. } => "IngestError",
        _ => "StoreError",
    }
}

/// `error` as the exception of its kind, carrying its message.
pub(crate) fn to_python(py: Python<'_>, error: &Error) -> PyErr {
    raise(py, class_name(error), error.to_string())
}

/// An `InvalidInputError` about the caller's arguments.
pub(crate) fn invalid(message: String) -> PyErr {
    Python::attach(|py| raise(py, "InvalidInputError", message))
}

/// An instance of `kgfuse.errors.<class>` with `message`, as a Python error.
fn raise(py: Python<'_>, class: &str, message: String) -> PyErr {
    let made = py
        .import("kgfuse.errors")
        .and_then(|module| module.getattr(class))
        .and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        // Only when the package's Python half is missing (the module imported on
        // its own): still raise, with the message.
        Err(_) => PyRuntimeError::new_err(message),
    }
}
