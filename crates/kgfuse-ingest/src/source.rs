//! What every extractor returns: the triples of one source file.

use oxrdf::{NamedNode, Triple};
use std::path::{Path, PathBuf};

/// Bumped when extraction output changes shape, so re-ingesting an unchanged tree with
/// a newer kgfuse rewrites its graphs instead of skipping them.
pub const EXTRACTOR_VERSION: &str = "1";

/// Triples extracted from one source file, bound for that file's own named graph.
#[derive(Debug, Clone)]
pub struct ExtractedSource {
    /// Canonical path of the file.
    pub path: PathBuf,
    /// The file's named graph (its canonical `file://` IRI).
    pub graph: NamedNode,
    /// SHA-256 of the file bytes.
    pub content_hash: String,
    /// Which extractor produced the triples (`code/python`, `code/rust`, `docs`).
    pub extractor: &'static str,
    /// The extracted triples (graph metadata is added by the store).
    pub triples: Vec<Triple>,
}

impl ExtractedSource {
    /// SHA-256 over the sorted triples and the extractor version. Calls resolve
    /// across files, so a file's triples can change although its bytes did not (a
    /// callee was renamed elsewhere); comparing this hash, not the file hash, decides
    /// whether the graph must be rewritten.
    pub fn extraction_hash(&self) -> String {
        let mut lines: Vec<String> = self.triples.iter().map(ToString::to_string).collect();
        lines.sort_unstable();
        lines.dedup();
        let mut text = format!("{}/{EXTRACTOR_VERSION}\n", self.extractor);
        for line in lines {
            text.push_str(&line);
            text.push('\n');
        }
        kgfuse_core::content_hash(&text)
    }
}

/// A file that was skipped or only partly understood, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when the problem has a position.
    pub line: Option<usize>,
    /// What went wrong.
    pub message: String,
}

impl Problem {
    /// A directory walk's entry that could not be read, or a symbolic link loop
    /// (under `root` when the error names no path).
    pub(crate) fn from_walk(root: &Path, error: &walkdir::Error) -> Self {
        let message = if let Some(ancestor) = error.loop_ancestor() {
            format!("skipped: symbolic link loop back to {}", ancestor.display())
        } else if let Some(io) = error.io_error() {
            format!("skipped: {io}")
        } else {
            format!("skipped: {error}")
        };
        Self {
            path: error.path().unwrap_or(root).to_path_buf(),
            line: None,
            message,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Errors that stop an ingestion run (single bad files are [`Problem`]s instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The path to ingest cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The input is unusable as a whole (nothing to ingest, bad knowledge file, ...).
    #[error("{0}")]
    Invalid(String),
}

/// The named graph of a source file: its canonical `file://` IRI, every byte outside
/// the unreserved set percent-encoded (the same IRI `kgfuse load` uses).
pub fn file_graph_iri(path: &Path) -> NamedNode {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    NamedNode::new_unchecked(kgfuse_core::file_iri(&absolute))
}
