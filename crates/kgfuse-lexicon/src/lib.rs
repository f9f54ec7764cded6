//! Names to nodes, over the paired store.
//!
//! - [`lexicon`]: every named node of the store as search terms (BM25 over names
//!   and descriptions, label candidates for linking);
//! - [`linking`]: the question's words to the store's entities, classes and
//!   properties;
//! - [`sparql`]: generated queries that the text they are about cannot change,
//!   and the whole-store reads the lexicon is built from.
//!
//! `kgfuse-plan` builds queries and plans on what linking finds; retrieval
//! (`kgfuse-retrieve`) uses the lexicon's BM25 and linking as channels.

pub mod lexicon;
pub mod linking;
pub mod sparql;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use kgfuse_store::StoreError;

/// Errors of the lexicon, linking and generated queries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LexiconError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The graph failed (a generated query, say).
    #[error(transparent)]
    Graph(#[from] kgfuse_graph::GraphError),
    /// The request is unusable.
    #[error("{0}")]
    Invalid(String),
}
