//! Graphs written from extracted sources (ingested code and documents).
//!
//! Each ingested file owns one named graph holding its triples and a few metadata
//! triples about the graph itself (path, file hash, extraction hash, extractor).
//! Writing a batch replaces each file's graph wholesale in one transaction, so a
//! file's old triples never mix with its new ones.

use crate::backend::Changes;
use crate::{Graph, GraphError};
use kgfuse_core::vocab::{kg, w3c};
use oxigraph::model::{
    GraphName, Literal, NamedNode, NamedNodeRef, NamedOrBlankNode, Quad, Term, Triple,
};
use std::collections::BTreeMap;

/// One source file's triples, bound for its own graph.
#[derive(Debug, Clone)]
pub struct SourceGraph {
    /// The file's graph.
    pub graph: NamedNode,
    /// Path of the file.
    pub path: String,
    /// SHA-256 of the file bytes.
    pub content_hash: String,
    /// SHA-256 of the extracted triples.
    pub extraction_hash: String,
    /// Extractor name (`code/python`, `code/rust`, `docs`).
    pub extractor: String,
    /// The triples.
    pub triples: Vec<Triple>,
}

/// What the store holds about one extracted source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSource {
    /// Path of the file.
    pub path: String,
    /// Extractor name.
    pub extractor: String,
    /// SHA-256 of the triples that were written.
    pub extraction_hash: String,
}

fn literal_of(
    graph: &Graph,
    subject: NamedNodeRef<'_>,
    predicate: &str,
) -> Result<Option<String>, GraphError> {
    let predicate = NamedNodeRef::new_unchecked(predicate);
    for quad in graph.quads(
        Some(subject.into()),
        Some(predicate),
        None,
        Some(subject.into()),
    ) {
        if let Term::Literal(l) = quad?.object {
            return Ok(Some(l.value().to_owned()));
        }
    }
    Ok(None)
}

impl Graph {
    /// Every graph written from an extracted source, by graph IRI.
    pub fn stored_sources(&self) -> Result<BTreeMap<NamedNode, StoredSource>, GraphError> {
        let mut out = BTreeMap::new();
        let extractor = NamedNodeRef::new_unchecked(kg::EXTRACTOR);
        for quad in self.quads(None, Some(extractor), None, None) {
            let quad = quad?;
            let (
                NamedOrBlankNode::NamedNode(subject),
                Term::Literal(name),
                GraphName::NamedNode(g),
            ) = (&quad.subject, &quad.object, &quad.graph_name)
            else {
                continue;
            };
            if subject != g {
                continue;
            }
            out.insert(
                g.clone(),
                StoredSource {
                    path: literal_of(self, g.as_ref(), kg::SOURCE_FILE_PATH)?.unwrap_or_default(),
                    extractor: name.value().to_owned(),
                    extraction_hash: literal_of(self, g.as_ref(), kg::EXTRACTION_HASH)?
                        .unwrap_or_default(),
                },
            );
        }
        Ok(out)
    }

    /// Replaces the graphs of `sources` with their triples and drops the graphs in
    /// `drop`, in one transaction (remote: see [`kgfuse_remote`]). Returns the number of quads written.
    pub fn write_sources(
        &self,
        sources: &[SourceGraph],
        drop: &[NamedNode],
    ) -> Result<u64, GraphError> {
        let mut changes = Changes {
            drop: drop.to_vec(),
            ..Changes::default()
        };
        for source in sources {
            changes.clear.push(source.graph.clone());
            changes.insert.extend(source.quads());
        }
        self.apply(&changes)?;
        Ok(changes.insert.len() as u64)
    }

    /// Writes sources whose graphs the store does not hold, and `derived` (what
    /// they entail, for the derived graph), through the bulk loader: one commit,
    /// nothing written when it fails, and none of a transaction's per-quad
    /// reads (a first ingest of 5,000 functions spent most of its time there).
    /// Embedded stores only: a remote bulk load that fails drops the graphs it
    /// wrote into, the derived graph among them.
    pub fn insert_new_sources(
        &self,
        sources: &[SourceGraph],
        derived: Vec<Quad>,
    ) -> Result<(), GraphError> {
        if self.is_remote() {
            return Err(GraphError::Usage(
                "insert_new_sources writes into an embedded store only".into(),
            ));
        }
        let quads = sources
            .iter()
            .flat_map(SourceGraph::quads)
            .chain(derived)
            .map(Ok);
        let mut writer = self.bulk_writer();
        writer.load(quads)?;
        writer.commit()
    }
}

impl SourceGraph {
    /// Every quad the source's graph holds once written: its triples, then a
    /// few about the graph itself, the hashes last (a source graph without
    /// them is one a remote write left unfinished).
    pub fn quads(&self) -> impl Iterator<Item = Quad> + '_ {
        let graph = GraphName::NamedNode(self.graph.clone());
        let meta = |p: &str, o: Term| {
            Quad::new(
                self.graph.clone(),
                NamedNode::new_unchecked(p),
                o,
                graph.clone(),
            )
        };
        let metadata = [
            meta(
                w3c::RDF_TYPE,
                NamedNode::new_unchecked(kg::SOURCE_FILE).into(),
            ),
            meta(
                kg::SOURCE_FILE_PATH,
                Literal::new_simple_literal(&self.path).into(),
            ),
            meta(
                kg::CONTENT_HASH,
                Literal::new_simple_literal(&self.content_hash).into(),
            ),
            meta(
                kg::EXTRACTION_HASH,
                Literal::new_simple_literal(&self.extraction_hash).into(),
            ),
            meta(
                kg::EXTRACTOR,
                Literal::new_simple_literal(&self.extractor).into(),
            ),
        ];
        self.triples
            .iter()
            .map(move |t| t.clone().in_graph(GraphName::NamedNode(self.graph.clone())))
            .chain(metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(graph: &str, hash: &str, triples: usize) -> SourceGraph {
        SourceGraph {
            graph: NamedNode::new_unchecked(graph),
            path: graph.trim_start_matches("file://").to_owned(),
            content_hash: "c".into(),
            extraction_hash: hash.into(),
            extractor: "code/python".into(),
            triples: (0..triples)
                .map(|i| {
                    Triple::new(
                        NamedNode::new_unchecked(format!("urn:s{i}")),
                        NamedNode::new_unchecked("urn:p"),
                        Literal::from(i as i64),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn sources_replace_their_graph_and_can_be_dropped() {
        let graph = Graph::in_memory().expect("store");
        graph
            .write_sources(
                &[
                    source("file:///a.py", "h1", 3),
                    source("file:///b.py", "h2", 2),
                ],
                &[],
            )
            .expect("write");
        assert_eq!(graph.len().expect("len"), 3 + 2 + 10);
        let stored = graph.stored_sources().expect("stored");
        assert_eq!(stored.len(), 2);
        assert_eq!(
            stored[&NamedNode::new_unchecked("file:///a.py")].extraction_hash,
            "h1"
        );

        // Rewriting a with fewer triples leaves none of the old ones behind.
        graph
            .write_sources(
                &[source("file:///a.py", "h3", 1)],
                &[NamedNode::new_unchecked("file:///b.py")],
            )
            .expect("rewrite");
        assert_eq!(graph.len().expect("len"), 1 + 5);
        let stored = graph.stored_sources().expect("stored");
        assert_eq!(stored.len(), 1);
        assert_eq!(
            stored[&NamedNode::new_unchecked("file:///a.py")].extraction_hash,
            "h3"
        );
    }
}
