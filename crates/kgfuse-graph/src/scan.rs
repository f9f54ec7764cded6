//! Scans over the dataset that the paired store uses to keep vectors in step.

use crate::backend::End;
use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
use kgfuse_core::vocab::w3c;
use oxigraph::model::{GraphName, NamedNode, NamedNodeRef, NamedOrBlankNode, Quad, Term};
use std::collections::{BTreeMap, BTreeSet};

/// One literal carried by a text predicate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextLiteral {
    /// Subject IRI.
    pub subject: String,
    /// Index of the predicate in the list given to the scan.
    pub predicate: usize,
    /// Lexical value of the literal.
    pub value: String,
    /// Graph holding the quad (`""` for the default graph).
    pub graph: String,
}

/// Size of the dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GraphStats {
    /// Number of quads.
    pub quads: usize,
    /// Number of named graphs.
    pub graphs: usize,
    /// Distinct IRI subjects by rdf:type, largest first.
    pub classes: Vec<(String, u64)>,
}

fn graph_label(graph: &GraphName) -> String {
    match graph {
        GraphName::NamedNode(n) => n.as_str().to_owned(),
        GraphName::BlankNode(b) => b.to_string(),
        GraphName::DefaultGraph => String::new(),
    }
}

/// A literal of the `predicate`-th text predicate on an IRI, unless it is
/// derived (only asserted text is embedded).
fn text_literal(quad: &Quad, predicate: usize) -> Option<TextLiteral> {
    if crate::inferred::is_inferred(&quad.graph_name) {
        return None;
    }
    match (&quad.subject, &quad.object) {
        (NamedOrBlankNode::NamedNode(s), Term::Literal(l)) => Some(TextLiteral {
            subject: s.as_str().to_owned(),
            predicate,
            value: l.value().to_owned(),
            graph: graph_label(&quad.graph_name),
        }),
        _ => None,
    }
}

impl Graph {
    /// Every literal of the given predicates whose subject is an IRI.
    /// Blank-node subjects are skipped: vector rows are keyed by IRI.
    pub fn text_literals(&self, predicates: &[NamedNode]) -> Result<Vec<TextLiteral>, GraphError> {
        self.literals(None, predicates)
    }

    /// The literals of the given predicates on each of `subjects` (asserted ones
    /// only; an IRI that does not parse has none), read together: on a SPARQL
    /// server, one query per 500 subjects.
    pub fn text_literals_of(
        &self,
        subjects: &[String],
        predicates: &[NamedNode],
    ) -> Result<Vec<TextLiteral>, GraphError> {
        let nodes: Vec<Term> = subjects
            .iter()
            .filter_map(|s| NamedNode::new(s.as_str()).ok().map(Term::from))
            .collect();
        if nodes.is_empty() || predicates.is_empty() {
            return Ok(Vec::new());
        }
        let quads = self.quads_at(End::Subject, &nodes, predicates, None)?;
        Ok(quads
            .into_iter()
            .filter_map(|quad| {
                let predicate = predicates.iter().position(|p| *p == quad.predicate)?;
                text_literal(&quad, predicate)
            })
            .collect())
    }

    fn literals(
        &self,
        subject: Option<NamedNodeRef<'_>>,
        predicates: &[NamedNode],
    ) -> Result<Vec<TextLiteral>, GraphError> {
        let mut out = Vec::new();
        for (index, predicate) in predicates.iter().enumerate() {
            for quad in self.quads(
                subject.map(Into::into),
                Some(predicate.as_ref()),
                None,
                None,
            ) {
                out.extend(text_literal(&quad?, index));
            }
        }
        Ok(out)
    }

    /// IRI subjects that carry one of the predicates inside one named graph.
    pub fn text_subjects_in_graph(
        &self,
        graph: &NamedNode,
        predicates: &[NamedNode],
    ) -> Result<BTreeSet<String>, GraphError> {
        let mut out = BTreeSet::new();
        for predicate in predicates {
            for quad in self.quads(
                None,
                Some(predicate.as_ref()),
                None,
                Some(graph.as_ref().into()),
            ) {
                if let NamedOrBlankNode::NamedNode(s) = quad?.subject {
                    out.insert(s.into_string());
                }
            }
        }
        Ok(out)
    }

    /// Whether some node has one of `types` (asserted or derived). On a SPARQL
    /// server the answer is remembered like the vocabulary check's (until this
    /// process writes, 5 s at most), so a retrieval that asks "does the store
    /// hold code?" pays for it once in a while, not on every request.
    pub fn has_instances(&self, types: &[&str]) -> Result<bool, GraphError> {
        let question = format!("instances of {}", types.join(" "));
        let endpoint = self.endpoint();
        if let Some(known) = endpoint.and_then(|e| e.recall(&question)) {
            return Ok(known);
        }
        let rdf_type = NamedNodeRef::new_unchecked(w3c::RDF_TYPE);
        let mut found = false;
        for class in types {
            let Ok(class) = NamedNodeRef::new(class) else {
                continue;
            };
            if self.holds(None, Some(rdf_type), Some(class.into()), None)? {
                found = true;
                break;
            }
        }
        if let Some(endpoint) = endpoint {
            endpoint.remember([(question, found)]);
        }
        Ok(found)
    }

    /// The rdf:type IRIs of each subject that has one, sorted and deduplicated,
    /// read together (on a SPARQL server, one query per 500 subjects).
    pub fn types_of_all(
        &self,
        subjects: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>, GraphError> {
        let nodes: Vec<Term> = subjects
            .iter()
            .filter_map(|s| NamedNode::new(s.as_str()).ok().map(Term::from))
            .collect();
        let rdf_type = NamedNode::new_unchecked(w3c::RDF_TYPE);
        let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for quad in self.quads_at(End::Subject, &nodes, &[rdf_type], None)? {
            if let (NamedOrBlankNode::NamedNode(s), Term::NamedNode(t)) =
                (quad.subject, quad.object)
            {
                types
                    .entry(s.into_string())
                    .or_default()
                    .insert(t.into_string());
            }
        }
        Ok(types
            .into_iter()
            .map(|(s, t)| (s, t.into_iter().collect()))
            .collect())
    }

    /// Named graphs, sorted.
    pub fn named_graphs(&self) -> Result<Vec<String>, GraphError> {
        let mut graphs: Vec<String> = self
            .graph_names()?
            .iter()
            .map(ToString::to_string)
            .collect();
        graphs.sort();
        Ok(graphs)
    }

    /// Quads, graphs and typed nodes per class.
    pub fn stats(&self) -> Result<GraphStats, GraphError> {
        let outcome = self.query(
            "SELECT ?class (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?class FILTER(isIRI(?s)) } \
             GROUP BY ?class ORDER BY DESC(?n) ?class",
            &QueryOptions {
                timeout: None,
                ..QueryOptions::default()
            },
        )?;
        let mut classes = BTreeMap::new();
        if let QueryOutcome::Solutions { rows, .. } = outcome {
            for row in rows {
                if let [Some(Term::NamedNode(class)), Some(Term::Literal(n))] = row.as_slice() {
                    classes.insert(class.as_str().to_owned(), n.value().parse().unwrap_or(0));
                }
            }
        }
        let mut classes: Vec<(String, u64)> = classes.into_iter().collect();
        classes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(GraphStats {
            quads: self.len()?,
            graphs: self.named_graphs()?.len(),
            classes,
        })
    }
}
