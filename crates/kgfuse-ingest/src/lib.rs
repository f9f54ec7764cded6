//! Turns source code and documents into kgfuse triples.
//!
//! Ingestion is pure: it reads files and returns one [`ExtractedSource`] per source
//! file (the triples bound for that file's named graph, with the file's content hash);
//! writing them and keeping the vector table in step is the store's job. Data flows
//! one way: files -> [`code`] / [`docs`] extraction -> `ExtractedSource` -> store.
//!
//! - [`code`] parses Python and Rust with tree-sitter into the API hierarchy
//!   (package > module > class > function > parameter), a call graph with resolved and
//!   by-name edges, cases (tests, doc examples, `examples/`), knowledge (docstrings and
//!   an optional knowledge file) and semantic input/output tags.
//! - [`docs`] splits Markdown and plain text into bounded chunks with a stable chunk id
//!   and links each chunk to the entities it mentions.

pub mod code;
pub mod docs;
mod emit;
mod source;

pub use source::{EXTRACTOR_VERSION, ExtractedSource, IngestError, Problem, file_graph_iri};
