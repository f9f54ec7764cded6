//! From a question to SPARQL and its answer, over the paired store, on what
//! `kgfuse-lexicon` links the question's words to.
//!
//! - [`plan`]: a query plan (what a question asks, in the store's terms) and
//!   its compiler to SPARQL algebra; [`cues`] and [`planner`] fill plans from
//!   the question's words, [`model_planner`] has a language model fill one;
//! - [`query_graphs`]: small query graphs from what the question links to, built
//!   as SPARQL algebra and run offline (lookups: one to three joins);
//! - [`ranking`]: answers by how connected they are, unless a plan orders them;
//! - `algebra`: the SPARQL algebra pieces both compilers build with (joins,
//!   type paths, `VALUES`, sub-selects), each defined once;
//!
//! Retrieval (`kgfuse-retrieve`) calls these stages and fuses what they return
//! with its other channels.

mod algebra;
pub mod cues;
pub mod model_planner;
pub mod plan;
pub mod planner;
pub mod query_graphs;
pub mod ranking;

pub use kgfuse_lexicon::RetrieveError;
