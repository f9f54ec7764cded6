//! Where a retrieved node's text comes from (document, title, section, chunk id), and
//! the small conversions every strategy shares.

use kgfuse_core::context::{SourceRef, TextHit};
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_graph::{QueryOutcome, parse_query};
use kgfuse_lexicon::sparql::{cell_text, values};
use kgfuse_store::{Store, VectorHit};
use std::collections::HashMap;

/// The source of each `(iri, graph)`, in order, read with one query (one round
/// trip to a remote graph); a node without one falls back to the graph its vector
/// row came from. The IRIs are bound as VALUES terms, never pasted into the query
/// text. When a node has several (two titles), the least in (document, title,
/// section, chunk) order is taken, so every backend gives the same one.
pub fn sources_of(store: &Store, nodes: &[(&str, &str)]) -> Vec<SourceRef> {
    let fallback = |graph: &str| SourceRef {
        id: graph.to_owned(),
        ..SourceRef::default()
    };
    let mut found: HashMap<String, SourceRef> = HashMap::new();
    let values: Vec<Term> = nodes
        .iter()
        .filter_map(|(iri, _)| NamedNode::new(*iri).ok().map(Term::from))
        .collect();
    if !values.is_empty() {
        for (node, source) in source_rows(store, &values) {
            let slot = found.entry(node).or_insert_with(|| source.clone());
            if source_key(&source) < source_key(slot) {
                *slot = source;
            }
        }
    }
    nodes
        .iter()
        .map(|(iri, graph)| match found.get(*iri) {
            Some(source) => SourceRef {
                id: if source.id.is_empty() {
                    (*graph).to_owned()
                } else {
                    source.id.clone()
                },
                ..source.clone()
            },
            None => fallback(graph),
        })
        .collect()
}

fn source_key(source: &SourceRef) -> (&str, Option<&str>, Option<&str>, Option<&str>) {
    (
        source.id.as_str(),
        source.title.as_deref(),
        source.section.as_deref(),
        source.chunk_id.as_deref(),
    )
}

/// Every (node, source) row for the nodes (an empty id: no document).
fn source_rows(store: &Store, nodes: &[Term]) -> Vec<(String, SourceRef)> {
    let query = format!(
        "SELECT ?doc ?title ?section ?chunk ?node WHERE {{ {values} \
           OPTIONAL {{ ?node <{chunk_id}> ?chunk }} \
           OPTIONAL {{ ?node <{section}> ?section }} \
           OPTIONAL {{ {{ ?doc <{has_chunk}> ?node }} UNION {{ ?node <{part_of}> ?doc }} \
                      OPTIONAL {{ ?doc <{title}> ?title }} }} \
         }}",
        chunk_id = kg::CHUNK_ID,
        section = kg::SECTION,
        has_chunk = kg::HAS_CHUNK,
        part_of = w3c::DCTERMS_IS_PART_OF,
        title = w3c::DCTERMS_TITLE,
        values = values("node", nodes),
    );
    let options = store.query_options();
    let Ok(parsed) = parse_query(&query, &options) else {
        return Vec::new();
    };
    let Ok(QueryOutcome::Solutions { rows, .. }) =
        store.graph().query_algebra(parsed, &[], &options)
    else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|row| {
            let value = |i: usize| cell_text(row.get(i));
            let source = SourceRef {
                id: value(0).unwrap_or_default(),
                title: value(1),
                section: value(2),
                chunk_id: value(3),
            };
            Some((value(4)?, source))
        })
        .collect()
}

/// Vector hits as retrieved text with their sources (one lookup for all), each
/// under the strategy's own score.
pub(crate) fn text_hits(store: &Store, hits: Vec<(VectorHit, f32)>) -> Vec<TextHit> {
    let nodes: Vec<(&str, &str)> = hits
        .iter()
        .map(|(hit, _)| (hit.iri.as_str(), hit.graph.as_str()))
        .collect();
    let sources = sources_of(store, &nodes);
    hits.into_iter()
        .zip(sources)
        .map(|((hit, score), source)| TextHit {
            source,
            iri: hit.iri,
            text: hit.text,
            score,
        })
        .collect()
}
