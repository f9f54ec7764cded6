//! Reading test manifests: the few graph lookups both harnesses (SPARQL and
//! SHACL) need.

use anyhow::{Result, bail};
use oxrdf::vocab::rdf;
use oxrdf::{Graph, NamedNodeRef, NamedOrBlankNode, Term, TermRef};

/// Whether a term is `rdf:nil`.
pub fn is_nil(term: &Term) -> bool {
    matches!(term, Term::NamedNode(n) if n.as_ref() == rdf::NIL)
}

/// A term as a subject, `None` for a literal.
pub fn as_subject(term: Term) -> Option<NamedOrBlankNode> {
    match term {
        Term::NamedNode(n) => Some(n.into()),
        Term::BlankNode(b) => Some(b.into()),
        Term::Literal(_) => None,
    }
}

/// The first object of `subject predicate ?o`.
pub fn object_of(
    graph: &Graph,
    subject: &NamedOrBlankNode,
    predicate: NamedNodeRef<'_>,
) -> Option<Term> {
    graph
        .object_for_subject_predicate(subject, predicate)
        .map(TermRef::into_owned)
}

/// The first object of `subject <ns local> ?o`.
pub fn object(graph: &Graph, subject: &NamedOrBlankNode, ns: &str, local: &str) -> Option<Term> {
    object_of(
        graph,
        subject,
        NamedNodeRef::new_unchecked(&format!("{ns}{local}")),
    )
}

/// Every object of `subject <ns local> ?o`.
pub fn objects(graph: &Graph, subject: &NamedOrBlankNode, ns: &str, local: &str) -> Vec<Term> {
    let predicate = format!("{ns}{local}");
    graph
        .objects_for_subject_predicate(subject, NamedNodeRef::new_unchecked(&predicate))
        .map(TermRef::into_owned)
        .collect()
}

/// The members of an RDF list.
pub fn list(graph: &Graph, head: &Term) -> Result<Vec<Term>> {
    let mut members = Vec::new();
    let mut node = head.clone();
    while !is_nil(&node) {
        if members.len() > 10_000 {
            bail!("an RDF list that does not end (a cycle?)");
        }
        let Some(subject) = as_subject(node.clone()) else {
            bail!("{node} is not an RDF list node");
        };
        let (Some(first), Some(rest)) = (
            object_of(graph, &subject, rdf::FIRST),
            object_of(graph, &subject, rdf::REST),
        ) else {
            bail!("{node} is not an RDF list node");
        };
        members.push(first);
        node = rest;
    }
    Ok(members)
}

/// The members of an RDF list that may be absent (none then).
pub fn optional_list(graph: &Graph, head: Option<Term>) -> Result<Vec<Term>> {
    head.map_or_else(|| Ok(Vec::new()), |head| list(graph, &head))
}
