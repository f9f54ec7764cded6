//! Canonical fingerprints of loaded RDF files.
//!
//! A file loaded into a graph of its own records, beside the SHA-256 of its bytes, a
//! fingerprint of its *triples*: `rdfc-1.0:sha256:<hex>`, the SHA-256 of their RDF
//! Dataset Canonicalization ([RDFC-1.0](https://www.w3.org/TR/rdf-canon/)) in
//! canonical N-Quads. The file's default-graph triples are canonicalised as the
//! default graph (not in the graph they are stored in) and the named graphs of a
//! TriG or N-Quads file stay named, so the value depends on the triples only: the
//! same triples in another order, another syntax or with other blank-node labels
//! give the same fingerprint, and re-loading such a file is skipped.
//!
//! Canonicalisation is superlinear on graphs of many blank nodes that look alike
//! (RDFC-1.0 tries every order of such a group), and holds the file's quads in
//! memory. Beyond [`MAX_CANONICAL_QUADS`] quads, or when RDFC-1.0 gives up at
//! [`PERMUTATION_LIMIT`] or [`DEPTH_FACTOR`], the fingerprint is the byte hash,
//! `bytes:sha256:<hex>`: such a file is then skipped only when its bytes are
//! unchanged, as before fingerprints.

use crate::{Graph, GraphError};
use kgfuse_core::vocab::kgfuse;
use oxigraph::model::{
    BlankNodeRef, GraphName, GraphNameRef, LiteralRef, NamedNodeRef, NamedOrBlankNode,
    NamedOrBlankNodeRef, Quad, QuadRef, Term, TermRef,
};
use sophia_api::MownStr;
use sophia_api::term::{BnodeId, IriRef, LanguageTag, SimpleTerm};
use sophia_c14n::hash::Sha256;
use sophia_c14n::rdfc10;
use std::collections::HashSet;

/// How a canonical fingerprint starts: the algorithm, then the hash of its output.
pub const CANONICAL_PREFIX: &str = "rdfc-1.0:sha256:";

/// How the fallback fingerprint starts: the hash of the file's bytes.
pub const BYTES_PREFIX: &str = "bytes:sha256:";

/// Most quads of one file that are canonicalised. The quads of a file are held in
/// memory until its end (a load otherwise streams them) and RDFC-1.0 sorts them,
/// so a bigger file would cost memory in proportion and a sort; a million quads
/// (some 100 MB of N-Triples) keeps that to a few hundred MB at most. Bigger files
/// record the byte hash.
pub const MAX_CANONICAL_QUADS: usize = 1_000_000;

/// Most blank nodes RDFC-1.0 tries every order of when they cannot be told apart
/// by their neighbourhood (`n!` orders each): sophia's default, 6, so 720 orders
/// at most per group. A group beyond it is a pathological (or poisoned) graph, and
/// its file records the byte hash.
pub const PERMUTATION_LIMIT: usize = rdfc10::DEFAULT_PERMUTATION_LIMIT;

/// How deep RDFC-1.0 may recurse, as a factor of the number of blank nodes:
/// sophia's default, 1.0.
pub const DEPTH_FACTOR: f32 = rdfc10::DEFAULT_DEPTH_FACTOR;

/// The bounds of one canonicalisation; [`FingerprintLimits::default`] holds the
/// constants above (tests pass smaller ones).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FingerprintLimits {
    /// Most quads canonicalised ([`MAX_CANONICAL_QUADS`]).
    pub max_quads: usize,
    /// RDFC-1.0's permutation limit ([`PERMUTATION_LIMIT`]).
    pub permutation_limit: usize,
    /// RDFC-1.0's depth factor ([`DEPTH_FACTOR`]).
    pub depth_factor: f32,
}

impl Default for FingerprintLimits {
    fn default() -> Self {
        Self {
            max_quads: MAX_CANONICAL_QUADS,
            permutation_limit: PERMUTATION_LIMIT,
            depth_factor: DEPTH_FACTOR,
        }
    }
}

/// Why a file has no canonical fingerprint.
#[derive(Debug, thiserror::Error)]
pub enum NoCanonicalForm {
    /// The file has more quads than the limit.
    #[error("more than {0} quads")]
    TooManyQuads(usize),
    /// RDFC-1.0 gave up (a limit) or failed.
    #[error("{0}")]
    Canonicalization(String),
}

/// Whether a recorded fingerprint is a canonical one (not the byte-hash fallback).
pub fn is_canonical(fingerprint: &str) -> bool {
    fingerprint.starts_with(CANONICAL_PREFIX)
}

/// The fallback fingerprint of a file whose SHA-256 is `content_hash`.
pub fn bytes_fingerprint(content_hash: &str) -> String {
    format!("{BYTES_PREFIX}{content_hash}")
}

/// Collects the quads of one file as it is parsed and gives its fingerprint at
/// the end. The quads are parsed into `own_graph`; those are the file's default
/// graph.
pub(crate) struct FingerprintBuilder {
    own_graph: oxigraph::model::NamedNode,
    limits: FingerprintLimits,
    /// The file's quads, its own graph's as default-graph quads.
    quads: Vec<Quad>,
    /// More quads than `limits.max_quads`: the quads were dropped.
    overflowed: bool,
}

impl FingerprintBuilder {
    /// A builder for a file parsed into `own_graph`.
    pub(crate) fn new(own_graph: &oxigraph::model::NamedNode, limits: FingerprintLimits) -> Self {
        Self {
            own_graph: own_graph.clone(),
            limits,
            quads: Vec::new(),
            overflowed: false,
        }
    }

    /// Notes one parsed quad; false once the file is over the quad limit (what
    /// follows no longer matters to the fingerprint).
    pub(crate) fn add(&mut self, quad: QuadRef<'_>) -> bool {
        if self.overflowed {
            return false;
        }
        if self.quads.len() >= self.limits.max_quads {
            self.overflowed = true;
            self.quads = Vec::new();
            return false;
        }
        let graph_name = if quad.graph_name == GraphNameRef::NamedNode(self.own_graph.as_ref()) {
            GraphNameRef::DefaultGraph
        } else {
            quad.graph_name
        };
        self.quads.push(Quad::new(
            quad.subject.into_owned(),
            quad.predicate.into_owned(),
            quad.object.into_owned(),
            graph_name.into_owned(),
        ));
        true
    }

    /// The file's fingerprint (see [`file_fingerprint`]).
    pub(crate) fn finish(self, file: &str, content_hash: &str) -> String {
        if self.overflowed {
            let reason = NoCanonicalForm::TooManyQuads(self.limits.max_quads);
            return fallback(reason, file, content_hash);
        }
        file_fingerprint(
            &self.quads,
            self.own_graph.as_ref(),
            self.limits,
            file,
            content_hash,
        )
    }
}

/// The fingerprint of a file's quads, parsed into `own_graph` (its default graph):
/// canonical, or [`bytes_fingerprint`] of `content_hash` when canonicalisation was
/// out of bounds (logged with the file's name, `file`).
pub(crate) fn file_fingerprint(
    quads: &[Quad],
    own_graph: NamedNodeRef<'_>,
    limits: FingerprintLimits,
    file: &str,
    content_hash: &str,
) -> String {
    canonical_fingerprint(quads, Some(own_graph), limits)
        .unwrap_or_else(|reason| fallback(reason, file, content_hash))
}

/// The byte-hash fingerprint, logged with why the canonical one is missing.
fn fallback(reason: NoCanonicalForm, file: &str, content_hash: &str) -> String {
    tracing::info!(
        file,
        %reason,
        "no canonical fingerprint (RDFC-1.0): the byte hash stands in"
    );
    bytes_fingerprint(content_hash)
}

/// The canonical fingerprint of `quads`, those in `own_graph` counted as the
/// default graph, duplicates counted once.
pub fn canonical_fingerprint(
    quads: &[Quad],
    own_graph: Option<NamedNodeRef<'_>>,
    limits: FingerprintLimits,
) -> Result<String, NoCanonicalForm> {
    if quads.len() > limits.max_quads {
        return Err(NoCanonicalForm::TooManyQuads(limits.max_quads));
    }
    let own_graph = own_graph.map(GraphNameRef::NamedNode);
    let dataset: HashSet<([SimpleTerm<'_>; 3], Option<SimpleTerm<'_>>)> =
        quads.iter().map(|q| spog(q.as_ref(), own_graph)).collect();
    let mut hasher = kgfuse_core::ContentHasher::default();
    rdfc10::normalize_with::<Sha256, _, _>(
        &dataset,
        &mut hasher,
        limits.depth_factor,
        limits.permutation_limit,
    )
    .map_err(|e| NoCanonicalForm::Canonicalization(e.to_string()))?;
    Ok(format!("{CANONICAL_PREFIX}{}", hasher.finish()))
}

/// A quad as sophia's (subject, predicate, object) and graph name, borrowing the
/// text of Oxigraph's terms; `default` is the graph taken as the default graph.
fn spog<'a>(
    quad: QuadRef<'a>,
    default: Option<GraphNameRef<'_>>,
) -> ([SimpleTerm<'a>; 3], Option<SimpleTerm<'a>>) {
    let subject = match quad.subject {
        NamedOrBlankNodeRef::NamedNode(n) => iri(n),
        NamedOrBlankNodeRef::BlankNode(b) => blank(b),
    };
    let graph = match quad.graph_name {
        _ if Some(quad.graph_name) == default => None,
        GraphNameRef::NamedNode(n) => Some(iri(n)),
        GraphNameRef::BlankNode(b) => Some(blank(b)),
        GraphNameRef::DefaultGraph => None,
    };
    ([subject, iri(quad.predicate), term(quad.object)], graph)
}

/// An Oxigraph term as a sophia one. Oxigraph's parsers checked IRIs, blank-node
/// labels and language tags against the grammars sophia's wrappers check (which
/// they do only in debug builds), so they are wrapped unchecked.
fn term(term: TermRef<'_>) -> SimpleTerm<'_> {
    match term {
        TermRef::NamedNode(n) => iri(n),
        TermRef::BlankNode(b) => blank(b),
        TermRef::Literal(l) => literal(l),
    }
}

fn iri(node: NamedNodeRef<'_>) -> SimpleTerm<'_> {
    SimpleTerm::Iri(IriRef::new_unchecked(MownStr::from_ref(node.as_str())))
}

fn blank(node: BlankNodeRef<'_>) -> SimpleTerm<'_> {
    SimpleTerm::BlankNode(BnodeId::new_unchecked(MownStr::from_ref(node.as_str())))
}

fn literal(literal: LiteralRef<'_>) -> SimpleTerm<'_> {
    let value = MownStr::from_ref(literal.value());
    match literal.language() {
        Some(language) => SimpleTerm::LiteralLanguage(
            value,
            LanguageTag::new_unchecked(MownStr::from_ref(language)),
            None,
        ),
        None => SimpleTerm::LiteralDatatype(
            value,
            IriRef::new_unchecked(MownStr::from_ref(literal.datatype().as_str())),
        ),
    }
}

/// The fingerprint recorded for one file graph (`kgfuse stats`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileFingerprint {
    /// The file's own graph.
    pub graph: String,
    /// The file's path, as it was loaded.
    pub path: String,
    /// `rdfc-1.0:sha256:<hex>`, or `bytes:sha256:<hex>` (see the module docs).
    pub fingerprint: String,
}

impl Graph {
    /// The fingerprint recorded in a file's own graph; `None` for any other graph
    /// (one loaded with `--graph`, or a file graph written before fingerprints).
    pub fn fingerprint_of(&self, graph: NamedNodeRef<'_>) -> Result<Option<String>, GraphError> {
        self.metadata_value(graph, kgfuse::CANONICAL_HASH)
    }

    /// Every file graph that records a fingerprint, sorted by graph.
    pub fn file_fingerprints(&self) -> Result<Vec<FileFingerprint>, GraphError> {
        let predicate = NamedNodeRef::new_unchecked(kgfuse::CANONICAL_HASH);
        let mut out = Vec::new();
        for quad in self.quads(None, Some(predicate), None, None) {
            let quad = quad?;
            let (NamedOrBlankNode::NamedNode(graph), Term::Literal(fingerprint)) =
                (&quad.subject, &quad.object)
            else {
                continue;
            };
            if quad.graph_name != GraphName::NamedNode(graph.clone()) {
                continue;
            }
            out.push(FileFingerprint {
                graph: graph.as_str().to_owned(),
                path: self
                    .metadata_value(graph.as_ref(), kgfuse::SOURCE_FILE_PATH)?
                    .unwrap_or_default(),
                fingerprint: fingerprint.value().to_owned(),
            });
        }
        out.sort_by(|a, b| a.graph.cmp(&b.graph));
        Ok(out)
    }

    /// The value of a literal a file graph records about itself.
    pub(crate) fn metadata_value(
        &self,
        graph: NamedNodeRef<'_>,
        predicate: &str,
    ) -> Result<Option<String>, GraphError> {
        let found = self
            .quads(
                Some(graph.into()),
                Some(NamedNodeRef::new_unchecked(predicate)),
                None,
                Some(graph.into()),
            )
            .next()
            .transpose()?;
        Ok(found.and_then(|quad| match quad.object {
            Term::Literal(literal) => Some(literal.value().to_owned()),
            _ => None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::io::{RdfFormat, RdfParser};
    use oxigraph::model::{GraphName, NamedNode};

    const GRAPH: &str = "file:///data/team.ttl";

    /// The fingerprint of `text` parsed as a load parses it: into the file's own
    /// graph, blank nodes renamed.
    fn fingerprint_with(text: &str, format: RdfFormat, limits: FingerprintLimits) -> String {
        let graph = NamedNode::new(GRAPH).expect("iri");
        let mut builder = FingerprintBuilder::new(&graph, limits);
        let parser = RdfParser::from_format(format)
            .rename_blank_nodes()
            .with_default_graph(GraphName::NamedNode(graph.clone()))
            .for_slice(text.as_bytes());
        for quad in parser {
            builder.add(quad.expect("parse").as_ref());
        }
        builder.finish("test", "0123")
    }

    fn fingerprint(text: &str, format: RdfFormat) -> String {
        fingerprint_with(text, format, FingerprintLimits::default())
    }

    const PREFIXES: &str = "@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
";

    const STATEMENTS: &str = r#"ex:alice rdfs:label "Alice"@en ; ex:age 42 ;
    ex:knows [ rdfs:label "Bob" ; ex:pets ( "cat" "dog" ) ] .
"#;

    /// A Turtle file with nested blank nodes and a list.
    fn turtle() -> String {
        format!("{PREFIXES}{STATEMENTS}")
    }

    /// The same triples as [`turtle`]: N-Triples, another order, other labels.
    const NTRIPLES: &str = r#"_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
<http://example.org/alice> <http://example.org/knows> _:person .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "cat" .
<http://example.org/alice> <http://example.org/age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:person <http://example.org/pets> _:l1 .
_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "dog" .
_:person <http://www.w3.org/2000/01/rdf-schema#label> "Bob" .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l2 .
<http://example.org/alice> <http://www.w3.org/2000/01/rdf-schema#label> "Alice"@en .
"#;

    #[test]
    fn the_same_triples_in_another_order_syntax_and_labelling_agree() {
        let expected = fingerprint(&turtle(), RdfFormat::Turtle);
        assert!(expected.starts_with(CANONICAL_PREFIX), "{expected}");
        assert_eq!(expected.len(), CANONICAL_PREFIX.len() + 64);
        assert_eq!(fingerprint(NTRIPLES, RdfFormat::NTriples), expected);
        // Parsing renames blank nodes at random: parsing again agrees too.
        assert_eq!(fingerprint(&turtle(), RdfFormat::Turtle), expected);
        // A duplicated triple is one triple.
        let twice = format!("{NTRIPLES}{}", NTRIPLES.lines().next().unwrap_or_default());
        assert_eq!(fingerprint(&twice, RdfFormat::NTriples), expected);
    }

    #[test]
    fn a_changed_literal_or_graph_changes_the_fingerprint() {
        let expected = fingerprint(&turtle(), RdfFormat::Turtle);
        let changed = turtle().replace("\"Bob\"", "\"Rob\"");
        assert_ne!(fingerprint(&changed, RdfFormat::Turtle), expected);
        let language = turtle().replace("@en", "@de");
        assert_ne!(fingerprint(&language, RdfFormat::Turtle), expected);
        // The default graph is the file's, whatever graph it is stored in; a
        // named graph of a TriG file is another graph.
        assert_eq!(fingerprint(&turtle(), RdfFormat::TriG), expected);
        let named = format!("{PREFIXES}<http://example.org/g> {{ {STATEMENTS} }}");
        let named = fingerprint(&named, RdfFormat::TriG);
        assert!(named.starts_with(CANONICAL_PREFIX), "{named}");
        assert_ne!(named, expected);
    }

    /// Two groups of `n` blank nodes, each node linked to every node of the other
    /// group: nothing tells the nodes of a group apart, so RDFC-1.0 must try their
    /// orders (`n!`).
    fn complete_bipartite(n: usize) -> String {
        let mut text = String::new();
        for i in 0..n {
            for j in 0..n {
                text.push_str(&format!("_:a{i} <urn:x:p> _:b{j} .\n"));
            }
        }
        text
    }

    #[test]
    fn out_of_bounds_graphs_fall_back_to_the_byte_hash() {
        let tight = FingerprintLimits {
            permutation_limit: 2,
            ..FingerprintLimits::default()
        };
        let pathological = complete_bipartite(3);
        assert!(is_canonical(&fingerprint(
            &pathological,
            RdfFormat::NTriples
        )));
        let fallback = fingerprint_with(&pathological, RdfFormat::NTriples, tight);
        assert_eq!(fallback, bytes_fingerprint("0123"));
        assert!(!is_canonical(&fallback));

        let few = FingerprintLimits {
            max_quads: 3,
            ..FingerprintLimits::default()
        };
        assert_eq!(
            fingerprint_with(&turtle(), RdfFormat::Turtle, few),
            bytes_fingerprint("0123")
        );
        let quads: Vec<Quad> = Vec::new();
        assert!(matches!(
            canonical_fingerprint(&quads, None, few),
            Ok(f) if is_canonical(&f)
        ));
    }
}
