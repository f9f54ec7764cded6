//! SHACL validation of the store, and of files before they are loaded
//! ([`kgfuse_shacl`] does the checking; this module decides the data graph).

use crate::{Store, StoreError};
use kgfuse_entail::Schema;
use kgfuse_graph::model::{NamedOrBlankNode, Term, Triple};
use kgfuse_graph::{LoadRequest, parse_planned_file};
use kgfuse_shacl::{Report, Shapes};
use std::collections::HashSet;
use std::path::PathBuf;

/// The validation of one file of a load.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileValidation {
    /// The file.
    pub file: PathBuf,
    /// What its nodes violate (only results whose focus node the file mentions).
    pub report: Report,
}

impl Store {
    /// Validates the whole union graph (asserted and inferred triples) against
    /// `shapes`. The graph is copied into memory for the check.
    pub fn validate(&self, shapes: &Shapes) -> Result<Report, StoreError> {
        let graph = self.graph.union_graph()?;
        Ok(shapes.validate_graph(&graph, &|_| true)?)
    }

    /// Validates what loading `request` would add, file by file, writing nothing.
    ///
    /// Each file is checked as it would sit in the store: its own triples, what
    /// the store already says about the nodes it mentions (one step out, with the
    /// types of their neighbours and every subclass axiom), and, when the store
    /// infers, what RDFS entailment adds to the file's triples. Only the nodes the
    /// file mentions are focus nodes, so a problem elsewhere in the store does not
    /// block a load (`kgfuse validate` reports those).
    pub fn validate_load(
        &self,
        request: &LoadRequest,
        shapes: &Shapes,
    ) -> Result<Vec<FileValidation>, StoreError> {
        let plan = self.graph.plan_load(request)?;
        let store_schema = if self.entails() {
            Some(self.graph.schema_triples()?)
        } else {
            None
        };
        let mut out = Vec::new();
        for file in &plan.files {
            let triples: Vec<Triple> = parse_planned_file(file)?
                .into_iter()
                .map(Triple::from)
                .collect();
            let nodes = mentioned_nodes(&triples);
            let mut graph = self.graph.neighbourhood_graph(&nodes)?;
            for triple in &triples {
                graph.insert(triple);
            }
            if let Some(store_schema) = &store_schema {
                let schema = Schema::from_triples(store_schema.iter().chain(&triples));
                for triple in &triples {
                    for inferred in schema.expand(triple) {
                        graph.insert(&inferred.triple);
                    }
                }
            }
            let keep = |term: &Term| match term {
                Term::NamedNode(n) => nodes.contains(&NamedOrBlankNode::from(n.clone())),
                Term::BlankNode(b) => nodes.contains(&NamedOrBlankNode::from(b.clone())),
                Term::Literal(_) => false,
            };
            out.push(FileValidation {
                file: file.path.clone(),
                report: shapes.validate_graph(&graph, &keep)?,
            });
        }
        Ok(out)
    }
}

/// The subjects and node objects of some triples.
fn mentioned_nodes(triples: &[Triple]) -> HashSet<NamedOrBlankNode> {
    let mut nodes = HashSet::new();
    for triple in triples {
        nodes.insert(triple.subject.clone());
        match &triple.object {
            Term::NamedNode(n) => {
                nodes.insert(n.clone().into());
            }
            Term::BlankNode(b) => {
                nodes.insert(b.clone().into());
            }
            Term::Literal(_) => {}
        }
    }
    nodes
}
