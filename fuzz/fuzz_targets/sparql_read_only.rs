//! SPARQL text from an untrusted caller (the HTTP endpoint, MCP's `sparql_query`)
//! through the read-only path: parser with predeclared prefixes, update refusal,
//! the row cut in the algebra, the cross-product guard, evaluation with a timeout.
//!
//! Checked: no panic; only the error kinds a bad query may give; never more rows
//! than the cut; the store is never changed.
#![no_main]

use kgfuse_graph::{Graph, GraphError, QueryOptions, QueryOutcome, ReadOnlyOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use std::time::Duration;

const MAX_ROWS: usize = 50;

static GRAPH: LazyLock<(Graph, usize)> = LazyLock::new(|| {
    let graph = Graph::in_memory().expect("in-memory store");
    graph
        .update(
            r#"INSERT DATA {
                GRAPH <urn:g1> { <urn:a> rdfs:label "alpha"@en ; <urn:p> <urn:b>, 1, 2.5, "x" .
                                 _:n <urn:p> <urn:a> }
                GRAPH <urn:g2> { <urn:b> <urn:p> <urn:a> ; rdfs:label "beta" }
                <urn:c> a <urn:C> ; <urn:q> "2024-01-01"^^xsd:date }"#,
            &QueryOptions::default(),
        )
        .expect("seed data");
    let size = graph.len().expect("size");
    (graph, size)
});

fuzz_target!(|text: &str| {
    let (graph, size) = &*GRAPH;
    let limits = ReadOnlyOptions {
        timeout: Duration::from_millis(200),
        max_rows: MAX_ROWS,
        ..ReadOnlyOptions::default()
    };
    match graph.query_read_only(text, &QueryOptions::default(), &limits) {
        Ok(limited) => match limited.outcome {
            QueryOutcome::Solutions { rows, .. } => assert!(rows.len() <= MAX_ROWS),
            QueryOutcome::Graph(triples) => assert!(triples.len() <= MAX_ROWS),
            QueryOutcome::Boolean(_) => {}
        },
        Err(
            GraphError::Syntax(_)
            | GraphError::UpdateRefused
            | GraphError::Evaluation(_)
            | GraphError::Unsupported(_)
            | GraphError::Timeout(_)
            | GraphError::Usage(_),
        ) => {}
        Err(other) => panic!("a query gave {other:?}"),
    }
    assert_eq!(graph.len().expect("size"), *size, "a read-only query changed the store");
});
