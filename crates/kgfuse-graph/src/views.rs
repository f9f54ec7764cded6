//! In-memory views of the union graph for checks that need a graph as a whole
//! (SHACL validation): everything, or the neighbourhood of some nodes.

use crate::{Graph, GraphError};
use oxigraph::model::vocab::{rdf, rdfs};
use oxigraph::model::{NamedOrBlankNode, Term};
use std::collections::HashSet;

impl Graph {
    /// Every triple of the union graph (asserted and inferred), once, in memory:
    /// about as large as the store's triples in RAM.
    pub fn union_graph(&self) -> Result<oxigraph::model::Graph, GraphError> {
        let mut graph = oxigraph::model::Graph::new();
        for quad in self.all_quads() {
            graph.insert(quad?.as_ref());
        }
        Ok(graph)
    }

    /// The triples (of any graph, the derived one included) whose subject is one
    /// of `nodes`, the `rdf:type` triples of every node they point at, and every
    /// `rdfs:subClassOf` triple: enough to check shapes whose paths are one step
    /// long on `nodes`.
    pub fn neighbourhood_graph(
        &self,
        nodes: &HashSet<NamedOrBlankNode>,
    ) -> Result<oxigraph::model::Graph, GraphError> {
        let mut graph = oxigraph::model::Graph::new();
        let mut objects = HashSet::new();
        for node in nodes {
            for quad in self.quads(Some(node.as_ref()), None, None, None) {
                let quad = quad?;
                match &quad.object {
                    Term::NamedNode(n) => {
                        objects.insert(NamedOrBlankNode::from(n.clone()));
                    }
                    Term::BlankNode(b) => {
                        objects.insert(NamedOrBlankNode::from(b.clone()));
                    }
                    Term::Literal(_) => {}
                }
                graph.insert(quad.as_ref());
            }
        }
        for object in objects.difference(nodes) {
            for quad in self.quads(Some(object.as_ref()), Some(rdf::TYPE), None, None) {
                graph.insert(quad?.as_ref());
            }
        }
        for quad in self.quads(None, Some(rdfs::SUB_CLASS_OF), None, None) {
            graph.insert(quad?.as_ref());
        }
        Ok(graph)
    }
}
