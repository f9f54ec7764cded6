//! Where a retrieved node's text comes from (document, title, section, chunk id), and
//! the small conversions every strategy shares.

use kgfuse_core::context::{SourceRef, TextHit};
use kgfuse_core::vocab::{kgfuse, w3c};
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_graph::{QueryOutcome, parse_query};
use kgfuse_store::{Store, VectorHit};

/// Looks up the source of `iri`; falls back to the graph the vector row came from.
/// The IRI is bound as a term, never pasted into the query text.
pub(crate) fn source_of(store: &Store, iri: &str, graph: &str) -> SourceRef {
    let fallback = SourceRef {
        id: graph.to_owned(),
        ..SourceRef::default()
    };
    let Ok(node) = NamedNode::new(iri) else {
        return fallback;
    };
    let query = format!(
        "SELECT ?doc ?title ?section ?chunk ?node WHERE {{ \
           OPTIONAL {{ ?node <{chunk_id}> ?chunk }} \
           OPTIONAL {{ ?node <{section}> ?section }} \
           OPTIONAL {{ {{ ?doc <{has_chunk}> ?node }} UNION {{ ?node <{part_of}> ?doc }} \
                      OPTIONAL {{ ?doc <{title}> ?title }} }} \
         }} LIMIT 1",
        chunk_id = kgfuse::CHUNK_ID,
        section = kgfuse::SECTION,
        has_chunk = kgfuse::HAS_CHUNK,
        part_of = w3c::DCTERMS_IS_PART_OF,
        title = w3c::DCTERMS_TITLE,
    );
    let options = store.query_options();
    let Ok(parsed) = parse_query(&query, &options) else {
        return fallback;
    };
    let bindings = [("node".to_owned(), Term::NamedNode(node))];
    let Ok(QueryOutcome::Solutions { rows, .. }) =
        store.graph().query_algebra(parsed, &bindings, &options)
    else {
        return fallback;
    };
    let Some(row) = rows.first() else {
        return fallback;
    };
    let value = |i: usize| cell_text(row.get(i));
    SourceRef {
        id: value(0).unwrap_or_else(|| graph.to_owned()),
        title: value(1),
        section: value(2),
        chunk_id: value(3),
    }
}

/// A result cell as text: an IRI, a literal's value, or `_:id` for a blank node.
pub(crate) fn cell_text(cell: Option<&Option<Term>>) -> Option<String> {
    match cell.cloned().flatten() {
        Some(Term::NamedNode(n)) => Some(n.into_string()),
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        Some(Term::BlankNode(b)) => Some(format!("_:{}", b.as_str())),
        None => None,
    }
}

/// Whether a cell holds a true boolean. Virtuoso answers `isLiteral(…)` and
/// `BIND(true AS …)` with the integer 1, so `1` counts as true too.
pub(crate) fn cell_is_true(cell: Option<&Option<Term>>) -> bool {
    cell_text(cell).is_some_and(|value| value == "true" || value == "1")
}

/// A vector hit as retrieved text with its source, under the strategy's own score.
pub(crate) fn text_hit(store: &Store, hit: VectorHit, score: f32) -> TextHit {
    TextHit {
        source: source_of(store, &hit.iri, &hit.graph),
        iri: hit.iri,
        text: hit.text,
        score,
    }
}
