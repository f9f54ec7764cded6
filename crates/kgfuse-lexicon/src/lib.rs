//! Names to nodes, over the paired store.
//!
//! - [`lexicon`]: every named node of the store as search terms (BM25 over names
//!   and descriptions, label candidates for linking);
//! - [`linking`]: the question's words to the store's entities, classes and
//!   properties; [`meaning`]: class words linked through the embedder;
//! - [`sparql`]: generated queries that the text they are about cannot change,
//!   and the whole-store reads the lexicon is built from;
//! - [`RetrieveError`]: the one error of the layers from here up to the answer
//!   loop (plans, text-to-SPARQL, understanding, retrieval, answers).
//!
//! `kgfuse-plan` builds queries and plans on what linking finds; retrieval
//! (`kgfuse-retrieve`) uses the lexicon's BM25 and linking as channels.

pub mod lexicon;
pub mod linking;
pub mod meaning;
pub mod sparql;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

mod error;

pub use error::{RetrieveError, TimedOut};
pub use lexicon::LexiconError;
