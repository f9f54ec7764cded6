//! `neighborhood` (Graph-RAG): link the question to entities, walk a small
//! neighbourhood around them and rank every reached node by
//! `alpha * (1 - d / max_d) + (1 - alpha) * similarity`, keeping for each result
//! the evidence path from a linked entity to it.

use crate::RetrieveError;
use crate::sources::text_hits;
use kgfuse_core::context::{Dropped, Fact, FusedContext, TraceStage};
use kgfuse_graph::model::NamedNode;
use kgfuse_graph::templates::{Neighbourhood, WalkLimits, WalkRounds};
use kgfuse_store::{KindFilter, Question, Store};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// Vector rows of ontology terms (classes, properties) are not entities to link.
pub(crate) const INSTANCE_FILTER: KindFilter<'static> =
    KindFilter::NoPrefix(&["owl:", "rdfs:", "rdf:"]);

/// Knobs of the Graph-RAG scoring.
#[derive(Debug, Clone, Copy)]
pub struct NeighborhoodOptions {
    /// Largest graph distance from a linked entity.
    pub max_distance: usize,
    /// Weight of closeness against similarity, in [0, 1].
    pub alpha: f32,
    /// How many vector hits become linked entities.
    pub seeds: usize,
    /// Most nodes reached per linked entity.
    pub max_nodes: usize,
}

impl Default for NeighborhoodOptions {
    fn default() -> Self {
        Self {
            max_distance: 3,
            alpha: 0.6,
            seeds: 3,
            max_nodes: 300,
        }
    }
}

/// The Graph-RAG score of a node at distance `d` with cosine similarity `similarity`.
pub fn score(alpha: f32, distance: usize, max_distance: usize, similarity: f32) -> f32 {
    #[allow(clippy::cast_precision_loss)]
    let closeness = 1.0 - distance as f32 / max_distance.max(1) as f32;
    alpha * closeness + (1.0 - alpha) * similarity
}

/// An undirected edge list for rebuilding evidence paths.
pub(crate) type Adjacency = HashMap<String, Vec<Neighbour>>;

/// One walked edge seen from one of its ends: its fact is shared by both ends.
#[derive(Debug, Clone)]
pub(crate) struct Neighbour {
    fact: Arc<Fact>,
    /// The edge leaves this end (the neighbour is its object).
    outgoing: bool,
}

impl Neighbour {
    /// The node at the edge's other end.
    fn node(&self) -> &str {
        if self.outgoing {
            &self.fact.object
        } else {
            &self.fact.subject
        }
    }
}

/// Adds walked edges to an adjacency, in both directions. Each edge's IRIs
/// move into one shared fact; a node's IRI is copied only when the node is new
/// (a walk of a few thousand edges reaches a few hundred nodes).
pub(crate) fn add_edges(
    adjacency: &mut Adjacency,
    edges: impl IntoIterator<Item = kgfuse_graph::templates::Edge>,
) {
    let mut add = |node: &str, neighbour: Neighbour| match adjacency.get_mut(node) {
        Some(neighbours) => neighbours.push(neighbour),
        None => {
            adjacency.insert(node.to_owned(), vec![neighbour]);
        }
    };
    for edge in edges {
        let fact = Arc::new(Fact {
            subject: edge.subject,
            predicate: edge.predicate,
            object: edge.object,
            graph: String::new(),
        });
        let outgoing = Neighbour {
            fact: Arc::clone(&fact),
            outgoing: true,
        };
        add(&fact.subject, outgoing);
        let incoming = Neighbour {
            fact: Arc::clone(&fact),
            outgoing: false,
        };
        add(&fact.object, incoming);
    }
}

/// Shortest path (node IRIs and the facts along it) from any seed to `target`.
pub(crate) fn evidence(
    adjacency: &Adjacency,
    seeds: &[String],
    target: &str,
) -> Option<(Vec<String>, Vec<Fact>)> {
    let mut previous: HashMap<&str, (&str, &Fact)> = HashMap::new();
    let mut queue: VecDeque<&str> = seeds.iter().map(String::as_str).collect();
    let mut seen: std::collections::HashSet<&str> = queue.iter().copied().collect();
    while let Some(node) = queue.pop_front() {
        if node == target {
            let mut nodes = vec![node.to_owned()];
            let mut facts = Vec::new();
            let mut at = node;
            while let Some((from, fact)) = previous.get(at) {
                nodes.push((*from).to_owned());
                facts.push((*fact).clone());
                at = from;
            }
            nodes.reverse();
            facts.reverse();
            return Some((nodes, facts));
        }
        for neighbour in adjacency.get(node).into_iter().flatten() {
            let next = neighbour.node();
            if seen.insert(next) {
                previous.insert(next, (node, &*neighbour.fact));
                queue.push_back(next);
            }
        }
    }
    None
}

/// The nodes around some seeds, best first, and the edges walked to reach them.
pub(crate) struct Walk {
    /// Reached nodes with text: Graph-RAG score, distance to the nearest seed, hit.
    pub scored: Vec<(f32, usize, kgfuse_store::VectorHit)>,
    /// The walked edges, for evidence paths.
    pub adjacency: Adjacency,
}

/// Walks up to `options.max_distance` edges from every seed, around the nodes
/// the question holds out, and ranks every reached node that has text by
/// closeness to the nearest seed and similarity to the question.
pub(crate) async fn walk(
    store: &Store,
    question: &Question,
    seeds: &[String],
    options: NeighborhoodOptions,
) -> Result<Walk, RetrieveError> {
    let mut walks = WalkRounds::new(&walk_starts(seeds, options))
        .with_index(store.edge_index()?)
        .avoiding(question.held_out());
    store
        .graph()
        .read_in_rounds(&mut [&mut walks], &store.query_options())?;
    rank_reached(store, question, walks.into_neighbourhoods(), options).await
}

/// The walks from `seeds` within `options`' limits, for [`kgfuse_graph::Graph::walks`].
pub(crate) fn walk_starts(
    seeds: &[String],
    options: NeighborhoodOptions,
) -> Vec<(NamedNode, WalkLimits)> {
    let limits = WalkLimits {
        hops: options.max_distance,
        max_nodes: options.max_nodes,
    };
    seeds
        .iter()
        .filter_map(|seed| NamedNode::new(seed.as_str()).ok())
        .map(|start| (start, limits))
        .collect()
}

/// Ranks every node the walks from the seeds reached that has text: the
/// Graph-RAG score of its distance to the nearest seed and its similarity to the
/// question.
pub(crate) async fn rank_reached(
    store: &Store,
    question: &Question,
    reached: Vec<Neighbourhood>,
    options: NeighborhoodOptions,
) -> Result<Walk, RetrieveError> {
    let mut distance: BTreeMap<String, usize> = BTreeMap::new();
    let mut adjacency: Adjacency = HashMap::new();
    for (nodes, edges) in reached {
        for (node, d) in nodes {
            let slot = distance.entry(node).or_insert(d);
            *slot = (*slot).min(d);
        }
        add_edges(&mut adjacency, edges);
    }
    let candidates: Vec<String> = distance.keys().cloned().collect();
    let similar = store.search_among(question, &candidates).await?;
    let mut scored: Vec<(f32, usize, kgfuse_store::VectorHit)> = similar
        .into_iter()
        .map(|hit| {
            let d = distance
                .get(&hit.iri)
                .copied()
                .unwrap_or(options.max_distance);
            (
                score(options.alpha, d, options.max_distance, hit.score),
                d,
                hit,
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.iri.cmp(&b.2.iri)));
    Ok(Walk { scored, adjacency })
}

/// Runs the strategy.
pub(crate) async fn retrieve(
    store: &Store,
    question: &Question,
    top_k: usize,
    options: NeighborhoodOptions,
) -> Result<FusedContext, RetrieveError> {
    let mut context = FusedContext::default();
    // Link to instance data, not to the vocabulary describing it.
    let hits = store
        .search(question, options.seeds, INSTANCE_FILTER)
        .await?;
    let seeds: Vec<String> = hits.iter().map(|h| h.iri.clone()).collect();
    context.trace.push(TraceStage {
        stage: "link".into(),
        kept: hits
            .iter()
            .map(|h| format!("{} (similarity {:.3})", h.iri, h.score))
            .collect(),
        dropped: Vec::new(),
    });
    let Walk { scored, adjacency } = walk(store, question, &seeds, options).await?;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut returned = Vec::new();
    for (rank, (total, d, hit)) in scored.into_iter().enumerate() {
        if rank >= top_k {
            dropped.push(Dropped {
                iri: hit.iri,
                why: format!(
                    "score {total:.3} (distance {d}, similarity {:.3}) beyond top-k {top_k}",
                    hit.score
                ),
            });
            continue;
        }
        kept.push(format!(
            "{} score {total:.3} = distance {d}, similarity {:.3}",
            hit.iri, hit.score
        ));
        if let Some((nodes, facts)) = evidence(&adjacency, &seeds, &hit.iri) {
            for fact in facts {
                if !context.structured_facts.contains(&fact) {
                    context.structured_facts.push(fact);
                }
            }
            context.paths.push(nodes);
        }
        returned.push((hit, total));
    }
    context.unstructured = text_hits(store, returned);
    context.trace.push(TraceStage {
        stage: "neighborhood".into(),
        kept,
        dropped,
    });
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closeness_and_similarity_are_blended() {
        assert!((score(0.6, 0, 3, 0.5) - 0.8).abs() < 1e-6);
        assert!((score(0.6, 3, 3, 0.5) - 0.2).abs() < 1e-6);
        // A close, less similar node can beat a far, similar one.
        assert!(score(0.6, 1, 3, 0.3) > score(0.6, 3, 3, 0.9));
    }

    #[test]
    fn evidence_paths_run_from_a_seed_to_the_node() {
        let fact = |s: &str, o: &str| Fact {
            subject: s.into(),
            predicate: "urn:p".into(),
            object: o.into(),
            graph: String::new(),
        };
        let mut adjacency: Adjacency = HashMap::new();
        let edge = |s: &str, o: &str| kgfuse_graph::templates::Edge {
            subject: s.into(),
            predicate: "urn:p".into(),
            object: o.into(),
        };
        add_edges(
            &mut adjacency,
            [edge("a", "b"), edge("b", "c"), edge("x", "c")],
        );
        let (nodes, facts) = evidence(&adjacency, &["a".into()], "c").expect("path");
        assert_eq!(nodes, ["a", "b", "c"]);
        assert_eq!(facts, [fact("a", "b"), fact("b", "c")]);
        assert!(evidence(&adjacency, &["a".into()], "zzz").is_none());
    }
}
