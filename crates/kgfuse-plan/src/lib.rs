//! From a question to SPARQL and its answer, over the paired store, on what
//! `kgfuse-lexicon` links the question's words to.
//!
//! - [`plan`]: a query plan (what a question asks, in the store's terms) and
//!   its compiler to SPARQL algebra; [`cues`] and [`planner`] fill plans from
//!   the question's words, [`model_planner`] has a language model fill one;
//! - [`query_graphs`]: small query graphs from what the question links to, built
//!   as SPARQL algebra and run offline (lookups: one to three joins);
//!
//! Retrieval (`kgfuse-retrieve`) calls these stages and fuses what they return
//! with its other channels.

pub mod cues;
pub mod model_planner;
pub mod plan;
pub mod planner;
pub mod query_graphs;

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

/// The lexicon's and linking's errors keep their kind.
impl From<kgfuse_lexicon::LexiconError> for PlanError {
    fn from(error: kgfuse_lexicon::LexiconError) -> Self {
        use kgfuse_lexicon::LexiconError;
        match error {
            LexiconError::Store(e) => Self::Store(e),
            LexiconError::Graph(e) => Self::Graph(e),
            LexiconError::Invalid(why) => Self::Invalid(why),
            other => Self::Invalid(other.to_string()),
        }
    }
}
