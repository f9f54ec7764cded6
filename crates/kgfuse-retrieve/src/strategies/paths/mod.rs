//! `paths` (SGKR): structure-grounded retrieval along dependency paths.
//!
//! 1. Find the semantic input and output tags the question names (tag labels and
//!    `skos:altLabel` aliases matched as whole words, plurals folded).
//! 2. Search the merged dependency graph breadth-first along the data flow:
//!    input tag -> a function consuming it -> the functions calling that one -> ...
//!    -> a function producing an output tag.
//! 3. Back-chaining: a function on a path may need a tag the question does not
//!    give (`average_fee` needs fee rules). When some functions make that tag from
//!    nothing (every parameter has a default: a loader), the path
//!    `loader -> tag -> function` follows the path, so the context says where the
//!    input comes from.
//! 4. The functions on the discovered paths (tags not counted) are the context:
//!    their knowledge text and code.
//!
//! No tags in the question means no result, with status `no_tags`: this strategy
//! never silently falls back to similarity.

mod flow;

pub use flow::{FlowDifferences, check as check_data_flow, repair as repair_data_flow};

use crate::RetrieveError;
use crate::functions::functions_info;
use flow::{FlowEdges, rows};
use kgfuse_core::context::{Dropped, FusedContext, TraceStage};
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_store::{Store, WholeStore};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

/// Limits of the path search.
#[derive(Debug, Clone, Copy)]
pub struct PathLimits {
    /// Most edges on one path (tag -> function -> ... -> tag).
    pub max_depth: usize,
    /// Most paths kept.
    pub max_paths: usize,
}

impl Default for PathLimits {
    fn default() -> Self {
        Self {
            max_depth: 6,
            max_paths: 12,
        }
    }
}

/// `fees` -> `fee`, `categories` -> `category`: the same folding ingestion applies
/// to tag names, applied to every word of the question.
fn fold(word: &str) -> String {
    kgfuse_core::text::singular(&word.to_lowercase())
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(fold)
        .collect()
}

/// A tag node with its label, aliases and kinds.
#[derive(Debug, Clone, Default)]
struct Tag {
    label: String,
    aliases: Vec<String>,
    input: bool,
    output: bool,
}

/// Every tag by IRI, as the store keeps it between writes.
struct Tags(BTreeMap<String, Tag>);

impl WholeStore for Tags {}

impl std::ops::Deref for Tags {
    type Target = BTreeMap<String, Tag>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Every tag in the store with its kinds.
fn tags(store: &Store) -> Result<BTreeMap<String, Tag>, RetrieveError> {
    let query = format!(
        "SELECT ?tag ?label ?type ?alias WHERE {{ ?tag a ?type ; <{label}> ?label . \
         VALUES ?type {{ <{input}> <{output}> }} OPTIONAL {{ ?tag <{alt}> ?alias }} }}",
        label = w3c::RDFS_LABEL,
        alt = w3c::SKOS_ALT_LABEL,
        input = kg::INPUT_TAG,
        output = kg::OUTPUT_TAG,
    );
    let mut out: BTreeMap<String, Tag> = BTreeMap::new();
    for row in rows(store, &query)? {
        let (Some(tag), Some(label), Some(kind)) = (
            cell_text(row.first()),
            cell_text(row.get(1)),
            cell_text(row.get(2)),
        ) else {
            continue;
        };
        let entry = out.entry(tag).or_default();
        entry.label = label;
        entry.input |= kind == kg::INPUT_TAG;
        entry.output |= kind == kg::OUTPUT_TAG;
        if let Some(alias) = cell_text(row.get(3))
            && !entry.aliases.contains(&alias)
        {
            entry.aliases.push(alias);
        }
    }
    Ok(out)
}

/// Tags whose label or an alias occurs in the question as whole (folded) words.
/// A match inside a longer match is dropped (`fee` inside `average fee`), except an
/// input tag inside an output tag's match: "most expensive MCC" asks for the most
/// expensive one *over MCCs*, so `mcc` is also given. Returns (tag IRI, start, end).
fn matched_tags(question: &str, tags: &BTreeMap<String, Tag>) -> Vec<(String, usize, usize)> {
    let question = words(question);
    let mut found: Vec<(String, usize, usize)> = Vec::new();
    for (iri, tag) in tags {
        let best = std::iter::once(&tag.label)
            .chain(&tag.aliases)
            .filter_map(|name| {
                let name = words(name);
                if name.is_empty() || name.len() > question.len() {
                    return None;
                }
                let start = question
                    .windows(name.len())
                    .position(|w| w == name.as_slice())?;
                Some((start, start + name.len()))
            })
            .max_by_key(|(start, end)| (end - start, std::cmp::Reverse(*start)));
        if let Some((start, end)) = best {
            found.push((iri.clone(), start, end));
        }
    }
    let spans: Vec<(String, usize, usize)> = found.clone();
    found.retain(|(iri, s, e)| {
        !spans.iter().any(|(outer, s2, e2)| {
            let inside = (s2 <= s && e <= e2) && (e2 - s2) > (e - s);
            let given_inside_asked = tags[iri].input && tags[outer].output && !tags[outer].input;
            inside && !given_inside_asked
        })
    });
    found
}

/// The data-flow graph both ways, numbered ([`flow::FlowEdges`]), with its
/// loaders: `forward` for the search, `reverse` for the distance of every node
/// to the outputs. Numbers keep string hashing out of the per-question
/// searches, which visit most of a large graph (100,000 functions share 20 tags
/// in the synthetic benchmark).
struct Flow {
    /// The nodes and edges, as kept on disk.
    nodes: FlowEdges,
    /// Successors of each node, sorted by IRI.
    forward: Adjacency,
    /// Predecessors of each node, sorted by IRI.
    reverse: Adjacency,
    /// Tag -> the functions that make it from nothing, sorted.
    loaders: BTreeMap<String, Vec<String>>,
    /// The numbers of the tags in `loaders`, sorted.
    loaded_tags: Vec<u32>,
}

impl WholeStore for Flow {}

/// Every node's neighbours in one array: node `n`'s are
/// `targets[starts[n]..starts[n + 1]]` (two allocations for a graph of a
/// million nodes, not a million).
struct Adjacency {
    starts: Vec<usize>,
    targets: Vec<u32>,
}

impl Adjacency {
    /// The lists of `nodes` nodes from (node, neighbour) pairs, each list in
    /// the order its pairs come.
    fn new(nodes: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> Self {
        let mut starts = vec![0usize; nodes + 1];
        for (node, _) in pairs.clone() {
            starts[node as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut targets = vec![0u32; starts[nodes]];
        for (node, neighbour) in pairs {
            targets[next[node as usize]] = neighbour;
            next[node as usize] += 1;
        }
        Self { starts, targets }
    }

    /// The neighbours of `node`.
    fn of(&self, node: u32) -> &[u32] {
        let node = node as usize;
        &self.targets[self.starts[node]..self.starts[node + 1]]
    }
}

impl Flow {
    fn new(nodes: FlowEdges) -> Self {
        // Edges come sorted by (from, to) and without repeats, so both ways
        // each list is sorted too.
        let edges = nodes.edges().iter().copied();
        let forward = Adjacency::new(nodes.len(), edges.clone());
        let reverse = Adjacency::new(nodes.len(), edges.map(|(from, to)| (to, from)));
        let loaders = nodes.loaders();
        let mut loaded_tags: Vec<u32> = loaders.keys().filter_map(|t| nodes.number(t)).collect();
        loaded_tags.sort_unstable();
        Self {
            loaders,
            loaded_tags,
            nodes,
            forward,
            reverse,
        }
    }

    /// The predecessors of `node` that a loader makes, in IRI order: the
    /// shorter of its predecessors (a common tag has a producer for every
    /// twentieth function) and the loaded tags is searched in the other.
    fn loaded_before(&self, node: u32) -> Vec<u32> {
        let before = self.reverse.of(node);
        let (few, many) = if self.loaded_tags.len() <= before.len() {
            (self.loaded_tags.as_slice(), before)
        } else {
            (before, self.loaded_tags.as_slice())
        };
        few.iter()
            .copied()
            .filter(|tag| many.binary_search(tag).is_ok())
            .collect()
    }

    /// The store's graph: the file kept beside it, brought in step if need be.
    fn of(store: &Store) -> Result<Self, RetrieveError> {
        let (nodes, _) = flow::kept(store)?;
        Ok(Self::new(nodes))
    }

    fn number(&self, iri: &str) -> Option<u32> {
        self.nodes.number(iri)
    }

    fn name(&self, node: u32) -> &str {
        self.nodes.name(node)
    }
}

/// Most partial paths explored per search, so dense graphs stay bounded.
const MAX_EXPANSIONS: usize = 20_000;

/// Simple paths from any input tag to any output tag, shortest first (breadth-first
/// over partial paths; a node appears at most once per path). Not only the shortest
/// path per node: `transaction value -> compute_fee -> average_fee -> average fee`
/// matters although `average_fee` also consumes the transaction value directly.
/// A path whose nodes all lie on paths already kept adds nothing and does not count
/// towards `max_paths`, so the limit buys coverage rather than permutations.
fn search(
    flow: &Flow,
    inputs: &[String],
    outputs: &BTreeSet<String>,
    limits: PathLimits,
) -> Vec<Vec<String>> {
    let outputs: HashSet<u32> = outputs.iter().filter_map(|o| flow.number(o)).collect();
    // A step's node lies at least one edge after its input, so a node
    // `max_depth` edges from every output is never on a path: the distances are
    // searched one level short of the depth (the last, widest level at a
    // common tag).
    let to_output = distance_to_outputs(flow, &outputs, limits.max_depth.saturating_sub(1));
    let mut paths: Vec<Vec<u32>> = Vec::new();
    let mut covered: HashSet<u32> = HashSet::new();
    let mut queue: VecDeque<Vec<u32>> = inputs
        .iter()
        .filter_map(|i| flow.number(i))
        .map(|i| vec![i])
        .collect();
    let mut expansions = 0usize;
    'search: while let Some(path) = queue.pop_front() {
        expansions += 1;
        if expansions > MAX_EXPANSIONS || path.len() > limits.max_depth {
            break;
        }
        let Some(&last) = path.last() else {
            continue;
        };
        for &next in flow.forward.of(last) {
            // Only steps from which an output is still reachable within the depth
            // left: dead ends (most consumers of a common tag) are never queued.
            let edges_after = path.len();
            let distance = to_output[next as usize];
            if distance == UNREACHABLE
                || edges_after + distance as usize > limits.max_depth
                || path.contains(&next)
            {
                continue;
            }
            let mut extended = Vec::with_capacity(path.len() + 1);
            extended.extend_from_slice(&path);
            extended.push(next);
            if outputs.contains(&next) {
                if extended.iter().all(|node| covered.contains(node)) {
                    continue;
                }
                covered.extend(extended.iter().copied());
                paths.push(extended);
                if paths.len() >= limits.max_paths {
                    break 'search;
                }
            } else if !outputs.is_empty() {
                queue.push_back(extended);
            }
        }
    }
    paths
        .into_iter()
        .map(|path| path.into_iter().map(|n| flow.name(n).to_owned()).collect())
        .collect()
}

/// Marks a node from which no output is reachable within the depth limit.
const UNREACHABLE: u32 = u32::MAX;

/// Fewest edges from each node to an output tag (reverse breadth-first search),
/// for nodes within `max_depth`; [`UNREACHABLE`] for the others. Level by
/// level; a level whose frontier has more edges to follow than
/// `1 / BOTTOM_UP_SHARE` of the nodes still unreached is found the other way
/// round, each unreached node looking for a successor in the frontier
/// (Beamer's direction-optimising search): past a common tag, whose producers
/// are a twentieth of the functions, most nodes are a level away, and each
/// finds that out at its first edge instead of being reached again and again.
fn distance_to_outputs(flow: &Flow, outputs: &HashSet<u32>, max_depth: usize) -> Vec<u32> {
    let mut distance = vec![UNREACHABLE; flow.nodes.len()];
    let mut frontier: Vec<u32> = outputs.iter().copied().collect();
    for &output in &frontier {
        distance[output as usize] = 0;
    }
    let mut unreached = distance.len() - frontier.len();
    let mut level: u32 = 0;
    while !frontier.is_empty() && (level as usize) < max_depth {
        level += 1;
        let to_follow: usize = frontier.iter().map(|&n| flow.reverse.of(n).len()).sum();
        let mut next = Vec::new();
        if to_follow > unreached / BOTTOM_UP_SHARE {
            for node in 0..distance.len() {
                if distance[node] == UNREACHABLE
                    && flow
                        .forward
                        .of(node as u32)
                        .iter()
                        .any(|&after| distance[after as usize] == level - 1)
                {
                    distance[node] = level;
                    next.push(node as u32);
                }
            }
        } else {
            for &node in &frontier {
                for &source in flow.reverse.of(node) {
                    if distance[source as usize] == UNREACHABLE {
                        distance[source as usize] = level;
                        next.push(source);
                    }
                }
            }
        }
        unreached -= next.len();
        frontier = next;
    }
    distance
}

/// See [`distance_to_outputs`]: a level is searched bottom-up when its
/// frontier's edges outnumber this share of the unreached nodes.
const BOTTOM_UP_SHARE: usize = 14;

/// Runs the strategy.
pub(crate) async fn retrieve(
    store: &Store,
    question: &str,
    top_k: usize,
    limits: PathLimits,
) -> Result<FusedContext, RetrieveError> {
    let (mut context, ranked) = ranking(store, question, top_k, limits)?;
    let iris: Vec<&str> = ranked
        .iter()
        .map(|(function, _)| function.as_str())
        .collect();
    for ((_, score), mut info) in ranked.iter().zip(functions_info(store, &iris)?) {
        info.score = *score;
        context.functions.push(info);
    }
    Ok(context)
}

/// The functions on the paths, best first, without their descriptions (for
/// `unified`'s `paths` channel).
pub(crate) fn ranked_functions(
    store: &Store,
    question: &str,
    top_k: usize,
    limits: PathLimits,
) -> Result<Vec<String>, RetrieveError> {
    let (_, ranked) = ranking(store, question, top_k, limits)?;
    Ok(ranked.into_iter().map(|(function, _)| function).collect())
}

/// The tags of the question, the paths between them and the functions on the
/// paths, best first with their share of the paths; the context so far holds the
/// trace, the paths and the status.
fn ranking(
    store: &Store,
    question: &str,
    top_k: usize,
    limits: PathLimits,
) -> Result<(FusedContext, Vec<(String, f32)>), RetrieveError> {
    let mut context = FusedContext::default();
    let all_tags = store.derived(|| tags(store).map(Tags))?;
    let (inputs, outputs) = roles(question, &all_tags, &mut context);
    if inputs.is_empty() && outputs.is_empty() {
        context.status = Some("no_tags".into());
        return Ok((context, Vec::new()));
    }
    // Kept on disk beside the store, read once per process and write.
    let flow = store.derived(|| Flow::of(store))?;
    let mut paths = if inputs.is_empty() {
        Vec::new()
    } else {
        search(&flow, &inputs, &outputs, limits)
    };
    if paths.is_empty() {
        // Only outputs named (or no path from the inputs): the producers themselves.
        paths = producer_paths(&flow, &outputs, &all_tags, limits);
        if paths.is_empty() {
            context.status = Some("no_paths".into());
        }
    }
    let sources = source_paths(&flow, &paths, &inputs, limits);
    let ranked = functions_on(&paths, &sources, &all_tags, top_k, &mut context);
    context.paths = interleaved(paths, sources);
    Ok((context, ranked))
}

/// The question's tags as inputs and outputs. Tags that are only produced are
/// what is asked for; tags that are only consumed are what is given; a tag that
/// is both is given, unless nothing else is asked.
fn roles(
    question: &str,
    all_tags: &BTreeMap<String, Tag>,
    context: &mut FusedContext,
) -> (Vec<String>, BTreeSet<String>) {
    let matched = matched_tags(question, all_tags);
    let mut inputs: Vec<String> = Vec::new();
    let mut outputs: BTreeSet<String> = BTreeSet::new();
    for (tag, _, _) in &matched {
        let kinds = &all_tags[tag];
        if kinds.output && !kinds.input {
            outputs.insert(tag.clone());
        } else if kinds.input {
            inputs.push(tag.clone());
        }
    }
    if outputs.is_empty()
        && let Some((first, _, _)) = matched.iter().find(|(t, _, _)| all_tags[t].output)
    {
        inputs.retain(|t| t != first);
        outputs.insert(first.clone());
    }
    context.trace.push(TraceStage {
        stage: "tags".into(),
        kept: inputs
            .iter()
            .map(|t| format!("input: {}", all_tags[t].label))
            .chain(
                outputs
                    .iter()
                    .map(|t| format!("output: {}", all_tags[t].label)),
            )
            .collect(),
        dropped: Vec::new(),
    });
    (inputs, outputs)
}

/// One-step paths from each function that produces an output.
fn producer_paths(
    flow: &Flow,
    outputs: &BTreeSet<String>,
    all_tags: &BTreeMap<String, Tag>,
    limits: PathLimits,
) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for output in outputs {
        let Some(number) = flow.number(output) else {
            continue;
        };
        for &producer in flow.reverse.of(number) {
            let producer = flow.name(producer);
            if !all_tags.contains_key(producer) {
                paths.push(vec![producer.to_owned(), output.clone()]);
            }
        }
    }
    paths.sort();
    paths.truncate(limits.max_paths);
    paths
}

/// Back-chaining: for every function on `paths`, one path `loader -> tag ->
/// function` for each tag the function consumes that neither the question gives
/// (`inputs`) nor the function's path carries, and that a loader makes; in the
/// order of the paths, at most `limits.max_paths`, no repeats.
fn source_paths(
    flow: &Flow,
    paths: &[Vec<String>],
    inputs: &[String],
    limits: PathLimits,
) -> Vec<Vec<String>> {
    let mut sources: Vec<Vec<String>> = Vec::new();
    for path in paths {
        for function in path {
            let Some(number) = flow.number(function) else {
                continue;
            };
            // What flows into the function (the tags it consumes, its
            // callees) that a loader makes.
            for before in flow.loaded_before(number) {
                let tag = flow.name(before);
                let Some(makers) = flow.loaders.get(tag) else {
                    continue;
                };
                if inputs.iter().any(|i| i == tag) || path.iter().any(|n| n == tag) {
                    continue;
                }
                for loader in makers.iter().filter(|l| *l != function) {
                    let source = vec![loader.clone(), tag.to_owned(), function.clone()];
                    if sources.len() < limits.max_paths && !sources.contains(&source) {
                        sources.push(source);
                    }
                }
            }
        }
    }
    sources
}

/// The paths for the context: each path followed by the source paths of the
/// functions on it not shown yet, so a reader sees where an input comes from
/// next to where it is used.
fn interleaved(paths: Vec<Vec<String>>, sources: Vec<Vec<String>>) -> Vec<Vec<String>> {
    let mut pending = sources;
    let mut out = Vec::with_capacity(paths.len() + pending.len());
    for path in paths {
        let (feeding, rest): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|source| source.last().is_some_and(|f| path.contains(f)));
        out.push(path);
        out.extend(feeding);
        pending = rest;
    }
    out.extend(pending);
    out
}

/// The functions on the paths, most frequent first (tags not counted), each
/// loader of `sources` right after the first function it feeds (counted as
/// often as that function), with their share of the paths; at most `top_k`, the
/// rest in the trace.
fn functions_on(
    paths: &[Vec<String>],
    sources: &[Vec<String>],
    all_tags: &BTreeMap<String, Tag>,
    top_k: usize,
    context: &mut FusedContext,
) -> Vec<(String, f32)> {
    let mut frequency: BTreeMap<&str, usize> = BTreeMap::new();
    for path in paths {
        for node in path.iter().filter(|n| !all_tags.contains_key(*n)) {
            *frequency.entry(node).or_default() += 1;
        }
    }
    let mut by_frequency: Vec<(&str, usize)> = frequency.into_iter().collect();
    by_frequency.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut ranked: Vec<(&str, usize)> = Vec::with_capacity(by_frequency.len());
    for (function, count) in by_frequency {
        if ranked.iter().any(|(f, _)| *f == function) {
            continue;
        }
        ranked.push((function, count));
        for source in sources
            .iter()
            .filter(|s| s.last().is_some_and(|f| f == function))
        {
            let loader = source[0].as_str();
            if !ranked.iter().any(|(f, _)| *f == loader) {
                ranked.push((loader, count));
            }
        }
    }
    let mut dropped = Vec::new();
    for (function, count) in ranked.iter().skip(top_k) {
        dropped.push(Dropped {
            iri: (*function).to_owned(),
            why: format!("on {count} path(s), beyond top-k {top_k}"),
        });
    }
    ranked.truncate(top_k);
    #[allow(clippy::cast_precision_loss)]
    let share = |count: usize| count as f32 / paths.len().max(1) as f32;
    let ranked: Vec<(String, f32)> = ranked
        .into_iter()
        .map(|(function, count)| (function.to_owned(), share(count)))
        .collect();
    context.trace.push(TraceStage {
        stage: "paths".into(),
        kept: ranked
            .iter()
            .map(|(function, _)| function.clone())
            .collect(),
        dropped,
    });
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IRIs of the tags `matched_tags` finds, in order.
    fn matched(question: &str, tags: &BTreeMap<String, Tag>) -> Vec<String> {
        matched_tags(question, tags)
            .into_iter()
            .map(|(t, _, _)| t)
            .collect()
    }

    /// A data-flow graph of these edges (from, to) and loads (function, tag).
    fn flow(edges: &[(&str, &str)], loads: &[(&str, &str)]) -> Flow {
        Flow::new(FlowEdges::new(edges, loads))
    }

    /// The paths the search finds from `in` to `out` over these edges.
    fn paths_from_in_to_out(edges: &[(&str, &str)], limits: PathLimits) -> Vec<Vec<String>> {
        let outputs = BTreeSet::from(["out".to_owned()]);
        search(&flow(edges, &[]), &["in".to_owned()], &outputs, limits)
    }

    /// The distances to the outputs, found top-down or bottom-up level by
    /// level, are those of a plain breadth-first search: on a graph of 2,000
    /// functions around 20 tags (a hub's level is found bottom-up, a sparse
    /// one top-down) and on a chain, for every depth limit.
    #[test]
    fn distances_to_the_outputs_are_those_of_a_plain_search() {
        let names: Vec<String> = (0..2_000)
            .map(|i| format!("f{i:04}"))
            .chain((0..20).map(|t| format!("t{t:02}")))
            .collect();
        let mut edges: Vec<(&str, &str)> = Vec::new();
        for i in 0..2_000 {
            let (function, consumed, produced) = (
                &names[i],
                &names[2_000 + i % 20],
                &names[2_000 + (i * 7 + 3) % 20],
            );
            edges.push((consumed.as_str(), function.as_str()));
            if i % 3 == 0 {
                edges.push((function.as_str(), produced.as_str()));
            }
            if i % 5 == 0 && i + 1 < 2_000 {
                edges.push((names[i + 1].as_str(), function.as_str()));
            }
        }
        let chain: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
        edges.extend(chain.windows(2).map(|w| (w[0].as_str(), w[1].as_str())));
        let flow = flow(&edges, &[]);
        let plain = |outputs: &HashSet<u32>, max_depth: usize| -> Vec<u32> {
            let mut distance = vec![UNREACHABLE; flow.nodes.len()];
            let mut queue: VecDeque<u32> = outputs.iter().copied().collect();
            for &output in outputs {
                distance[output as usize] = 0;
            }
            while let Some(node) = queue.pop_front() {
                let next = distance[node as usize] + 1;
                if next as usize > max_depth {
                    continue;
                }
                for &source in flow.reverse.of(node) {
                    if distance[source as usize] == UNREACHABLE {
                        distance[source as usize] = next;
                        queue.push_back(source);
                    }
                }
            }
            distance
        };
        for output in ["t05", "t13", "c11", "f0010"] {
            let outputs = HashSet::from([flow.number(output).expect("node")]);
            for max_depth in 0..8 {
                assert_eq!(
                    distance_to_outputs(&flow, &outputs, max_depth),
                    plain(&outputs, max_depth),
                    "{output} within {max_depth}"
                );
            }
        }
    }

    /// A function's loaded predecessors are the same, in IRI order, whether
    /// it has more predecessors than there are loaded tags or fewer.
    #[test]
    fn loaded_predecessors_are_found_from_either_side() {
        let edges = [
            ("t:a", "f:many"),
            ("t:b", "f:many"),
            ("t:c", "f:many"),
            ("f:callee", "f:many"),
            ("t:b", "f:few"),
        ];
        let loads = [
            ("l:1", "t:c"),
            ("l:2", "t:b"),
            ("l:3", "t:x"),
            ("l:4", "t:y"),
        ];
        let flow = flow(&edges, &loads);
        let names = |node: &str| -> Vec<&str> {
            let number = flow.number(node).expect("node");
            flow.loaded_before(number)
                .into_iter()
                .map(|n| flow.name(n))
                .collect()
        };
        assert_eq!(names("f:many"), ["t:b", "t:c"], "four before, four loaded");
        assert_eq!(names("f:few"), ["t:b"], "one before");
        assert!(names("t:x").is_empty(), "nothing before");
    }

    fn tag(label: &str, input: bool, output: bool) -> Tag {
        Tag {
            label: label.into(),
            aliases: Vec::new(),
            input,
            output,
        }
    }

    #[test]
    fn tags_match_whole_folded_words_and_longest_wins() {
        let tags = BTreeMap::from([
            ("t:fee".to_owned(), tag("fee", false, true)),
            ("t:avg".to_owned(), tag("average fee", false, true)),
            ("t:tv".to_owned(), tag("transaction value", true, false)),
            ("t:mcc".to_owned(), tag("mcc", true, true)),
            ("t:mer".to_owned(), tag("merchant", true, false)),
        ]);
        let found = matched(
            "What are the average fees for transaction values by MCC? (merchants_table)",
            &tags,
        );
        assert_eq!(found, ["t:avg", "t:mcc", "t:tv"]);
    }

    #[test]
    fn aliases_match_and_a_given_concept_inside_the_asked_one_stays() {
        let mut amount = tag("transaction value", true, false);
        amount.aliases.push("transaction".into());
        let tags = BTreeMap::from([
            ("t:mcc".to_owned(), tag("mcc", true, true)),
            ("t:top".to_owned(), tag("most expensive mcc", false, true)),
            ("t:tv".to_owned(), amount),
        ]);
        let found = matched(
            "What is the most expensive MCC for a transaction of 5 euros, in general?",
            &tags,
        );
        assert_eq!(found, ["t:mcc", "t:top", "t:tv"]);
    }

    #[test]
    fn search_follows_data_flow_to_the_outputs() {
        let edges = [
            ("in", "compute"),
            ("compute", "average"),
            ("compute", "unrelated"),
            ("average", "out"),
        ];
        let paths = paths_from_in_to_out(&edges, PathLimits::default());
        assert_eq!(
            paths,
            [["in", "compute", "average", "out"]
                .map(String::from)
                .to_vec()]
        );
        let short = PathLimits {
            max_depth: 2,
            max_paths: 5,
        };
        assert!(paths_from_in_to_out(&edges, short).is_empty());
        // A path exactly as long as the depth allows is found.
        let exact = PathLimits {
            max_depth: 3,
            ..short
        };
        assert_eq!(paths_from_in_to_out(&edges, exact), paths);
    }

    /// `average` needs `rules`, which the question does not give and `load`
    /// makes from nothing: the path `load -> rules -> average` is added (unless
    /// the question gives the rules), shown after the path it feeds, and `load`
    /// ranks right after `average`.
    #[test]
    fn a_needed_input_is_chained_back_to_its_loader() {
        let edges = [
            ("in", "average"),
            ("in", "other"),
            ("rules", "average"),
            ("average", "out"),
            ("other", "out"),
            ("load", "rules"),
        ];
        let flow = flow(&edges, &[("load", "rules")]);
        let loaders = &flow.loaders;
        assert_eq!(
            *loaders,
            BTreeMap::from([("rules".to_owned(), vec!["load".to_owned()])])
        );
        let path =
            |nodes: &[&str]| -> Vec<String> { nodes.iter().map(|n| (*n).to_owned()).collect() };
        let paths = vec![
            path(&["in", "other", "out"]),
            path(&["in", "average", "out"]),
        ];
        let given =
            |inputs: &[&str]| -> Vec<String> { inputs.iter().map(|i| (*i).to_owned()).collect() };
        let limits = PathLimits::default();
        let sources = source_paths(&flow, &paths, &given(&["in"]), limits);
        assert_eq!(sources, [path(&["load", "rules", "average"])]);
        assert!(source_paths(&flow, &paths, &given(&["in", "rules"]), limits).is_empty());
        assert_eq!(
            interleaved(paths.clone(), sources.clone()),
            [
                path(&["in", "other", "out"]),
                path(&["in", "average", "out"]),
                path(&["load", "rules", "average"])
            ]
        );
        let tags: BTreeMap<String, Tag> = ["in", "rules", "out"]
            .map(|t| (t.to_owned(), tag(t, true, true)))
            .into();
        let ranked = functions_on(&paths, &sources, &tags, 5, &mut FusedContext::default());
        let order: Vec<&str> = ranked.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(order, ["average", "load", "other"]);
    }

    #[test]
    fn paths_that_add_no_node_are_skipped() {
        let edges = [
            ("in", "a"),
            ("in", "b"),
            ("a", "b"),
            ("a", "out"),
            ("b", "out"),
        ];
        let paths = paths_from_in_to_out(&edges, PathLimits::default());
        // in -> a -> b -> out only revisits covered nodes.
        assert_eq!(
            paths,
            [
                ["in", "a", "out"].map(String::from).to_vec(),
                ["in", "b", "out"].map(String::from).to_vec()
            ]
        );
    }
}
