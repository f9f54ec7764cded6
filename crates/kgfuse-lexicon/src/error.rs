//! The one error of the question-answering layers: the lexicon and linking,
//! query plans, text-to-SPARQL, understanding, retrieval and the answer loop
//! all return [`RetrieveError`], so a failure reaches the caller as the kind
//! it began as: a store failure is never reported as "invalid input".

use kgfuse_graph::GraphError;
use kgfuse_llm::LlmError;
use kgfuse_store::StoreError;

use crate::lexicon::LexiconError;

/// Errors of everything from a question to its context or answer. Not
/// `non_exhaustive`, on purpose: a new kind must be a compile error in every
/// conversion, never a fallback to another kind.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// The store failed (its vectors, its embedder, or its graph under it).
    #[error(transparent)]
    Store(StoreError),
    /// The graph failed (a generated query, say).
    #[error(transparent)]
    Graph(GraphError),
    /// The language model failed, or its reply could not be used.
    #[error(transparent)]
    Model(LlmError),
    /// The request is unusable (an empty question, top-k of 0).
    #[error("{0}")]
    Invalid(String),
    /// A query or a model request ran out of time.
    #[error(transparent)]
    Timeout(TimedOut),
    /// The lexicon's index failed (its files, or tantivy under them).
    #[error(transparent)]
    Lexicon(#[from] LexiconError),
}

/// What ran out of time, with the error that said so.
#[derive(Debug, thiserror::Error)]
pub enum TimedOut {
    /// A SPARQL query ([`GraphError::Timeout`]).
    #[error(transparent)]
    Query(GraphError),
    /// A model request ([`LlmError::Timeout`]).
    #[error(transparent)]
    Model(LlmError),
}

/// A timeout keeps its kind; every other graph failure is `Graph`.
impl From<GraphError> for RetrieveError {
    fn from(error: GraphError) -> Self {
        match error {
            GraphError::Timeout(_) => Self::Timeout(TimedOut::Query(error)),
            other => Self::Graph(other),
        }
    }
}

/// A query that timed out under the store is a timeout; every other store
/// failure is `Store`.
impl From<StoreError> for RetrieveError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Graph(graph @ GraphError::Timeout(_)) => {
                Self::Timeout(TimedOut::Query(graph))
            }
            other => Self::Store(other),
        }
    }
}

/// A model request that timed out is a timeout; every other model failure is
/// `Model`.
impl From<LlmError> for RetrieveError {
    fn from(error: LlmError) -> Self {
        match error {
            LlmError::Timeout { .. } => Self::Timeout(TimedOut::Model(error)),
            other => Self::Model(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_failure_keeps_its_kind() {
        let query = RetrieveError::from(GraphError::Timeout(Duration::from_secs(2)));
        assert!(
            matches!(query, RetrieveError::Timeout(TimedOut::Query(_))),
            "{query:?}"
        );
        let under_store = RetrieveError::from(StoreError::Graph(GraphError::Timeout(
            Duration::from_secs(2),
        )));
        assert!(
            matches!(under_store, RetrieveError::Timeout(TimedOut::Query(_))),
            "{under_store:?}"
        );
        let model = RetrieveError::from(LlmError::Timeout {
            timeout: Duration::from_secs(30),
            attempts: 2,
        });
        assert!(
            matches!(model, RetrieveError::Timeout(TimedOut::Model(_))),
            "{model:?}"
        );
        let syntax = RetrieveError::from(GraphError::Syntax("no".into()));
        assert!(matches!(syntax, RetrieveError::Graph(_)), "{syntax:?}");
        let store = RetrieveError::from(StoreError::Graph(GraphError::Syntax("no".into())));
        assert!(matches!(store, RetrieveError::Store(_)), "{store:?}");
        let service = RetrieveError::from(LlmError::Service("down".into()));
        assert!(matches!(service, RetrieveError::Model(_)), "{service:?}");
        // The message is the original's.
        assert_eq!(
            query.to_string(),
            GraphError::Timeout(Duration::from_secs(2)).to_string()
        );
    }
}
