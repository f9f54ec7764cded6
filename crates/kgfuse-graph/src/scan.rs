//! Scans over the dataset that the paired store uses to keep vectors in step.

use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
use kgfuse_core::vocab::w3c;
use oxigraph::model::{GraphName, NamedNode, NamedNodeRef, NamedOrBlankNode, Term};
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

impl Graph {
    /// Every literal of the given predicates whose subject is an IRI.
    /// Blank-node subjects are skipped: vector rows are keyed by IRI.
    pub fn text_literals(&self, predicates: &[NamedNode]) -> Result<Vec<TextLiteral>, GraphError> {
        self.literals(None, predicates)
    }

    /// The literals of the given predicates on one subject.
    pub fn text_literals_of(
        &self,
        subject: &str,
        predicates: &[NamedNode],
    ) -> Result<Vec<TextLiteral>, GraphError> {
        match NamedNodeRef::new(subject) {
            Ok(node) => self.literals(Some(node), predicates),
            Err(_) => Ok(Vec::new()),
        }
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
                let quad = quad?;
                if crate::inferred::is_inferred(&quad.graph_name) {
                    continue; // only asserted text is embedded
                }
                if let (NamedOrBlankNode::NamedNode(s), Term::Literal(l)) =
                    (&quad.subject, &quad.object)
                {
                    out.push(TextLiteral {
                        subject: s.as_str().to_owned(),
                        predicate: index,
                        value: l.value().to_owned(),
                        graph: graph_label(&quad.graph_name),
                    });
                }
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

    /// The rdf:type IRIs of a subject, sorted and deduplicated.
    pub fn types_of(&self, subject: &str) -> Result<Vec<String>, GraphError> {
        let Ok(node) = NamedNodeRef::new(subject) else {
            return Ok(Vec::new());
        };
        let mut types = BTreeSet::new();
        for quad in self.quads(
            Some(node.into()),
            Some(NamedNodeRef::new_unchecked(w3c::RDF_TYPE)),
            None,
            None,
        ) {
            if let Term::NamedNode(t) = quad?.object {
                types.insert(t.into_string());
            }
        }
        Ok(types.into_iter().collect())
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
