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
//!
//! ```
//! use kgfuse_core::progress::NoProgress;
//! use kgfuse_ingest::code::{extract_code, CodeOptions};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("shop"))?;
//! std::fs::write(dir.path().join("shop/__init__.py"), "")?;
//! std::fs::write(
//!     dir.path().join("shop/prices.py"),
//!     "def price_of(item_id: int) -> float:\n    return 1.0\n\n\
//!      def total(item_ids):\n    return sum(price_of(i) for i in item_ids)\n",
//! )?;
//! let extraction = extract_code(&dir.path().join("shop"), &CodeOptions::default(), &NoProgress)?;
//! assert_eq!(extraction.stats.functions, 2);
//! // One source (one named graph) per file; `total` calls `price_of`.
//! let sources = extraction.emit(0..extraction.len());
//! let calls = sources
//!     .iter()
//!     .flat_map(|s| &s.triples)
//!     .filter(|t| t.predicate.as_str().ends_with("#calls"))
//!     .count();
//! assert_eq!(calls, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod code;
pub mod docs;
mod emit;
mod source;

pub use source::{EXTRACTOR_VERSION, ExtractedSource, IngestError, Problem, file_graph_iri};
