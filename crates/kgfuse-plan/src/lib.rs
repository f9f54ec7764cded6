//! From a question to SPARQL and its answer, over the paired store.
//!
//! - [`lexicon`]: every named node of the store as search terms (BM25 over names
//!   and descriptions, label candidates for linking);
//! - [`linking`]: the question's words to the store's entities, classes and
//!   properties;
//! - [`plan`]: a query plan (what a question asks, in the store's terms) and
//!   its compiler to SPARQL algebra; [`cues`] and [`planner`] fill plans from
//!   the question's words, [`model_planner`] has a language model fill one;
//! - [`query_graphs`]: small query graphs from what the question links to, built
//!   as SPARQL algebra and run offline (lookups: one to three joins);
//! - [`text_to_sparql`]: a language model writes the query, kgfuse checks it before
//!   it runs, with [`sparql_grammar`] holding a small model to the store's terms;
//! - [`sparql`]: generated queries that the text they are about cannot change.
//!
//! Retrieval (`kgfuse-retrieve`) calls these stages and fuses what they return
//! with its other channels.

pub mod cues;
pub mod lexicon;
pub mod linking;
pub mod model_planner;
pub mod plan;
pub mod planner;
pub mod query_graphs;
pub mod sparql;
pub mod sparql_grammar;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text_to_sparql;

use kgfuse_store::StoreError;

/// Errors of linking, query construction and text-to-SPARQL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The graph failed (a generated query, say).
    #[error(transparent)]
    Graph(#[from] kgfuse_graph::GraphError),
    /// The request is unusable.
    #[error("{0}")]
    Invalid(String),
    /// The language model failed.
    #[error(transparent)]
    Model(#[from] kgfuse_llm::LlmError),
}
