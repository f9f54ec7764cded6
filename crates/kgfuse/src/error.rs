//! The facade's error: one kind per part that can fail, each keeping that
//! part's own error for a caller that looks closer. Messages state what went
//! wrong; the command line adds its own advice (which flag to pass), so an HTTP
//! or MCP caller never reads about flags it does not have.

use kgfuse_graph::GraphError;
use kgfuse_ingest::IngestError;
use kgfuse_llm::LlmError;
use kgfuse_retrieve::{RetrieveError, TimedOut};
use kgfuse_store::StoreError;
use kgfuse_vector::EmbedError;

/// Errors of the kgfuse API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The paired store: graph, vectors, embedder, configuration, or a write's
    /// outcome ([`StoreError::NothingWritten`], [`StoreError::PartlyWritten`]).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The language model: its server failed, or its reply could not be used.
    #[error(transparent)]
    Model(#[from] LlmError),
    /// Ingest: the sources cannot be read or used as a whole (single bad files
    /// are reported, not raised).
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// An ingest that stopped part way: the files of its earlier batches are in
    /// the store, and a re-run finds them unchanged and writes the rest.
    #[error(
        "ingest stopped with {stored} of {files} files in the store (a re-run skips them and writes the rest): {cause}"
    )]
    IngestStopped {
        /// Files written or found unchanged before the failure.
        stored: usize,
        /// Files the ingest had to write or check.
        files: usize,
        /// Why it stopped.
        cause: Box<Error>,
    },
    /// A file the caller named cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The lexicon's index in the store directory (names and BM25) failed;
    /// `kgfuse check --repair` rebuilds it from the graph.
    #[error(transparent)]
    Lexicon(#[from] kgfuse_retrieve::LexiconError),
    /// Invalid input from the caller (an IRI that does not parse, an empty
    /// question, options that contradict each other).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// Whether the disk ran out of space somewhere in this error's causes.
    pub fn is_disk_full(&self) -> bool {
        kgfuse_core::error_chain_mentions_disk_full(self)
    }

    /// The store's error, when the store failed (directly or under an ingest
    /// that stopped part way).
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            Self::Store(error) => Some(error),
            Self::IngestStopped { cause, .. } => cause.store(),
            _ => None,
        }
    }

    /// The graph's error, when the graph failed.
    pub fn graph(&self) -> Option<&GraphError> {
        match self.store()? {
            StoreError::Graph(error) => Some(error),
            _ => None,
        }
    }
}

impl From<GraphError> for Error {
    fn from(error: GraphError) -> Self {
        Self::Store(error.into())
    }
}

impl From<EmbedError> for Error {
    fn from(error: EmbedError) -> Self {
        Self::Store(error.into())
    }
}

/// Retrieval has no failure of its own kind: each of its errors arrives as the
/// part that failed (the store or graph, the model) or as the caller's input;
/// a timeout as the query's or the model's own timeout error.
impl From<RetrieveError> for Error {
    fn from(error: RetrieveError) -> Self {
        match error {
            RetrieveError::Store(e) => Self::Store(e),
            RetrieveError::Graph(e) | RetrieveError::Timeout(TimedOut::Query(e)) => e.into(),
            RetrieveError::Model(e) | RetrieveError::Timeout(TimedOut::Model(e)) => Self::Model(e),
            RetrieveError::Invalid(why) => Self::Invalid(why),
            RetrieveError::Lexicon(e) => Self::Lexicon(e),
        }
    }
}

impl From<kgfuse_shacl::ShaclError> for Error {
    fn from(error: kgfuse_shacl::ShaclError) -> Self {
        Self::Store(error.into())
    }
}
