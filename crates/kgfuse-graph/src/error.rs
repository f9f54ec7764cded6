use oxigraph::store::StorageError;

/// Errors of the graph layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// RocksDB or Oxigraph storage failure.
    #[error("graph storage: {0}")]
    Storage(#[from] StorageError),
    /// Another process holds the store open.
    #[error(
        "{path} is in use by another kgfuse process (RocksDB lock held); stop it, or use another data directory"
    )]
    Locked {
        /// Store directory.
        path: String,
    },
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// File concerned.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A data file is not valid RDF. Displayed as `file:line:column: message`.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// File concerned.
        file: String,
        /// One-based line.
        line: u64,
        /// One-based column.
        column: u64,
        /// Parser message.
        message: String,
    },
    /// The format of a file could not be guessed or is unknown.
    #[error("{0}")]
    UnknownFormat(String),
    /// A SPARQL query or update does not parse.
    #[error("SPARQL syntax error: {0}")]
    Syntax(String),
    /// A read-only entry point was given a SPARQL Update.
    #[error(
        "read-only: SPARQL Update (INSERT, DELETE, LOAD, CLEAR, CREATE, DROP, COPY, MOVE, ADD) \
         is refused here; send a SELECT, ASK, CONSTRUCT or DESCRIBE query"
    )]
    UpdateRefused,
    /// A SPARQL query or update failed while running.
    #[error("SPARQL evaluation failed: {0}")]
    Evaluation(String),
    /// A SPARQL feature kgfuse does not offer (SERVICE, LOAD, custom functions):
    /// the request is refused, nothing was read from or written to elsewhere.
    #[error("not offered: {0}")]
    Unsupported(String),
    /// A query ran longer than its timeout and was cancelled.
    #[error("query cancelled after the {0:?} timeout")]
    Timeout(std::time::Duration),
    /// A template variable or option was misused.
    #[error("{0}")]
    Usage(String),
    /// The server cut a result at its row cap (`X-SPARQL-MaxRows`, Virtuoso's
    /// `ResultSetMaxRows`): a short answer is never passed on as a whole one.
    #[error(
        "the server cut the results at its cap of {0} rows (X-SPARQL-MaxRows): add a LIMIT \
         below it or raise the server's ResultSetMaxRows"
    )]
    Truncated(usize),
    /// Results or RDF could not be written.
    #[error("serialization failed: {0}")]
    Serialize(String),
}

impl From<kgfuse_remote::RemoteError> for GraphError {
    /// Each kind of server failure becomes the graph error of the same kind.
    fn from(error: kgfuse_remote::RemoteError) -> Self {
        use kgfuse_remote::RemoteError;
        match error {
            RemoteError::Evaluation(message) => Self::Evaluation(message),
            RemoteError::Timeout(timeout) => Self::Timeout(timeout),
            RemoteError::Usage(message) => Self::Usage(message),
            RemoteError::Truncated(cap) => Self::Truncated(cap),
            RemoteError::Serialize(message) => Self::Serialize(message),
        }
    }
}
