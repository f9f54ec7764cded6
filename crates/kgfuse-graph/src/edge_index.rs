//! The walkable edges of an embedded graph held in memory, for the walks of
//! [`crate::templates::WalkRounds`].
//!
//! A walk reads the edges at each node it reaches. From Oxigraph that is two index
//! scans per node (out and in), each opening RocksDB iterators and decoding every
//! quad, literals included: about 0.1-0.2 ms a node, and a retrieval's walks reach
//! a few hundred nodes. Held in memory, the same read is a lookup.
//!
//! Building the index reads every IRI-to-IRI edge once (about 7 µs a quad of the
//! graph: 0.6 s for LUBM-1's 100k quads, 9 s for LUBM-10's 1.3M), so it pays off
//! only for a graph that is walked again and again (a server, an agent's
//! session), not for a one-shot command. The store builds it once walks have
//! spent about as long reading from Oxigraph as building would take
//! ([`Graph::walk_read_time`]; the rule of renting skis until the rent adds up to
//! the price). Graphs with more than a given number of edges are not indexed: the
//! walks read them from Oxigraph as before.
//!
//! The `rdf:type` edges are kept apart: walks do not take them, but linking's
//! tie-break reads a candidate's every neighbour, its classes and instances
//! included ([`EdgeIndex::neighbours`]).

use crate::backend::Backend;
use crate::edge::Edge;
use crate::{Graph, GraphError, QueryOptions};
use oxigraph::model::{NamedNode, Term};
use oxigraph::sparql::QueryResults;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

const RDF_TYPE: &str = kgfuse_core::vocab::w3c::RDF_TYPE;

/// The IRI-to-IRI edges of a graph by node, in memory: the walkable ones, and
/// apart from them the `rdf:type` edges (which walks do not take).
#[derive(Debug, Default)]
pub struct EdgeIndex {
    /// IRIs by id.
    iris: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
    /// By node id: (predicate, object) of its outgoing edges.
    outgoing: Vec<Vec<(u32, u32)>>,
    /// By node id: (subject, predicate) of its incoming edges.
    incoming: Vec<Vec<(u32, u32)>>,
    /// By node id: the classes it is typed with (`rdf:type` objects).
    types: Vec<Vec<u32>>,
    /// By node id: the nodes typed with it (`rdf:type` subjects).
    instances: Vec<Vec<u32>>,
    edges: usize,
    typings: usize,
}

impl EdgeIndex {
    /// How many walkable edges the index holds, `rdf:type` edges not counted (an
    /// edge stated in two graphs counts twice).
    pub fn len(&self) -> usize {
        self.edges
    }

    /// Whether the index holds no edge.
    pub fn is_empty(&self) -> bool {
        self.edges == 0
    }

    fn id(&mut self, iri: &str) -> u32 {
        if let Some(id) = self.ids.get(iri) {
            return *id;
        }
        let id = u32::try_from(self.iris.len()).unwrap_or(u32::MAX);
        let iri: Box<str> = iri.into();
        self.iris.push(iri.clone());
        self.ids.insert(iri, id);
        self.outgoing.push(Vec::new());
        self.incoming.push(Vec::new());
        self.types.push(Vec::new());
        self.instances.push(Vec::new());
        id
    }

    fn add(&mut self, subject: &str, predicate: &str, object: &str) {
        if predicate == RDF_TYPE {
            let (s, o) = (self.id(subject), self.id(object));
            self.types[s as usize].push(o);
            self.instances[o as usize].push(s);
            self.typings += 1;
            return;
        }
        let (s, p, o) = (self.id(subject), self.id(predicate), self.id(object));
        self.outgoing[s as usize].push((p, o));
        self.incoming[o as usize].push((s, p));
        self.edges += 1;
    }

    fn iri(&self, id: u32) -> &str {
        &self.iris[id as usize]
    }

    /// The (predicate, object) of every edge from `node`, in no set order.
    pub fn outgoing(&self, node: &str) -> impl Iterator<Item = (&str, &str)> {
        self.pairs(&self.outgoing, node)
    }

    /// The (subject, predicate) of every edge to `node`, in no set order.
    pub fn incoming(&self, node: &str) -> impl Iterator<Item = (&str, &str)> {
        self.pairs(&self.incoming, node)
    }

    /// Every IRI one edge away from `node` in either direction, `rdf:type` edges
    /// included: what `{ node ?p ?x } UNION { ?x ?p node } FILTER(isIRI(?x))`
    /// binds `?x` to, an IRI as often as there are such edges (an edge stated in
    /// two graphs counts twice).
    pub fn neighbours<'s>(&'s self, node: &str) -> impl Iterator<Item = &'s str> {
        let id = self.ids.get(node).map(|&id| id as usize);
        let list = |lists: &'s [Vec<u32>]| id.map_or(&[][..], |id| lists[id].as_slice());
        let pairs = |lists: &'s [Vec<(u32, u32)>]| id.map_or(&[][..], |id| lists[id].as_slice());
        let objects = pairs(&self.outgoing).iter().map(|&(_, o)| o);
        let subjects = pairs(&self.incoming).iter().map(|&(s, _)| s);
        objects
            .chain(subjects)
            .chain(list(&self.types).iter().copied())
            .chain(list(&self.instances).iter().copied())
            .map(|id| self.iri(id))
    }

    /// The pairs `lists` holds for `node`, as IRIs.
    fn pairs<'s>(
        &'s self,
        lists: &'s [Vec<(u32, u32)>],
        node: &str,
    ) -> impl Iterator<Item = (&'s str, &'s str)> {
        self.ids
            .get(node)
            .map_or(&[][..], |&id| lists[id as usize].as_slice())
            .iter()
            .map(|&(a, b)| (self.iri(a), self.iri(b)))
    }

    /// The edges at `node` as [`Graph::edges_at`] returns them: its outgoing
    /// edges sorted, then its incoming ones, each direction without repeats and
    /// at most `per_direction` long.
    pub(crate) fn around(&self, node: &str, per_direction: usize) -> Vec<(NamedNode, Edge)> {
        let edge = |subject: &str, predicate: &str, object: &str| Edge {
            subject: subject.to_owned(),
            predicate: predicate.to_owned(),
            object: object.to_owned(),
        };
        let outgoing = sorted(self.outgoing(node).collect(), per_direction)
            .into_iter()
            .map(|(p, o)| (NamedNode::new_unchecked(o), edge(node, p, o)));
        let incoming = sorted(self.incoming(node).collect(), per_direction)
            .into_iter()
            .map(|(s, p)| (NamedNode::new_unchecked(s), edge(s, p, node)));
        outgoing.chain(incoming).collect()
    }
}

/// `pairs` sorted, without repeats, the first `most`.
fn sorted<'a>(mut pairs: Vec<(&'a str, &'a str)>, most: usize) -> Vec<(&'a str, &'a str)> {
    pairs.sort_unstable();
    pairs.dedup();
    pairs.truncate(most);
    pairs
}

/// Edges read between two looks at a build's stop flag (a few milliseconds).
const STOP_CHECK_EVERY: usize = 1024;

/// Every IRI-to-IRI edge, in any graph.
const EDGES_QUERY: &str = "SELECT ?s ?p ?o WHERE { ?s ?p ?o FILTER(isIRI(?s) && isIRI(?o)) }";

impl Graph {
    /// The in-memory [`EdgeIndex`] of this embedded graph, read in one scan; `None`
    /// on a SPARQL server, or when the graph has more than `max_edges` IRI-to-IRI
    /// edges, `rdf:type` ones included (the scan stops there).
    pub fn edge_index(&self, max_edges: usize) -> Result<Option<EdgeIndex>, GraphError> {
        self.edge_index_unless_stopped(max_edges, &AtomicBool::new(false))
    }

    /// [`Graph::edge_index`], giving up (`None`) soon after `stop` is set: a
    /// build on a thread of its own ends when its store is dropped.
    pub fn edge_index_unless_stopped(
        &self,
        max_edges: usize,
        stop: &AtomicBool,
    ) -> Result<Option<EdgeIndex>, GraphError> {
        let Backend::Embedded(store) = &self.backend else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let query = crate::sparql::parse_query(EDGES_QUERY, &QueryOptions::default())?;
        let mut prepared = crate::sparql::evaluator().for_query(query);
        prepared.dataset_mut().set_default_graph_as_union();
        let QueryResults::Solutions(solutions) = prepared
            .on_store(store)
            .execute()
            .map_err(|e| GraphError::Evaluation(e.to_string()))?
        else {
            return Ok(None);
        };
        let mut index = EdgeIndex::default();
        for (read, solution) in solutions.enumerate() {
            if read % STOP_CHECK_EVERY == 0 && stop.load(Ordering::Relaxed) {
                tracing::debug!("edge index: stopped after {read} edges");
                return Ok(None);
            }
            let solution = solution.map_err(|e| GraphError::Evaluation(e.to_string()))?;
            if index.edges + index.typings >= max_edges {
                tracing::debug!("more than {max_edges} edges: walks read them from the store");
                return Ok(None);
            }
            if let (Some(Term::NamedNode(s)), Some(Term::NamedNode(p)), Some(Term::NamedNode(o))) =
                (solution.get("s"), solution.get("p"), solution.get("o"))
            {
                index.add(s.as_str(), p.as_str(), o.as_str());
            }
        }
        self.spent.add(started.elapsed());
        tracing::debug!(
            "edge index: {} edges, {} nodes, in {:.1} ms",
            index.len(),
            index.iris.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
        Ok(Some(index))
    }

    /// Time walks have spent reading edges from the store since it was opened
    /// (not from an [`EdgeIndex`]).
    pub fn walk_read_time(&self) -> std::time::Duration {
        self.walk_reads.total()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Graph, QueryOptions, QueryOutcome};
    use oxigraph::model::Term;

    #[test]
    fn neighbours_are_what_the_one_hop_query_binds() {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                "INSERT DATA { \
                  GRAPH <urn:g1> { <urn:n> a <urn:Class> ; <urn:p> <urn:out>, \"text\" . \
                                   <urn:in> <urn:p> <urn:n> . <urn:member> a <urn:n> . } \
                  GRAPH <urn:g2> { <urn:n> <urn:p> <urn:out> . } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        let QueryOutcome::Solutions { rows, .. } = graph
            .query(
                "SELECT ?x WHERE { { <urn:n> ?p ?x } UNION { ?x ?p <urn:n> } FILTER(isIRI(?x)) }",
                &QueryOptions::default(),
            )
            .expect("query")
        else {
            panic!("solutions")
        };
        let mut queried: Vec<String> = rows
            .into_iter()
            .filter_map(|row| match row.into_iter().next().flatten() {
                Some(Term::NamedNode(x)) => Some(x.into_string()),
                _ => None,
            })
            .collect();
        queried.sort();
        let index = graph
            .edge_index(usize::MAX)
            .expect("index")
            .expect("embedded");
        let mut indexed: Vec<String> = index.neighbours("urn:n").map(str::to_owned).collect();
        indexed.sort();
        assert_eq!(
            queried,
            ["urn:Class", "urn:in", "urn:member", "urn:out", "urn:out"]
        );
        assert_eq!(indexed, queried);
        assert_eq!(index.len(), 3, "rdf:type edges are not walkable");
        assert_eq!(index.neighbours("urn:unknown").count(), 0);
    }
}
