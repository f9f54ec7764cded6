//! A file given to `kgfuse load` (Turtle, N-Triples, N-Quads, TriG, RDF/XML,
//! JSON-LD; the first byte picks the format), loaded as kgfuse loads it.
//!
//! Checked: no panic; a load that fails writes nothing (the store keeps exactly what
//! it held); a load that succeeds adds the file's graph.
#![no_main]

use kgfuse_core::progress::NoProgress;
use kgfuse_graph::{Graph, LoadRequest, QueryOptions, RdfSource};
use libfuzzer_sys::fuzz_target;

const EXTENSIONS: [&str; 6] = ["ttl", "nt", "nq", "trig", "rdf", "jsonld"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir
        .path()
        .join(format!("input.{}", EXTENSIONS[usize::from(selector) % EXTENSIONS.len()]));
    std::fs::write(&path, body).expect("write input");

    let graph = Graph::in_memory().expect("in-memory store");
    graph
        .update(
            "INSERT DATA { GRAPH <urn:kept> { <urn:s> <urn:p> \"kept\" } }",
            &QueryOptions::default(),
        )
        .expect("sentinel");
    let before = graph.len().expect("size");
    let request = LoadRequest {
        sources: vec![RdfSource::from(path.as_path())],
        ..LoadRequest::default()
    };
    let loaded = graph
        .plan_load(&request)
        .and_then(|plan| graph.execute_load(&plan, &mut |_| {}, &NoProgress));
    let after = graph.len().expect("size");
    match loaded {
        Ok(report) => {
            assert_eq!(report.files.len(), 1);
            assert!(after > before, "a successful load adds at least the file's own triples");
        }
        Err(_) => assert_eq!(after, before, "a failed load wrote quads"),
    }
});
