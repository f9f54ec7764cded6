//! `kgfuse retrieve`: the FusedContext contract.

use crate::harness::{Kgfuse, root};
use serde_json::Value;

#[test]
fn flat_retrieval_returns_a_fused_context_with_sources_and_trace() {
    let k = Kgfuse::hash();
    k.ok(&[
        "load",
        &root()
            .join("fixtures/policy/policy.ttl")
            .display()
            .to_string(),
    ]);
    let out = k.ok(&[
        "retrieve",
        "Can I work remotely from another country?",
        "--strategy",
        "flat",
        "--top-k",
        "5",
        "--format",
        "json",
    ]);
    let context: Value = serde_json::from_str(&out).expect("FusedContext json");
    for field in [
        "query",
        "strategy",
        "dispatch",
        "unstructured",
        "structured_facts",
        "functions",
        "cases",
        "paths",
        "sparql",
        "trace",
    ] {
        assert!(context.get(field).is_some(), "missing {field}: {context}");
    }
    assert_eq!(context["strategy"], "flat");
    let hits = context["unstructured"].as_array().expect("hits");
    assert_eq!(hits.len(), 5);
    let scores: Vec<f64> = hits
        .iter()
        .map(|h| h["score"].as_f64().expect("score"))
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "scores must be sorted: {scores:?}"
    );
    // A chunk hit carries its document, title, section and chunk id.
    let chunk = hits
        .iter()
        .find(|h| h["source"]["chunk_id"].is_string())
        .unwrap_or_else(|| panic!("no chunk among the hits: {context}"));
    assert!(
        chunk["source"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("https://w3id.org/kgfuse/fixtures/policy/"))
    );
    assert!(chunk["source"]["title"].is_string(), "{chunk}");
    let stages: Vec<&str> = context["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(stages, ["dispatch", "vector"]);

    let err = k.fails(&["retrieve", "  ", "--format", "json"]);
    assert!(err.contains("the question is empty"), "{err}");
}
