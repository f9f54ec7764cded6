//! Canned queries from the workspace's `queries/` folder.
//!
//! The same files run from the console (`.run queries/describe.rq entity=<IRI>`),
//! so what the code executes is exactly what a person can inspect and replay.
//! Parameters are bound by variable substitution, never by editing query text; a
//! bound variable must appear in the SELECT clause, so templates project their
//! parameters last.

pub use crate::edge::{Edge, Neighbourhood};
use crate::sparql::parse_query;
use crate::{EdgeIndex, Graph, GraphError, QueryOptions, QueryOutcome, Rounds};
use oxigraph::model::{NamedNode, Term};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A canned query shipped with kgfuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// `queries/describe.rq`: triples around `?entity`.
    Describe,
    /// `queries/neighbours.rq`: one-hop neighbours of `?entity`.
    Neighbours,
    /// `queries/package-functions.rq`: functions of `?package`.
    PackageFunctions,
    /// `queries/siblings.rq`: siblings of `?function`.
    Siblings,
    /// `queries/paths.rq`: paths from `?source` to `?target`.
    Paths,
    /// `queries/classes.rq`: node count per class.
    Classes,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 6] = [
        Self::Describe,
        Self::Neighbours,
        Self::PackageFunctions,
        Self::Siblings,
        Self::Paths,
        Self::Classes,
    ];

    /// File name under `queries/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Describe => "describe.rq",
            Self::Neighbours => "neighbours.rq",
            Self::PackageFunctions => "package-functions.rq",
            Self::Siblings => "siblings.rq",
            Self::Paths => "paths.rq",
            Self::Classes => "classes.rq",
        }
    }

    /// Query text.
    pub fn text(self) -> &'static str {
        match self {
            Self::Describe => include_str!("../queries/describe.rq"),
            Self::Neighbours => include_str!("../queries/neighbours.rq"),
            Self::PackageFunctions => include_str!("../queries/package-functions.rq"),
            Self::Siblings => include_str!("../queries/siblings.rq"),
            Self::Paths => include_str!("../queries/paths.rq"),
            Self::Classes => include_str!("../queries/classes.rq"),
        }
    }

    /// Variables the caller must bind.
    pub fn parameters(self) -> &'static [&'static str] {
        match self {
            Self::Describe | Self::Neighbours => &["entity"],
            Self::PackageFunctions => &["package"],
            Self::Siblings => &["function"],
            Self::Paths => &["source", "target"],
            Self::Classes => &[],
        }
    }
}

impl Graph {
    /// Runs a canned query with its parameters bound.
    pub fn run_template(
        &self,
        template: Template,
        bindings: &[(&str, Term)],
        options: &QueryOptions,
    ) -> Result<QueryOutcome, GraphError> {
        for parameter in template.parameters() {
            if !bindings.iter().any(|(name, _)| name == parameter) {
                return Err(GraphError::Usage(format!(
                    "{} needs ?{parameter} bound",
                    template.file_name()
                )));
            }
        }
        let query = parse_query(template.text(), options)?;
        let bindings: Vec<(String, Term)> = bindings
            .iter()
            .map(|(n, t)| ((*n).to_owned(), t.clone()))
            .collect();
        self.query_algebra(query, &bindings, options)
    }

    /// Breadth-first walk of up to `hops` edges from `start` in both directions,
    /// over IRI-to-IRI triples of every graph except `rdf:type` (the walk of
    /// `queries/neighbours.rq`). Returns each reached IRI with its distance, and the
    /// edges between reached nodes that were read, stopping once `max_nodes` nodes
    /// are reached. See [`Graph::neighbourhoods`].
    pub fn neighbourhood(
        &self,
        start: &NamedNode,
        hops: usize,
        max_nodes: usize,
    ) -> Result<Neighbourhood, GraphError> {
        Ok(self
            .neighbourhoods(std::slice::from_ref(start), hops, max_nodes)?
            .pop()
            .unwrap_or_default())
    }

    /// One [`Graph::neighbourhood`] per start, all with the same limits. See
    /// [`Graph::walks`].
    pub fn neighbourhoods(
        &self,
        starts: &[NamedNode],
        hops: usize,
        max_nodes: usize,
    ) -> Result<Vec<Neighbourhood>, GraphError> {
        let limits = WalkLimits { hops, max_nodes };
        let starts: Vec<(NamedNode, WalkLimits)> =
            starts.iter().map(|start| (start.clone(), limits)).collect();
        self.walks(&starts)
    }

    /// One [`Graph::neighbourhood`] per start, each with its own limits, walked
    /// together level by level: the graph is read once per hop for every walk
    /// still going (on a SPARQL server, one request per hop instead of two per
    /// visited node). Each level visits its nodes in the order they were reached
    /// and each node's edges sorted, so both backends reach the same nodes. To
    /// read the hops together with other stages' queries, use [`WalkRounds`].
    pub fn walks(
        &self,
        starts: &[(NamedNode, WalkLimits)],
    ) -> Result<Vec<Neighbourhood>, GraphError> {
        self.walks_over(starts, None)
    }

    /// [`Graph::walks`], reading the edges from `index` when given.
    pub fn walks_over(
        &self,
        starts: &[(NamedNode, WalkLimits)],
        index: Option<Arc<EdgeIndex>>,
    ) -> Result<Vec<Neighbourhood>, GraphError> {
        let mut walks = WalkRounds::new(starts).with_index(index);
        self.read_in_rounds(&mut [&mut walks], &QueryOptions::default())?;
        Ok(walks.into_neighbourhoods())
    }
}

/// The walks of [`Graph::walks`] as [`Rounds`]: one round per hop on a SPARQL
/// server; embedded, the whole walk in the first call.
pub struct WalkRounds {
    walks: Vec<Walk>,
    /// Where an embedded graph's edges are read from when given.
    index: Option<Arc<EdgeIndex>>,
    level: usize,
    /// Nodes no walk enters (see [`WalkRounds::avoiding`]).
    avoid: BTreeSet<String>,
    /// The nodes this round reads, and the patterns of its queries.
    reading: Vec<NamedNode>,
    patterns: Vec<kgfuse_remote::Pattern>,
}

impl WalkRounds {
    /// Walks from `starts`, each within its limits.
    pub fn new(starts: &[(NamedNode, WalkLimits)]) -> Self {
        Self {
            walks: starts
                .iter()
                .map(|(start, limits)| Walk::new(start, *limits))
                .collect(),
            index: None,
            level: 0,
            avoid: BTreeSet::new(),
            reading: Vec::new(),
            patterns: Vec::new(),
        }
    }

    /// The walks read an embedded graph's edges from `index` instead of the
    /// store's indexes (see [`Graph::edge_index`]).
    #[must_use]
    pub fn with_index(mut self, index: Option<Arc<EdgeIndex>>) -> Self {
        self.index = index;
        self
    }

    /// No walk enters these nodes, nor takes an edge to them: what is held out
    /// of a retrieval must not lead it elsewhere either.
    #[must_use]
    pub fn avoiding(mut self, nodes: &BTreeSet<String>) -> Self {
        self.avoid = nodes.clone();
        self
    }

    /// What each walk reached, in the order of the starts.
    pub fn into_neighbourhoods(self) -> Vec<Neighbourhood> {
        self.walks
            .into_iter()
            .map(|w| (w.distance, w.edges))
            .collect()
    }

    /// The nodes the next hop reads: the frontiers of the walks not yet at their
    /// hop limit.
    fn frontier(&self) -> Vec<NamedNode> {
        let reading: BTreeSet<&NamedNode> = self
            .walks
            .iter()
            .filter(|w| self.level < w.limits.hops)
            .flat_map(|w| &w.frontier)
            .collect();
        reading.into_iter().cloned().collect()
    }

    /// Takes the walks not yet at their hop limit one hop further.
    fn step(&mut self, around: &mut WalkEdges<'_>) -> Result<(), GraphError> {
        let level = self.level;
        for walk in self.walks.iter_mut().filter(|w| level < w.limits.hops) {
            walk.step(level, around, &self.avoid)?;
        }
        self.level += 1;
        Ok(())
    }
}

/// The edges at the nodes the walks take: on a SPARQL server, a level's read
/// together beforehand (one request for every walk's frontier); embedded, each
/// node read once per set of walks, when a walk first takes it, from the
/// [`EdgeIndex`] when there is one and from the store's indexes otherwise.
struct WalkEdges<'g> {
    read: BTreeMap<String, Vec<(NamedNode, Edge)>>,
    /// Where nodes not read yet are read from; `None` when given beforehand.
    graph: Option<&'g Graph>,
    index: Option<Arc<EdgeIndex>>,
    /// Time spent reading.
    spent: std::time::Duration,
}

impl<'g> WalkEdges<'g> {
    /// The edges read beforehand.
    fn given(read: BTreeMap<String, Vec<(NamedNode, Edge)>>) -> Self {
        Self {
            read,
            graph: None,
            index: None,
            spent: std::time::Duration::ZERO,
        }
    }

    /// Edges read from `graph`, or `index` when given, when first asked for.
    fn read_from(graph: &'g Graph, index: Option<Arc<EdgeIndex>>) -> Self {
        Self {
            read: BTreeMap::new(),
            graph: Some(graph),
            index,
            spent: std::time::Duration::ZERO,
        }
    }

    /// The neighbours of `node` and the edges to them.
    fn at(&mut self, node: &NamedNode) -> Result<&[(NamedNode, Edge)], GraphError> {
        if let Some(graph) = self.graph
            && !self.read.contains_key(node.as_str())
        {
            let started = std::time::Instant::now();
            let around = match &self.index {
                Some(index) => index.around(node.as_str(), NEIGHBOURS_PER_NODE),
                None => {
                    let mut read = graph.walk_reads.measure(|| {
                        graph.edges_at(std::slice::from_ref(node), NEIGHBOURS_PER_NODE)
                    })?;
                    read.remove(node.as_str()).unwrap_or_default()
                }
            };
            self.spent += started.elapsed();
            self.read.insert(node.as_str().to_owned(), around);
        }
        Ok(self.read.get(node.as_str()).map_or(&[], Vec::as_slice))
    }
}

impl Rounds for WalkRounds {
    fn next_round(
        &mut self,
        graph: &Graph,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<spargebra::Query>, GraphError> {
        if !self.reading.is_empty() {
            let patterns = std::mem::take(&mut self.patterns);
            let answers = patterns.into_iter().zip(answers).collect();
            let around = graph
                .spent
                .clone()
                .measure(|| graph.edges_from(&self.reading, answers, NEIGHBOURS_PER_NODE))?;
            self.step(&mut WalkEdges::given(around))?;
        }
        self.reading = self.frontier();
        if self.reading.is_empty() {
            return Ok(Vec::new());
        }
        let Some(reads) = graph.edge_queries(&self.reading) else {
            // Embedded: every hop now, each node read from the indexes when a
            // walk takes it in turn, so a walk that is full reads no further.
            let mut read = WalkEdges::read_from(graph, self.index.clone());
            while !self.reading.is_empty() {
                self.step(&mut read)?;
                graph.spent.add(std::mem::take(&mut read.spent));
                self.reading = self.frontier();
            }
            return Ok(Vec::new());
        };
        let mut queries = Vec::with_capacity(reads.len());
        for (pattern, text) in reads {
            queries.push(parse_query(&text, &QueryOptions::default())?);
            self.patterns.push(pattern);
        }
        Ok(queries)
    }
}

/// How far one walk of [`Graph::walks`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Most edges from the start.
    pub hops: usize,
    /// The walk stops growing once it has reached this many nodes.
    pub max_nodes: usize,
}

/// One walk of [`Graph::neighbourhoods`] in progress.
struct Walk {
    distance: BTreeMap<String, usize>,
    edges: BTreeSet<Edge>,
    /// Nodes reached at the current level, in the order they were reached.
    frontier: Vec<NamedNode>,
    limits: WalkLimits,
}

impl Walk {
    fn new(start: &NamedNode, limits: WalkLimits) -> Self {
        Self {
            distance: BTreeMap::from([(start.as_str().to_owned(), 0)]),
            edges: BTreeSet::new(),
            frontier: vec![start.clone()],
            limits,
        }
    }

    /// Takes the frontier one level further, its nodes in the order they were
    /// reached, until the walk is full.
    fn step(
        &mut self,
        level: usize,
        around: &mut WalkEdges<'_>,
        avoid: &BTreeSet<String>,
    ) -> Result<(), GraphError> {
        let max_nodes = self.limits.max_nodes;
        for node in std::mem::take(&mut self.frontier) {
            // Full: every reached node already has the edge it was reached by, which
            // is all an evidence path needs; reading more neighbours adds nothing.
            if self.distance.len() >= max_nodes {
                self.frontier.clear();
                return Ok(());
            }
            for (neighbour, edge) in around.at(&node)? {
                if avoid.contains(neighbour.as_str()) {
                    continue;
                }
                if !self.distance.contains_key(neighbour.as_str()) {
                    if self.distance.len() >= max_nodes {
                        continue;
                    }
                    self.distance
                        .insert(neighbour.as_str().to_owned(), level + 1);
                    self.frontier.push(neighbour.clone());
                }
                // Only edges between reached nodes can be on an evidence path.
                self.edges.insert(edge.clone());
            }
        }
        Ok(())
    }
}

/// Most triples read per direction per node of a neighbourhood walk (the limit of
/// `queries/neighbours.rq`), so hubs do not flood the walk.
const NEIGHBOURS_PER_NODE: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> Graph {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g> { \
                  <urn:pkg> kgfuse:hasModule <urn:mod> . \
                  <urn:mod> kgfuse:hasFunction <urn:f1>, <urn:f2>, <urn:f3> . \
                  <urn:f1> a kgfuse:Function ; kgfuse:inPackage <urn:pkg> ; kgfuse:name \"f1\" ; kgfuse:calls <urn:f2> . \
                  <urn:f2> a kgfuse:Function ; kgfuse:inPackage <urn:pkg> ; kgfuse:name \"f2\" ; kgfuse:calls <urn:f3> . \
                  <urn:f3> a kgfuse:Method ; kgfuse:inPackage <urn:pkg> ; kgfuse:name \"f3\" } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        graph
    }

    fn rows(outcome: QueryOutcome) -> Vec<Vec<Option<Term>>> {
        match outcome {
            QueryOutcome::Solutions { rows, .. } => rows,
            other => panic!("expected solutions, got {other:?}"),
        }
    }

    fn iri(s: &str) -> Term {
        NamedNode::new(s).expect("iri").into()
    }

    #[test]
    fn every_template_parses() {
        for template in Template::ALL {
            parse_query(template.text(), &QueryOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", template.file_name()));
        }
    }

    #[test]
    fn templates_answer_on_a_small_api_graph() {
        let graph = chain();
        let o = QueryOptions::default();
        let functions = rows(
            graph
                .run_template(
                    Template::PackageFunctions,
                    &[("package", iri("urn:pkg"))],
                    &o,
                )
                .expect("q"),
        );
        assert_eq!(functions.len(), 3, "functions and methods");
        let siblings = rows(
            graph
                .run_template(Template::Siblings, &[("function", iri("urn:f1"))], &o)
                .expect("q"),
        );
        assert_eq!(siblings.len(), 2);
        let paths = rows(
            graph
                .run_template(
                    Template::Paths,
                    &[("source", iri("urn:f1")), ("target", iri("urn:f3"))],
                    &o,
                )
                .expect("q"),
        );
        // f1 -calls-> f2 -calls-> f3, and f1 -inPackage-> pkg -hasModule-> mod -hasFunction-> f3.
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert_eq!(
            paths[0][0],
            Some(Term::from(oxigraph::model::Literal::from(2)))
        );
        assert_eq!(paths[0][2], Some(iri("urn:f2")));
        assert_eq!(
            paths[1][0],
            Some(Term::from(oxigraph::model::Literal::from(3)))
        );
        let described = rows(
            graph
                .run_template(Template::Describe, &[("entity", iri("urn:f2"))], &o)
                .expect("q"),
        );
        assert_eq!(described.len(), 6, "4 outgoing + 2 incoming");
        assert!(
            graph.run_template(Template::Describe, &[], &o).is_err(),
            "missing binding"
        );
    }

    #[test]
    fn neighbourhood_respects_hops() {
        let graph = chain();
        let (one, _) = graph
            .neighbourhood(&NamedNode::new("urn:f1").expect("iri"), 1, 100)
            .expect("walk");
        assert_eq!(one.get("urn:f2"), Some(&1));
        assert!(!one.contains_key("urn:f3"));
        let (two, edges) = graph
            .neighbourhood(&NamedNode::new("urn:f1").expect("iri"), 2, 100)
            .expect("walk");
        assert_eq!(two.get("urn:f3"), Some(&2));
        assert!(
            edges
                .iter()
                .any(|e| e.subject == "urn:f2" && e.object == "urn:f3")
        );
    }

    #[test]
    fn walks_read_together_keep_their_own_limits() {
        let graph = chain();
        let f1 = NamedNode::new("urn:f1").expect("iri");
        let limits = |hops, max_nodes| WalkLimits { hops, max_nodes };
        let walks = graph
            .walks(&[
                (f1.clone(), limits(1, 100)),
                (f1.clone(), limits(2, 100)),
                (f1, limits(2, 2)),
            ])
            .expect("walks");
        let reached = |i: usize| walks[i].0.keys().cloned().collect::<Vec<_>>();
        assert!(!reached(0).contains(&"urn:f3".to_owned()), "one hop");
        assert_eq!(walks[1].0.get("urn:f3"), Some(&2), "two hops");
        assert_eq!(reached(2).len(), 2, "two nodes at most: {:?}", reached(2));
    }

    /// A walk goes around an avoided node: f3 is then reached through the
    /// module that holds both functions (two hops, not through f2), and no edge
    /// touches f2.
    #[test]
    fn walks_go_around_avoided_nodes() {
        let graph = chain();
        let f1 = NamedNode::new("urn:f1").expect("iri");
        let limits = WalkLimits {
            hops: 3,
            max_nodes: 100,
        };
        let mut walks =
            WalkRounds::new(&[(f1, limits)]).avoiding(&BTreeSet::from(["urn:f2".to_owned()]));
        graph
            .read_in_rounds(&mut [&mut walks], &QueryOptions::default())
            .expect("walk");
        let (reached, edges) = walks.into_neighbourhoods().remove(0);
        assert!(!reached.contains_key("urn:f2"), "{reached:?}");
        assert_eq!(reached.get("urn:f3"), Some(&2), "{reached:?}");
        assert!(
            edges
                .iter()
                .all(|e| e.subject != "urn:f2" && e.object != "urn:f2"),
            "{edges:?}"
        );
    }

    #[test]
    fn walks_over_the_edge_index_reach_what_walks_over_the_store_reach() {
        let graph = chain();
        graph
            .update(
                "INSERT DATA { GRAPH <urn:h> { <urn:f1> kgfuse:calls <urn:f2> . \
                   <urn:f3> kgfuse:calls <urn:pkg> ; kgfuse:code \"def f3(): pass\" } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        let index = Arc::new(
            graph
                .edge_index(usize::MAX)
                .expect("index")
                .expect("embedded"),
        );
        assert!(
            graph.edge_index(3).expect("index").is_none(),
            "over the cap: no index"
        );
        let stopped = std::sync::atomic::AtomicBool::new(true);
        assert!(
            graph
                .edge_index_unless_stopped(usize::MAX, &stopped)
                .expect("index")
                .is_none(),
            "a stopped build: no index"
        );
        let nodes = [
            "urn:pkg", "urn:mod", "urn:f1", "urn:f2", "urn:f3", "urn:none",
        ];
        for node in nodes {
            let named = NamedNode::new(node).expect("iri");
            let from_store = graph
                .edges_at(std::slice::from_ref(&named), NEIGHBOURS_PER_NODE)
                .expect("edges")
                .remove(node)
                .unwrap_or_default();
            assert_eq!(
                index.around(node, NEIGHBOURS_PER_NODE),
                from_store,
                "{node}"
            );
        }
        let f1 = NamedNode::new("urn:f1").expect("iri");
        let limits = |hops, max_nodes| WalkLimits { hops, max_nodes };
        let starts = [(f1.clone(), limits(3, 100)), (f1, limits(2, 3))];
        let over_store = graph.walks(&starts).expect("walks");
        let over_index = graph.walks_over(&starts, Some(index)).expect("walks");
        assert_eq!(over_store, over_index);
        assert_eq!(over_store[0].0.get("urn:pkg"), Some(&1), "{over_store:?}");
        assert_eq!(over_store[1].0.len(), 3);
    }
}
