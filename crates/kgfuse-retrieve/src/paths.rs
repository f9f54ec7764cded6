//! `paths` (SGKR): structure-grounded retrieval along dependency paths.
//!
//! 1. Find the semantic input and output tags the question names (tag labels
//!    matched as whole words, plurals folded).
//! 2. Search the merged dependency graph breadth-first along the data flow:
//!    input tag -> a function consuming it -> the functions calling that one -> ...
//!    -> a function producing an output tag.
//! 3. The functions on the discovered paths (tags not counted) are the context:
//!    their knowledge text and code.
//!
//! No tags in the question means no result, with status `no_tags`: this strategy
//! never silently falls back to similarity.

use crate::RetrieveError;
use crate::functions::function_info;
use crate::sources::cell_text;
use kgfuse_core::context::{Dropped, FusedContext, TraceStage};
use kgfuse_core::vocab::{kgfuse, w3c};
use kgfuse_graph::QueryOutcome;
use kgfuse_graph::model::Term;
use kgfuse_store::Store;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

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
    kgfuse_core::singular(&word.to_lowercase())
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(fold)
        .collect()
}

/// A tag node with its label and kinds.
#[derive(Debug, Clone, Default)]
struct Tag {
    label: String,
    input: bool,
    output: bool,
}

fn rows(store: &Store, query: &str) -> Result<Vec<Vec<Option<Term>>>, RetrieveError> {
    match store.graph().query(query, &store.query_options())? {
        QueryOutcome::Solutions { rows, .. } => Ok(rows),
        _ => Ok(Vec::new()),
    }
}

/// Every tag in the store with its kinds.
fn tags(store: &Store) -> Result<BTreeMap<String, Tag>, RetrieveError> {
    let query = format!(
        "SELECT ?tag ?label ?type WHERE {{ ?tag a ?type ; <{label}> ?label . \
         VALUES ?type {{ <{input}> <{output}> }} }}",
        label = w3c::RDFS_LABEL,
        input = kgfuse::INPUT_TAG,
        output = kgfuse::OUTPUT_TAG,
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
        entry.input |= kind == kgfuse::INPUT_TAG;
        entry.output |= kind == kgfuse::OUTPUT_TAG;
    }
    Ok(out)
}

/// Tags whose label occurs in the question as whole (folded) words; a tag whose
/// match lies inside a longer matched tag's match is dropped (`fee` inside
/// `average fee`). Returns (tag IRI, first word position).
fn matched_tags(question: &str, tags: &BTreeMap<String, Tag>) -> Vec<(String, usize, usize)> {
    let question = words(question);
    let mut found: Vec<(String, usize, usize)> = Vec::new();
    for (iri, tag) in tags {
        let label = words(&tag.label);
        if label.is_empty() || label.len() > question.len() {
            continue;
        }
        if let Some(start) = question
            .windows(label.len())
            .position(|w| w == label.as_slice())
        {
            found.push((iri.clone(), start, start + label.len()));
        }
    }
    let spans: Vec<(usize, usize)> = found.iter().map(|(_, s, e)| (*s, *e)).collect();
    found.retain(|(_, s, e)| {
        !spans
            .iter()
            .any(|(s2, e2)| (s2 <= s && e <= e2) && (e2 - s2) > (e - s))
    });
    found
}

/// The data-flow graph: tag -> consumer, callee -> caller, producer -> tag.
fn flow_graph(store: &Store) -> Result<HashMap<String, Vec<String>>, RetrieveError> {
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    let query = format!(
        "SELECT ?from ?to WHERE {{ \
           {{ ?to <{consumes}> ?from }} UNION {{ ?to <{calls}> ?from }} UNION {{ ?from <{produces}> ?to }} }}",
        consumes = kgfuse::CONSUMES,
        calls = kgfuse::CALLS,
        produces = kgfuse::PRODUCES,
    );
    for row in rows(store, &query)? {
        if let (Some(from), Some(to)) = (cell_text(row.first()), cell_text(row.get(1))) {
            edges.entry(from).or_default().push(to);
        }
    }
    for targets in edges.values_mut() {
        targets.sort();
        targets.dedup();
    }
    Ok(edges)
}

/// Most partial paths explored per search, so dense graphs stay bounded.
const MAX_EXPANSIONS: usize = 20_000;

/// Simple paths from any input tag to any output tag, shortest first (breadth-first
/// over partial paths; a node appears at most once per path). Not only the shortest
/// path per node: `transaction value -> compute_fee -> average_fee -> average fee`
/// matters although `average_fee` also consumes the transaction value directly.
fn search(
    edges: &HashMap<String, Vec<String>>,
    inputs: &[String],
    outputs: &BTreeSet<String>,
    limits: PathLimits,
) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut queue: VecDeque<Vec<&str>> = inputs.iter().map(|i| vec![i.as_str()]).collect();
    let mut expansions = 0usize;
    while let Some(path) = queue.pop_front() {
        expansions += 1;
        if expansions > MAX_EXPANSIONS || path.len() > limits.max_depth {
            break;
        }
        let Some(last) = path.last() else {
            continue;
        };
        for next in edges.get(*last).into_iter().flatten() {
            if path.contains(&next.as_str()) {
                continue;
            }
            let mut extended = path.clone();
            extended.push(next);
            if outputs.contains(next) {
                paths.push(extended.iter().map(|s| (*s).to_owned()).collect());
                if paths.len() >= limits.max_paths {
                    return paths;
                }
            } else if !outputs.is_empty() {
                queue.push_back(extended);
            }
        }
    }
    paths
}

/// Labels of the semantic tags the question names (what `auto` looks at).
pub(crate) fn question_tags(store: &Store, question: &str) -> Result<Vec<String>, RetrieveError> {
    let all = tags(store)?;
    Ok(matched_tags(question, &all)
        .into_iter()
        .map(|(tag, _, _)| all[&tag].label.clone())
        .collect())
}

/// Runs the strategy.
pub(crate) async fn retrieve(
    store: &Store,
    question: &str,
    top_k: usize,
    limits: PathLimits,
) -> Result<FusedContext, RetrieveError> {
    let mut context = FusedContext::default();
    let all_tags = tags(store)?;
    let matched = matched_tags(question, &all_tags);
    let mut inputs: Vec<String> = Vec::new();
    let mut outputs: BTreeSet<String> = BTreeSet::new();
    // Tags that are only produced are what is asked for; tags that are only consumed
    // are what is given; a tag that is both is given, unless nothing else is asked.
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
    if inputs.is_empty() && outputs.is_empty() {
        context.status = Some("no_tags".into());
        return Ok(context);
    }
    let edges = flow_graph(store)?;
    let mut paths = if inputs.is_empty() {
        Vec::new()
    } else {
        search(&edges, &inputs, &outputs, limits)
    };
    if paths.is_empty() {
        // Only outputs named (or no path from the inputs): the producers themselves.
        for (producer, targets) in &edges {
            for target in targets.iter().filter(|t| outputs.contains(*t)) {
                if !all_tags.contains_key(producer) {
                    paths.push(vec![producer.clone(), target.clone()]);
                }
            }
        }
        paths.sort();
        paths.truncate(limits.max_paths);
        if paths.is_empty() {
            context.status = Some("no_paths".into());
        }
    }
    // Functions on the paths, most frequent first, tags not counted.
    let mut frequency: BTreeMap<&str, usize> = BTreeMap::new();
    for path in &paths {
        for node in path.iter().filter(|n| !all_tags.contains_key(*n)) {
            *frequency.entry(node).or_default() += 1;
        }
    }
    let mut ranked: Vec<(&str, usize)> = frequency.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut dropped = Vec::new();
    for (rank, (function, count)) in ranked.iter().enumerate() {
        if rank >= top_k {
            dropped.push(Dropped {
                iri: (*function).to_owned(),
                why: format!("on {count} path(s), beyond top-k {top_k}"),
            });
            continue;
        }
        let mut info = function_info(store, function)?;
        #[allow(clippy::cast_precision_loss)]
        let score = *count as f32 / paths.len().max(1) as f32;
        info.score = score;
        context.functions.push(info);
    }
    context.trace.push(TraceStage {
        stage: "paths".into(),
        kept: context.functions.iter().map(|f| f.iri.clone()).collect(),
        dropped,
    });
    context.paths = paths;
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(label: &str, input: bool, output: bool) -> Tag {
        Tag {
            label: label.into(),
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
        let found: Vec<String> = matched_tags(
            "What are the average fees for transaction values by MCC? (merchants_table)",
            &tags,
        )
        .into_iter()
        .map(|(t, _, _)| t)
        .collect();
        assert_eq!(found, ["t:avg", "t:mcc", "t:tv"]);
    }

    #[test]
    fn search_follows_data_flow_to_the_outputs() {
        let edges: HashMap<String, Vec<String>> = HashMap::from([
            ("in".to_owned(), vec!["compute".to_owned()]),
            (
                "compute".to_owned(),
                vec!["average".to_owned(), "unrelated".to_owned()],
            ),
            ("average".to_owned(), vec!["out".to_owned()]),
        ]);
        let outputs = BTreeSet::from(["out".to_owned()]);
        let paths = search(&edges, &["in".to_owned()], &outputs, PathLimits::default());
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
        assert!(search(&edges, &["in".to_owned()], &outputs, short).is_empty());
    }
}
