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
//! sophia's `sophia_c14n` labels the blank nodes (RDFC-1.0's hard part, given only
//! the quads that name blank nodes); the canonical lines are written and sorted
//! here, where a quad without blank nodes is written once as it is parsed (a test
//! checks the document equals sophia's `normalize_with`, whose sort formats terms
//! in every comparison: a third more CPU on a LUBM-10 load).
//!
//! Canonicalisation is superlinear on graphs of many blank nodes that look alike
//! (RDFC-1.0 tries every order of such a group), and holds the file's quads in
//! memory. Beyond [`MAX_CANONICAL_QUADS`] quads, or when RDFC-1.0 gives up at
//! [`PERMUTATION_LIMIT`] or [`DEPTH_FACTOR`], the fingerprint is the byte hash,
//! `bytes:sha256:<hex>`: such a file is then skipped only when its bytes are
//! unchanged, as before fingerprints.

use crate::{Graph, GraphError};
use kgfuse_core::vocab::kg;
use oxigraph::model::{
    BlankNodeRef, GraphName, GraphNameRef, LiteralRef, NamedNodeRef, NamedOrBlankNode,
    NamedOrBlankNodeRef, Quad, QuadRef, Term, TermRef,
};
use sophia_api::MownStr;
use sophia_api::term::{BnodeId, IriRef, LanguageTag, SimpleTerm};
use sophia_c14n::hash::Sha256;
use sophia_c14n::rdfc10::{self, C14nIdMap};
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
///
/// A quad without blank nodes is kept as its canonical N-Quads line at once (its
/// line does not depend on the others); one with blank nodes is kept whole until
/// RDFC-1.0 has labelled them. At the end the lines are sorted, duplicates
/// dropped, and hashed: the canonical N-Quads document, as sophia's
/// `rdfc10::normalize_with` writes it (a test checks they agree), without
/// formatting terms in every comparison of its sort.
pub(crate) struct FingerprintBuilder {
    /// The graph the file's default-graph triples were parsed into, if any.
    own_graph: Option<oxigraph::model::NamedNode>,
    limits: FingerprintLimits,
    /// Canonical lines of the quads without blank nodes so far.
    lines: Vec<String>,
    /// The quads with blank nodes, the file's own graph as the default graph.
    blank: Vec<Quad>,
    /// Where a line is written before it is kept (at its own length).
    scratch: String,
    /// More quads than `limits.max_quads`: the quads were dropped.
    overflowed: bool,
}

impl FingerprintBuilder {
    /// A builder for a file parsed into `own_graph` (its quads there count as the
    /// default graph's).
    pub(crate) fn new(
        own_graph: Option<&oxigraph::model::NamedNode>,
        limits: FingerprintLimits,
    ) -> Self {
        Self {
            own_graph: own_graph.cloned(),
            limits,
            lines: Vec::new(),
            blank: Vec::new(),
            scratch: String::new(),
            overflowed: false,
        }
    }

    /// Notes one parsed quad; false once the file is over the quad limit (what
    /// follows no longer matters to the fingerprint).
    pub(crate) fn add(&mut self, quad: QuadRef<'_>) -> bool {
        if self.overflowed {
            return false;
        }
        if self.lines.len() + self.blank.len() >= self.limits.max_quads {
            self.overflowed = true;
            self.lines = Vec::new();
            self.blank = Vec::new();
            return false;
        }
        let graph_name = match &self.own_graph {
            Some(own) if quad.graph_name == GraphNameRef::NamedNode(own.as_ref()) => {
                GraphNameRef::DefaultGraph
            }
            _ => quad.graph_name,
        };
        let quad = QuadRef::new(quad.subject, quad.predicate, quad.object, graph_name);
        if has_blank_node(quad) {
            self.blank.push(quad.into_owned());
        } else {
            self.scratch.clear();
            write_line(&mut self.scratch, quad, &C14nIdMap::new());
            self.lines.push(self.scratch.clone());
        }
        true
    }

    /// The canonical N-Quads document, line by line, or why there is none.
    fn canonical_lines(mut self) -> Result<Vec<String>, NoCanonicalForm> {
        if self.overflowed {
            return Err(NoCanonicalForm::TooManyQuads(self.limits.max_quads));
        }
        let labels = canonical_labels(&self.blank, self.limits)?;
        for quad in &self.blank {
            let mut line = String::new();
            write_line(&mut line, quad.as_ref(), &labels);
            self.lines.push(line);
        }
        self.lines.sort_unstable();
        self.lines.dedup();
        Ok(self.lines)
    }

    /// The file's canonical fingerprint, or why there is none.
    fn canonical(self) -> Result<String, NoCanonicalForm> {
        let mut hasher = kgfuse_core::ContentHasher::default();
        for line in self.canonical_lines()? {
            std::io::Write::write_all(&mut hasher, line.as_bytes())
                .map_err(|e| NoCanonicalForm::Canonicalization(e.to_string()))?;
        }
        Ok(format!("{CANONICAL_PREFIX}{}", hasher.finish()))
    }

    /// The file's fingerprint: canonical, or [`bytes_fingerprint`] of
    /// `content_hash` when canonicalisation was out of bounds (logged with the
    /// file's name, `file`).
    pub(crate) fn finish(self, file: &str, content_hash: &str) -> String {
        self.canonical()
            .unwrap_or_else(|reason| fallback(reason, file, content_hash))
    }
}

/// The fingerprint of a file's quads, parsed into `own_graph` (its default graph):
/// canonical, or [`bytes_fingerprint`] of `content_hash` (logged with `file`).
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
    let own_graph = own_graph.map(NamedNodeRef::into_owned);
    let mut builder = FingerprintBuilder::new(own_graph.as_ref(), limits);
    for quad in quads {
        builder.add(quad.as_ref());
    }
    builder.canonical()
}

/// Whether a quad names a blank node.
fn has_blank_node(quad: QuadRef<'_>) -> bool {
    matches!(quad.subject, NamedOrBlankNodeRef::BlankNode(_))
        || matches!(quad.object, TermRef::BlankNode(_))
        || matches!(quad.graph_name, GraphNameRef::BlankNode(_))
}

/// RDFC-1.0's canonical label of every blank node of `quads` (sophia's
/// `relabel_with`; only the quads that name blank nodes matter to it).
fn canonical_labels(
    quads: &[Quad],
    limits: FingerprintLimits,
) -> Result<C14nIdMap, NoCanonicalForm> {
    if quads.is_empty() {
        return Ok(C14nIdMap::new());
    }
    let dataset: HashSet<([SimpleTerm<'_>; 3], Option<SimpleTerm<'_>>)> =
        quads.iter().map(|q| spog(q.as_ref())).collect();
    let (_, labels) =
        rdfc10::relabel_with::<Sha256, _>(&dataset, limits.depth_factor, limits.permutation_limit)
            .map_err(|e| NoCanonicalForm::Canonicalization(e.to_string()))?;
    Ok(labels)
}

/// Appends a quad's canonical N-Quads line (with its end of line) to `out`, blank
/// nodes by their canonical `labels`: the serialisation of RDFC-1.0 as sophia
/// writes it (`_cnq::nq`).
fn write_line(out: &mut String, quad: QuadRef<'_>, labels: &C14nIdMap) {
    match quad.subject {
        NamedOrBlankNodeRef::NamedNode(n) => write_iri(out, n),
        NamedOrBlankNodeRef::BlankNode(b) => write_blank(out, b, labels),
    }
    out.push(' ');
    write_iri(out, quad.predicate);
    out.push(' ');
    match quad.object {
        TermRef::NamedNode(n) => write_iri(out, n),
        TermRef::BlankNode(b) => write_blank(out, b, labels),
        TermRef::Literal(l) => write_literal(out, l),
    }
    out.push(' ');
    match quad.graph_name {
        GraphNameRef::NamedNode(n) => {
            write_iri(out, n);
            out.push(' ');
        }
        GraphNameRef::BlankNode(b) => {
            write_blank(out, b, labels);
            out.push(' ');
        }
        GraphNameRef::DefaultGraph => {}
    }
    out.push_str(".\n");
}

fn write_iri(out: &mut String, iri: NamedNodeRef<'_>) {
    out.push('<');
    out.push_str(iri.as_str());
    out.push('>');
}

/// A blank node by its canonical label (every blank node of the quads given to
/// [`canonical_labels`] has one; the original label would only be a safe default).
fn write_blank(out: &mut String, node: BlankNodeRef<'_>, labels: &C14nIdMap) {
    out.push_str("_:");
    match labels.get(node.as_str()) {
        Some(label) => out.push_str(label.as_str()),
        None => out.push_str(node.as_str()),
    }
}

/// A literal in canonical N-Quads: the escapes of RDFC-1.0 (sophia's), the
/// language tag in lower case, no `^^xsd:string`.
fn write_literal(out: &mut String, literal: LiteralRef<'_>) {
    out.push('"');
    for c in literal.value().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{7f}' => out.push_str("\\u007F"),
            c if c <= '\u{1f}' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    match literal.language() {
        Some(language) => {
            out.push('@');
            out.push_str(&language.to_ascii_lowercase());
        }
        None if literal.datatype() == oxigraph::model::vocab::xsd::STRING => {}
        None => {
            out.push_str("^^");
            write_iri(out, literal.datatype());
        }
    }
}

/// A quad as sophia's (subject, predicate, object) and graph name, borrowing the
/// text of Oxigraph's terms.
fn spog(quad: QuadRef<'_>) -> ([SimpleTerm<'_>; 3], Option<SimpleTerm<'_>>) {
    let subject = match quad.subject {
        NamedOrBlankNodeRef::NamedNode(n) => iri(n),
        NamedOrBlankNodeRef::BlankNode(b) => blank(b),
    };
    let graph = match quad.graph_name {
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
        self.metadata_value(graph, kg::CANONICAL_HASH)
    }

    /// Every file graph that records a fingerprint, sorted by graph.
    pub fn file_fingerprints(&self) -> Result<Vec<FileFingerprint>, GraphError> {
        let predicate = NamedNodeRef::new_unchecked(kg::CANONICAL_HASH);
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
                    .metadata_value(graph.as_ref(), kg::SOURCE_FILE_PATH)?
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
        let mut builder = FingerprintBuilder::new(Some(&graph), limits);
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

    /// Quads that exercise the serialisation: escapes, language tags, datatypes,
    /// named and blank graphs, duplicates, and a dozen blank nodes (`c14n1` and
    /// `c14n10` sort as lines).
    fn tricky_quads() -> Vec<Quad> {
        let mut text = String::from(
            r#"<urn:s> <urn:p> "quote \" backslash \\ newline \n return \r tab \t" .
<urn:s> <urn:p> "bell \u0007 del \u007F backspace \b feed \f é ☃" <urn:g> .
<urn:s> <urn:p> "Hallo"@DE-at .
<urn:s> <urn:p> "plain"^^<http://www.w3.org/2001/XMLSchema#string> .
<urn:s> <urn:p> "plain" .
<urn:s> <urn:p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> _:graph .
<urn:s> <urn:p> "a" .
<urn:s> <urn:p> "a"@en .
<urn:s> <urn:p> "a"^^<urn:type> .
"#,
        );
        for i in 0..12 {
            text.push_str(&format!(
                "_:n{i} <urn:next> _:n{} .\n_:n{i} <urn:rank> \"{i}\" .\n",
                i + 1
            ));
        }
        RdfParser::from_format(RdfFormat::NQuads)
            .for_slice(text.as_bytes())
            .collect::<Result<_, _>>()
            .expect("parse")
    }

    #[test]
    fn the_lines_are_sophias_canonical_nquads() {
        let quads = tricky_quads();
        let dataset: HashSet<([SimpleTerm<'_>; 3], Option<SimpleTerm<'_>>)> =
            quads.iter().map(|q| spog(q.as_ref())).collect();
        let mut sophia = Vec::new();
        rdfc10::normalize_with::<Sha256, _, _>(
            &dataset,
            &mut sophia,
            DEPTH_FACTOR,
            PERMUTATION_LIMIT,
        )
        .expect("sophia");
        let mut builder = FingerprintBuilder::new(None, FingerprintLimits::default());
        for quad in quads.iter().chain(&quads) {
            builder.add(quad.as_ref());
        }
        let ours = builder.canonical_lines().expect("canonical").concat();
        assert_eq!(ours, String::from_utf8(sophia).expect("utf-8"));
        assert!(ours.contains("_:c14n10 "), "{ours}");
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
