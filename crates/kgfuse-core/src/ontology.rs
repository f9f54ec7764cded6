//! kgfuse's own vocabulary, as every store carries it.
//!
//! `kgfuse init` loads [`KGFUSE_TTL`] (the text of `ontology/kgfuse.ttl`, built into
//! the binary) into the named graph [`graph_iri`], whose IRI holds the vocabulary's
//! version and a hash of its text, and records that IRI in `kgfuse.toml`
//! (`[ontology] graph`). A store whose recorded IRI differs was made with another
//! vocabulary: opening it replaces the graph in place.

use std::sync::LazyLock;

/// The kgfuse vocabulary in Turtle (`ontology/kgfuse.ttl`).
pub const KGFUSE_TTL: &str = include_str!("../ontology/kgfuse.ttl");

/// The vocabulary's `owl:versionInfo`.
pub const VERSION: &str = "0.1.0";

/// Where named graphs that kgfuse itself keeps are named.
pub const GRAPH_NAMESPACE: &str = "https://w3id.org/kgfuse/graph/";

/// The named graph of the triples kgfuse infers (RDFS entailment): part of the
/// union default graph, never embedded, recomputed by every write.
pub const INFERRED_GRAPH: &str = "https://w3id.org/kgfuse/graph/inferred";

/// SHA-256 of [`KGFUSE_TTL`].
pub fn content_hash() -> &'static str {
    static HASH: LazyLock<String> = LazyLock::new(|| crate::content_hash(KGFUSE_TTL));
    &HASH
}

/// The named graph this build's vocabulary lives in:
/// `https://w3id.org/kgfuse/graph/ontology/<version>/<first 12 hex digits of its hash>`.
pub fn graph_iri() -> String {
    format!(
        "{GRAPH_NAMESPACE}ontology/{VERSION}/{}",
        &content_hash()[..12]
    )
}

/// Whether `iri` names a graph of a carried kgfuse vocabulary (this build's or
/// another's).
pub fn is_ontology_graph(iri: &str) -> bool {
    iri.strip_prefix(GRAPH_NAMESPACE)
        .is_some_and(|rest| rest.starts_with("ontology/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_one_the_turtle_declares() {
        let declared = format!("owl:versionInfo \"{VERSION}\"");
        assert!(
            KGFUSE_TTL.contains(&declared),
            "{declared} not in kgfuse.ttl"
        );
    }

    #[test]
    fn the_graph_iri_changes_with_the_text_and_is_recognised() {
        let iri = graph_iri();
        assert!(iri.starts_with("https://w3id.org/kgfuse/graph/ontology/0.1.0/"));
        assert_eq!(
            iri.len(),
            GRAPH_NAMESPACE.len() + "ontology/0.1.0/".len() + 12
        );
        assert!(is_ontology_graph(&iri));
        assert!(is_ontology_graph(
            "https://w3id.org/kgfuse/graph/ontology/0.0.9/abc"
        ));
        assert!(!is_ontology_graph("https://w3id.org/kgfuse/graph/inferred"));
    }
}
