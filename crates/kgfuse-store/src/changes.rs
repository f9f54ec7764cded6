//! `changes/N`: the nodes write N may have changed, so a value kept on disk
//! beside the graph (the lexicon's index) can bring itself in step by reading
//! those nodes again instead of the whole graph. A write that cannot say (a
//! SPARQL update, a repair, one that touches the schema or too many nodes)
//! records "everything". Only the last [`KEEP`] writes are kept: a reader
//! further behind reads everything.

use crate::StoreError;
use kgfuse_core::vocab::{OWL, RDFS};
use kgfuse_graph::model::{NamedNodeRef, NamedOrBlankNodeRef, QuadRef, TermRef, Triple};
use std::collections::BTreeSet;
use std::path::Path;

const CHANGES_DIR: &str = "changes";
/// How many writes' records are kept.
const KEEP: u64 = 64;
/// Past this many nodes a write records "everything": reading that many nodes
/// one by one costs about what reading them all does.
pub const MAX_NODES: usize = 50_000;
/// The record of a write that changed everything.
const EVERYTHING: &str = "*";

/// The IRIs a write may have changed: the subjects, predicates and IRI objects
/// of every triple it added or removed.
#[derive(Debug, Default)]
pub(crate) struct ChangedNodes {
    nodes: BTreeSet<String>,
    everything: bool,
}

impl ChangedNodes {
    /// A write that may have changed anything.
    pub fn everything() -> Self {
        Self {
            nodes: BTreeSet::new(),
            everything: true,
        }
    }

    /// Notes a quad added or removed.
    pub fn quad(&mut self, quad: QuadRef<'_>) {
        self.parts(quad.subject, quad.predicate, quad.object);
    }

    /// Notes triples added or removed.
    pub fn triples(&mut self, triples: &[Triple]) {
        for triple in triples {
            self.parts(
                triple.subject.as_ref(),
                triple.predicate.as_ref(),
                triple.object.as_ref(),
            );
        }
    }

    fn parts(
        &mut self,
        subject: NamedOrBlankNodeRef<'_>,
        predicate: NamedNodeRef<'_>,
        object: TermRef<'_>,
    ) {
        if self.everything {
            return;
        }
        // A schema triple changes what every instance of a class entails.
        if is_schema(predicate.as_str()) {
            self.set_everything();
            return;
        }
        if let NamedOrBlankNodeRef::NamedNode(s) = subject {
            self.insert(s.as_str());
        }
        self.insert(predicate.as_str());
        if let TermRef::NamedNode(o) = object {
            self.insert(o.as_str());
        }
    }

    fn insert(&mut self, iri: &str) {
        if !self.nodes.contains(iri) {
            self.nodes.insert(iri.to_owned());
            if self.nodes.len() > MAX_NODES {
                self.set_everything();
            }
        }
    }

    fn set_everything(&mut self) {
        self.everything = true;
        self.nodes = BTreeSet::new();
    }

    /// Writes the record of write `write` into the store at `dir` and forgets
    /// records older than the last [`KEEP`].
    pub fn record(&self, dir: &Path, write: u64) -> Result<(), StoreError> {
        let changes = dir.join(CHANGES_DIR);
        let io = |path: &Path, source| StoreError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&changes).map_err(|e| io(&changes, e))?;
        let mut text = String::new();
        if self.everything {
            text.push_str(EVERYTHING);
            text.push('\n');
        } else {
            for node in &self.nodes {
                text.push_str(node);
                text.push('\n');
            }
        }
        let path = changes.join(write.to_string());
        kgfuse_core::write_atomically(&path, text.as_bytes()).map_err(|e| io(&path, e))?;
        if let Some(old) = write.checked_sub(KEEP) {
            // Best effort: a record left behind is only read by a reader that
            // far behind, which reads everything anyway.
            let _ = std::fs::remove_file(changes.join(old.to_string()));
        }
        Ok(())
    }
}

fn is_schema(predicate: &str) -> bool {
    let Some(local) = predicate
        .strip_prefix(RDFS)
        .or_else(|| predicate.strip_prefix(OWL))
    else {
        return false;
    };
    matches!(
        local,
        "subClassOf"
            | "subPropertyOf"
            | "domain"
            | "range"
            | "equivalentClass"
            | "equivalentProperty"
    )
}

/// The nodes writes `after + 1 ..= upto` may have changed, read from their
/// records; `None` when one of them changed everything or its record is gone.
pub(crate) fn changed_between(
    dir: &Path,
    after: u64,
    upto: u64,
) -> Result<Option<BTreeSet<String>>, StoreError> {
    let mut nodes = BTreeSet::new();
    for write in after.saturating_add(1)..=upto {
        let path = dir.join(CHANGES_DIR).join(write.to_string());
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        for line in text.lines().filter(|l| !l.is_empty()) {
            if line == EVERYTHING {
                return Ok(None);
            }
            nodes.insert(line.to_owned());
        }
        if nodes.len() > MAX_NODES {
            return Ok(None);
        }
    }
    Ok(Some(nodes))
}
