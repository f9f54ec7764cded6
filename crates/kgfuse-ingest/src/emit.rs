//! A small builder for the triples of one source file.

use kgfuse_core::vocab::{kg, w3c};
use oxrdf::{Literal, NamedNode, Triple};

/// Percent-encodes everything but unreserved characters and a few safe path
/// characters, so any name can sit inside an IRI path.
pub(crate) fn iri_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Builds an IRI from a base that is already valid and an encoded tail.
pub(crate) fn iri(base: &str, tail: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{base}{}", iri_segment(tail)))
}

/// The kgfuse (or W3C) term with this full IRI.
pub(crate) fn term(iri: &str) -> NamedNode {
    NamedNode::new_unchecked(iri)
}

/// Collects triples for one file.
#[derive(Debug, Default)]
pub(crate) struct Triples {
    pub(crate) triples: Vec<Triple>,
}

impl Triples {
    /// `subject predicate object` with an IRI object.
    pub(crate) fn link(&mut self, subject: &NamedNode, predicate: &str, object: &NamedNode) {
        self.triples.push(Triple::new(
            subject.clone(),
            term(predicate),
            object.clone(),
        ));
    }

    /// `subject rdf:type class`.
    pub(crate) fn typed(&mut self, subject: &NamedNode, class: &str) {
        self.link(subject, w3c::RDF_TYPE, &term(class));
    }

    /// `subject predicate "text"`; empty text is not written.
    pub(crate) fn text(&mut self, subject: &NamedNode, predicate: &str, text: &str) {
        if !text.trim().is_empty() {
            self.triples.push(Triple::new(
                subject.clone(),
                term(predicate),
                Literal::new_simple_literal(text),
            ));
        }
    }

    /// `subject predicate "n"^^xsd:integer`.
    pub(crate) fn integer(&mut self, subject: &NamedNode, predicate: &str, value: i64) {
        self.triples.push(Triple::new(
            subject.clone(),
            term(predicate),
            Literal::from(value),
        ));
    }

    /// `rdfs:label`, `kgfuse:name` in one go.
    pub(crate) fn named(&mut self, subject: &NamedNode, label: &str, name: &str) {
        self.text(subject, w3c::RDFS_LABEL, label);
        self.text(subject, kg::NAME, name);
    }
}
