//! Checking the vocabulary of a query against what the store knows, before it runs.
//!
//! A generated query (by a template over extracted entities, or by a language model)
//! that names a predicate or class the store has never heard of can only return
//! nothing, silently. [`Graph::unknown_terms`] finds such terms so the caller can
//! reject the query and say why. A term is known when the store declares it (typed
//! as a class or property in any graph, e.g. by a loaded ontology), when the data
//! uses it (as a predicate, or as the class of some node), or when it belongs to
//! RDF, RDFS, OWL or XSD.

use crate::{Graph, GraphError};
use oxigraph::model::{GraphNameRef, NamedNodeRef, TermRef};
use spargebra::algebra::{GraphPattern, PropertyPathExpression};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use std::collections::BTreeSet;

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// Namespaces whose terms are always known.
const BUILT_IN: [&str; 4] = [
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
];

const PROPERTY_TYPES: [&str; 4] = [
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#Property",
    "http://www.w3.org/2002/07/owl#ObjectProperty",
    "http://www.w3.org/2002/07/owl#DatatypeProperty",
    "http://www.w3.org/2002/07/owl#AnnotationProperty",
];

const CLASS_TYPES: [&str; 2] = [
    "http://www.w3.org/2002/07/owl#Class",
    "http://www.w3.org/2000/01/rdf-schema#Class",
];

/// The predicates and classes a query names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryVocabulary {
    /// IRIs in predicate position (including inside property paths).
    pub predicates: BTreeSet<String>,
    /// Alternatives of a property path (`rdfs:label|skos:altLabel`): such a set is
    /// fine when one member is known, so its members are not in `predicates`.
    pub alternatives: Vec<BTreeSet<String>>,
    /// IRIs in object position of `rdf:type`.
    pub classes: BTreeSet<String>,
}

/// The vocabulary of a parsed query (patterns inside FILTER EXISTS are not visited).
pub fn query_vocabulary(query: &spargebra::Query) -> QueryVocabulary {
    let mut out = QueryVocabulary::default();
    match query {
        spargebra::Query::Select { pattern, .. }
        | spargebra::Query::Describe { pattern, .. }
        | spargebra::Query::Ask { pattern, .. } => visit(pattern, &mut out),
        spargebra::Query::Construct {
            template, pattern, ..
        } => {
            for triple in template {
                triple_terms(triple, &mut out);
            }
            visit(pattern, &mut out);
        }
    }
    out
}

fn triple_terms(triple: &TriplePattern, out: &mut QueryVocabulary) {
    if let NamedNodePattern::NamedNode(predicate) = &triple.predicate {
        if predicate.as_str() == RDF_TYPE
            && let TermPattern::NamedNode(class) = &triple.object
        {
            out.classes.insert(class.as_str().to_owned());
        }
        out.predicates.insert(predicate.as_str().to_owned());
    }
}

fn path_terms(path: &PropertyPathExpression, out: &mut QueryVocabulary) {
    match path {
        PropertyPathExpression::NamedNode(n) => {
            out.predicates.insert(n.as_str().to_owned());
        }
        PropertyPathExpression::Reverse(p)
        | PropertyPathExpression::ZeroOrMore(p)
        | PropertyPathExpression::OneOrMore(p)
        | PropertyPathExpression::ZeroOrOne(p) => path_terms(p, out),
        PropertyPathExpression::Sequence(a, b) => {
            path_terms(a, out);
            path_terms(b, out);
        }
        PropertyPathExpression::Alternative(..) => {
            let mut members = QueryVocabulary::default();
            alternative_members(path, &mut members);
            out.alternatives.push(members.predicates);
            out.alternatives.extend(members.alternatives);
        }
        PropertyPathExpression::NegatedPropertySet(set) => {
            out.predicates
                .extend(set.iter().map(|n| n.as_str().to_owned()));
        }
    }
}

/// The plain members of a chain of alternatives; anything nested goes through
/// [`path_terms`].
fn alternative_members(path: &PropertyPathExpression, out: &mut QueryVocabulary) {
    match path {
        PropertyPathExpression::Alternative(a, b) => {
            alternative_members(a, out);
            alternative_members(b, out);
        }
        PropertyPathExpression::NamedNode(n) => {
            out.predicates.insert(n.as_str().to_owned());
        }
        other => {
            let mut nested = QueryVocabulary::default();
            path_terms(other, &mut nested);
            out.predicates.extend(nested.predicates);
            out.alternatives.extend(nested.alternatives);
        }
    }
}

fn visit(pattern: &GraphPattern, out: &mut QueryVocabulary) {
    match pattern {
        GraphPattern::Bgp { patterns } => {
            for triple in patterns {
                triple_terms(triple, out);
            }
        }
        GraphPattern::Path { path, .. } => path_terms(path, out),
        GraphPattern::Join { left, right }
        | GraphPattern::LeftJoin { left, right, .. }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => {
            visit(left, out);
            visit(right, out);
        }
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Graph { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Group { inner, .. }
        | GraphPattern::Service { inner, .. } => visit(inner, out),
        GraphPattern::Values { .. } => {}
    }
}

impl Graph {
    /// The terms of `vocabulary` that the store neither declares nor uses (see the
    /// module documentation), each as `predicate <iri>` or `class <iri>`.
    pub fn unknown_terms(&self, vocabulary: &QueryVocabulary) -> Result<Vec<String>, GraphError> {
        let spent = self.spent.clone();
        spent.measure(|| self.check_vocabulary(vocabulary))
    }

    fn check_vocabulary(&self, vocabulary: &QueryVocabulary) -> Result<Vec<String>, GraphError> {
        let mut unknown = Vec::new();
        let rdf_type = NamedNodeRef::new_unchecked(RDF_TYPE);
        let any = |s: Option<NamedNodeRef<'_>>,
                   p: Option<NamedNodeRef<'_>>,
                   o: Option<NamedNodeRef<'_>>|
         -> Result<bool, GraphError> {
            Ok(self
                .store
                .quads_for_pattern(
                    s.map(Into::into),
                    p,
                    o.map(TermRef::from),
                    None::<GraphNameRef<'_>>,
                )
                .next()
                .transpose()?
                .is_some())
        };
        let known_predicate = |predicate: &str| -> Result<bool, GraphError> {
            if BUILT_IN.iter().any(|ns| predicate.starts_with(ns)) {
                return Ok(true);
            }
            let node = NamedNodeRef::new_unchecked(predicate);
            if any(None, Some(node), None)? {
                return Ok(true);
            }
            for kind in PROPERTY_TYPES {
                if any(
                    Some(node),
                    Some(rdf_type),
                    Some(NamedNodeRef::new_unchecked(kind)),
                )? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        for predicate in &vocabulary.predicates {
            if !known_predicate(predicate)? {
                unknown.push(format!("predicate <{predicate}>"));
            }
        }
        for group in &vocabulary.alternatives {
            let mut any_known = false;
            for predicate in group {
                if known_predicate(predicate)? {
                    any_known = true;
                    break;
                }
            }
            if !any_known && !group.is_empty() {
                let list: Vec<String> = group.iter().map(|p| format!("<{p}>")).collect();
                unknown.push(format!("predicate {}", list.join(" | ")));
            }
        }
        for class in &vocabulary.classes {
            if BUILT_IN.iter().any(|ns| class.starts_with(ns)) {
                continue;
            }
            let node = NamedNodeRef::new_unchecked(class);
            let mut known = any(None, Some(rdf_type), Some(node))?;
            for kind in CLASS_TYPES {
                if known {
                    break;
                }
                known = any(
                    Some(node),
                    Some(rdf_type),
                    Some(NamedNodeRef::new_unchecked(kind)),
                )?;
            }
            if !known {
                unknown.push(format!("class <{class}>"));
            }
        }
        Ok(unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QueryOptions, parse_query};

    #[test]
    fn finds_predicates_and_classes_the_store_does_not_know() {
        let graph = Graph::in_memory().expect("graph");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g> { \
                   <urn:declared> a <http://www.w3.org/2002/07/owl#ObjectProperty> . \
                   <urn:Thing> a <http://www.w3.org/2002/07/owl#Class> . \
                   <urn:a> <urn:used> <urn:b> ; a <urn:UsedClass> } }",
                &QueryOptions::default(),
            )
            .expect("load");
        let query = parse_query(
            "SELECT * WHERE { ?s <urn:declared> ?o ; <urn:used>/<urn:invented>* ?x ; \
               a <urn:Thing> , <urn:UsedClass> , <urn:Imagined> ; \
               <http://www.w3.org/2000/01/rdf-schema#label> ?l ; \
               <urn:used>|<urn:dreamt> ?y ; <urn:dreamt>|<urn:fancied> ?w \
               OPTIONAL { ?o <urn:also-invented> ?z } }",
            &QueryOptions::default(),
        )
        .expect("parse");
        let vocabulary = query_vocabulary(&query);
        assert!(vocabulary.classes.contains("urn:Imagined"));
        let unknown = graph.unknown_terms(&vocabulary).expect("check");
        assert_eq!(
            unknown,
            [
                "predicate <urn:also-invented>",
                "predicate <urn:invented>",
                "predicate <urn:dreamt> | <urn:fancied>",
                "class <urn:Imagined>"
            ]
        );
    }
}
