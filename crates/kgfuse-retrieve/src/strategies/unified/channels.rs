//! The channels of `unified`'s one fused node ranking ([`crate::fusion`]):
//!
//! - `answers`: the linked entities, then the nodes of the generated queries' rows;
//! - `lexical`: BM25 over names and descriptions ([`kgfuse_lexicon::lexicon`]);
//! - `walk`: the Graph-RAG walk ([`crate::strategies::neighborhood::walk`]) from the best
//!   vector hits and the best lexical hits, ranked by closeness and similarity;
//! - `domain`: DomAgent's function ranking inside the chosen packages;
//! - `paths`: the functions on SGKR dependency paths between the question's tags;
//! - `site`: when the question declares a function of the store, the functions
//!   around it (its class, its module, what its module calls: [`super::site`]),
//!   weighted above the others, and the declared function left out of every list.
//!
//! The plain vector list is not a channel of its own: the question's vector
//! seeds the walk and scores every node it reaches, and as a separate list it only
//! added noise on every evaluation set (EVALUATION.md, issue 14).
//!
//! When the question asks for code and the store holds code, every channel keeps
//! only functions and methods (a class is reached through its `__init__`), so
//! modules, parameters, tags and cases do not take the slots of code; and the
//! fused ranking puts the library's public API before its internals (private
//! names, helpers in test code), which a caller does not use.

use super::site::{Site, site_channel};
use crate::functions::{functions_info, internal_nodes};
use crate::fusion::{Channel, Fused, fuse};
use crate::sources::sources_of;
use crate::strategies::neighborhood::{INSTANCE_FILTER, Walk, evidence, rank_reached};
use crate::{RetrieveError, RetrieveOptions, paths};
use kgfuse_core::context::{Dropped, Fact, FusedContext, TextHit, TraceStage};
use kgfuse_graph::templates::Neighbourhood;
use kgfuse_lexicon::lexicon::{Lexicon, Role};
use kgfuse_lexicon::linking::Linked;
use kgfuse_store::{Question, Store, VectorHit};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Candidates each channel contributes, as a multiple of `top_k` (at least
/// [`MIN_DEPTH`]): deep enough that agreement further down still counts.
const DEPTH_PER_K: usize = 4;
/// The shallowest channel list.
const MIN_DEPTH: usize = 20;
/// The `site` channel's weight in the fusion: where a question declares a
/// function of the store, what lies around it is the strongest evidence of what
/// its body calls (dependency recall, eval/tasks/README.md).
const SITE_WEIGHT: f32 = 3.0;
/// Lexical hits that seed the walk, beside the vector seeds.
const LEXICAL_SEEDS: usize = 3;
/// Node kinds that are code a caller can use.
const CALLABLE: [&str; 2] = ["Function", "Method"];
/// Kinds of nodes that belong to a code graph (for telling a code question).
const CODE_KINDS: [&str; 7] = [
    "Function",
    "Method",
    "Class",
    "Case",
    "KnowledgeUnit",
    "Package",
    "Module",
];
/// Words that make a question about writing or calling code.
const CODE_CUES: [&str; 10] = [
    "function",
    "method",
    "api",
    "implement",
    "code",
    "snippet",
    "call",
    "library",
    "package",
    "module",
];

/// What the ranking is built from: computed once by `unified` and passed down.
pub(crate) struct Signals<'a> {
    /// The question.
    pub question: &'a Question,
    /// The vector hits of the question, best first.
    pub hits: &'a [VectorHit],
    /// The linked mentions, classes and properties.
    pub linked: &'a Linked,
    /// Rows of the generated queries, as facts.
    pub answers: &'a [Fact],
    /// Why the question asks for code, when it does (see [`asks_for_code`]).
    pub code: Option<&'a str>,
    /// Whether the store holds any function or method ([`crate::holds_code`]).
    pub holds_code: bool,
    /// The functions DomAgent's ranking keeps, best first (the `domain`
    /// channel; empty when the store holds no code).
    pub domain: &'a [String],
    /// Where the store holds the function the question declares (the `site`
    /// channel; [`super::site`]); empty when it declares none.
    pub sites: &'a [Site],
}

/// Whether the question asks for code, in a store that holds functions: it says
/// so ("function", "api", "how do I call") or most of its best lexical and vector
/// matches are code. `None` when it does not, else why it does.
pub(crate) fn asks_for_code(
    store: &Store,
    holds_code: bool,
    question: &Question,
    hits: &[VectorHit],
) -> Result<Option<String>, RetrieveError> {
    if !holds_code {
        return Ok(None);
    }
    code_cue(&*Lexicon::of(store)?, question, hits)
}

fn code_cue(
    lexicon: &Lexicon,
    question: &Question,
    hits: &[VectorHit],
) -> Result<Option<String>, RetrieveError> {
    let held_out = question.held_out();
    let question = question.text();
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .map(|w| w.strip_suffix('s').unwrap_or(w))
        .collect();
    if let Some(cue) = CODE_CUES.iter().find(|c| words.contains(*c)) {
        return Ok(Some(format!("the question asks for code (\"{cue}\")")));
    }
    let is_code = |kinds: &[String]| kinds.iter().any(|k| CODE_KINDS.contains(&k.as_str()));
    let lexical: Vec<bool> = lexicon
        .bm25(question, 5, &|e| !held_out.contains(&e.iri))?
        .iter()
        .map(|h| is_code(&h.entry.kinds))
        .collect();
    let vector: Vec<bool> = hits
        .iter()
        .take(5)
        .map(|h| CODE_KINDS.contains(&h.kind.as_str()))
        .collect();
    let seen = lexical.len() + vector.len();
    let code = lexical.iter().chain(&vector).filter(|c| **c).count();
    Ok((seen > 0 && code * 2 > seen)
        .then(|| format!("{code} of the {seen} best lexical and vector matches are code")))
}

/// The `answers` channel: the linked entities, then the IRI nodes of the
/// generated queries' rows, in row order.
fn answer_nodes(signals: &Signals<'_>) -> Vec<String> {
    let mut answers: Vec<String> = signals.linked.entities().map(|c| c.iri.clone()).collect();
    for fact in signals.answers {
        for node in [&fact.subject, &fact.object] {
            let is_node = (node.starts_with("urn:") || node.contains("://"))
                && kgfuse_graph::model::NamedNode::new(node.as_str()).is_ok();
            if is_node {
                answers.push(node.clone());
            }
        }
    }
    answers
}

/// Where the `walk` channel starts, known before the graph is read: the
/// question's best lexical entities (also the `lexical` channel), and the walk's
/// seeds: the best instance vector hits, then the best lexical hits not among them.
pub(crate) struct WalkStart {
    /// The `lexical` channel, best first.
    pub lexical: Vec<String>,
    /// The walk's seeds.
    pub seeds: Vec<String>,
}

impl WalkStart {
    /// The lexical hits and seeds of `question`; `hits` are its nearest rows of
    /// any kind, best first (the vector stage's).
    pub(crate) async fn new(
        store: &Store,
        question: &Question,
        options: &RetrieveOptions,
        hits: &[VectorHit],
    ) -> Result<Self, RetrieveError> {
        let lexicon = Lexicon::of(store)?;
        let held_out = question.held_out();
        let lexical: Vec<String> = lexicon
            .bm25(question.text(), depth(options), &|e| {
                e.role == Role::Entity && !held_out.contains(&e.iri)
            })?
            .iter()
            .map(|h| h.entry.iri.clone())
            .collect();
        let mut seeds =
            nearest_instances(store, question, options.neighborhood.seeds, hits).await?;
        for iri in lexical.iter().take(LEXICAL_SEEDS) {
            if !seeds.contains(iri) {
                seeds.push(iri.clone());
            }
        }
        Ok(Self { lexical, seeds })
    }
}

/// The `wanted` instance rows (not ontology terms) nearest to `question`: the
/// first instances among `hits`, its nearest rows of any kind in the search's
/// order, when they hold as many (the nearest instances of all are then among
/// them, in that order); else a search of their own.
async fn nearest_instances(
    store: &Store,
    question: &Question,
    wanted: usize,
    hits: &[VectorHit],
) -> Result<Vec<String>, RetrieveError> {
    let among: Vec<String> = hits
        .iter()
        .filter(|hit| INSTANCE_FILTER.admits(&hit.kind))
        .take(wanted)
        .map(|hit| hit.iri.clone())
        .collect();
    if among.len() == wanted {
        return Ok(among);
    }
    Ok(store
        .search(question, wanted, INSTANCE_FILTER)
        .await?
        .into_iter()
        .map(|hit| hit.iri)
        .collect())
}

/// How many candidates each channel keeps.
pub(crate) fn depth(options: &RetrieveOptions) -> usize {
    (options.top_k * DEPTH_PER_K).max(MIN_DEPTH)
}

/// The `paths` channel: the functions on dependency paths (the ranking only:
/// the fused ranking reads the descriptions of the functions it keeps).
fn paths_channel(
    store: &Store,
    question: &str,
    depth: usize,
    options: &RetrieveOptions,
) -> Result<Channel, RetrieveError> {
    let paths = paths::ranked_functions(store, question, depth, options.paths)?;
    Ok(Channel::new("paths", paths))
}

/// Every channel's list for this question, each cut to what `keep` allows and to
/// the channel depth; also the ranked walk (for evidence paths).
async fn channels(
    store: &Store,
    signals: &Signals<'_>,
    options: &RetrieveOptions,
    walk_from: Walked,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<(Vec<Channel>, Walk), RetrieveError> {
    let depth = depth(options);
    let walked = rank_reached(
        store,
        signals.question,
        walk_from.reached,
        options.neighborhood,
    )
    .await?;
    let walk_list: Vec<String> = walked
        .scored
        .iter()
        .map(|(_, _, h)| h.iri.clone())
        .collect();
    let mut lists = vec![
        Channel::new("answers", answer_nodes(signals)),
        Channel::new("lexical", walk_from.start.lexical),
        Channel::new("walk", walk_list),
    ];
    if !signals.sites.is_empty() {
        lists.push(Channel {
            name: "site",
            weight: SITE_WEIGHT,
            ranked: site_channel(store, signals.sites, depth)?,
        });
    }
    if signals.holds_code {
        lists.push(Channel::new("domain", signals.domain.to_vec()));
        lists.push(paths_channel(
            store,
            signals.question.text(),
            depth,
            options,
        )?);
    }
    // The declared function is the question, not an answer.
    let declared = |iri: &str| signals.sites.iter().any(|site| site.function == iri);
    for channel in &mut lists {
        channel
            .ranked
            .retain(|iri| keep(iri) && !options.exclude.contains(iri) && !declared(iri));
        channel.ranked.truncate(depth);
    }
    Ok((lists, walked))
}

/// The `walk` channel's start and what its walks reached, one per seed (read by
/// `unified` together with its path walks).
pub(crate) struct Walked {
    /// Where the walks started.
    pub start: WalkStart,
    /// What each seed's walk reached, in seed order.
    pub reached: Vec<Neighbourhood>,
}

/// Stage 6, the node side: the channels fused into one ranking, the best
/// `top_k` kept (as functions for a code question, as text hits otherwise), each
/// walk result with its evidence path; the trace lists every kept node's ranks.
pub(crate) async fn ranking_stage(
    store: &Store,
    signals: &Signals<'_>,
    options: &RetrieveOptions,
    walked: Walked,
    context: &mut FusedContext,
) -> Result<(), RetrieveError> {
    let lexicon = Lexicon::of(store)?;
    let code = signals.code;
    let kinds_of = |iri: &str| -> Vec<String> {
        lexicon
            .entry_of(iri)
            .map(|e| e.kinds.clone())
            .unwrap_or_default()
    };
    let keep =
        |iri: &str| code.is_none() || kinds_of(iri).iter().any(|k| CALLABLE.contains(&k.as_str()));
    let seeds = walked.start.seeds.clone();
    let (lists, walked) = channels(store, signals, options, walked, &keep).await?;
    let mut fused = fuse(&lists);
    // Writing a function of the library itself, its internals are fair game.
    let internal = if code.is_some() && signals.sites.is_empty() {
        public_api_first(store, &mut fused)?
    } else {
        HashSet::new()
    };
    let mut texts: HashMap<&str, &VectorHit> =
        signals.hits.iter().map(|h| (h.iri.as_str(), h)).collect();
    for (_, _, hit) in &walked.scored {
        texts.entry(hit.iri.as_str()).or_insert(hit);
    }
    let mut kept = vec![code.map_or_else(
        || "every kind of node".to_owned(),
        |why| format!("functions and methods only: {why}"),
    )];
    kept.extend(
        lists
            .iter()
            .map(|c| format!("{}: {} candidates", c.name, c.ranked.len())),
    );
    if !internal.is_empty() {
        kept.push(format!(
            "{} internal candidates (private names, test code) ranked after the public API",
            internal.len()
        ));
    }
    let internal_mark = |iri: &str| {
        if internal.contains(iri) {
            " (internal)"
        } else {
            ""
        }
    };
    let mut dropped = Vec::new();
    let mut paths_seen: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut returned = Vec::new();
    for (rank, item) in fused.into_iter().enumerate() {
        if rank >= options.top_k {
            dropped.push(Dropped {
                iri: item.iri.clone(),
                why: format!(
                    "{}{} beyond top-k {}",
                    item.describe(),
                    internal_mark(&item.iri),
                    options.top_k
                ),
            });
            continue;
        }
        kept.push(format!(
            "{} {}{}",
            item.iri,
            item.describe(),
            internal_mark(&item.iri)
        ));
        if item.ranks.iter().any(|(c, _)| *c == "walk")
            && let Some((nodes, _)) = evidence(&walked.adjacency, &seeds, &item.iri)
            && nodes.len() > 1
            && paths_seen.insert(nodes.clone())
        {
            context.paths.push(nodes);
        }
        returned.push(item);
    }
    if code.is_some() {
        let iris: Vec<&str> = returned.iter().map(|item| item.iri.as_str()).collect();
        for (item, mut info) in returned.iter().zip(functions_info(store, &iris)?) {
            info.score = item.score;
            context.functions.push(info);
        }
    } else {
        context.unstructured = node_texts(store, &lexicon, &texts, returned);
    }
    context.trace.push(TraceStage {
        stage: "fused ranking".into(),
        kept,
        dropped,
    });
    Ok(())
}

/// For a code question: the fused ranking with the library's public API first
/// and its internals (private names, definitions in test code:
/// [`crate::functions::internal_nodes`]) after it, each part in its fused order.
/// An agent writing code calls the public API; an internal keeps its place only
/// when too few public candidates remain. Returns the internal nodes.
fn public_api_first(
    store: &Store,
    fused: &mut Vec<Fused>,
) -> Result<HashSet<String>, RetrieveError> {
    let iris: Vec<&str> = fused.iter().map(|item| item.iri.as_str()).collect();
    let internal = internal_nodes(store, &iris)?;
    let (public, internals): (Vec<Fused>, Vec<Fused>) = std::mem::take(fused)
        .into_iter()
        .partition(|item| !internal.contains(&item.iri));
    *fused = public;
    fused.extend(internals);
    Ok(internal)
}

/// Fused nodes as text hits: each one's embedded text when a channel saw it, else
/// its names and descriptions from the lexicon; their sources read together.
fn node_texts(
    store: &Store,
    lexicon: &Lexicon,
    texts: &HashMap<&str, &VectorHit>,
    items: Vec<Fused>,
) -> Vec<TextHit> {
    let nodes: Vec<(&str, &str)> = items
        .iter()
        .map(|item| {
            let graph = texts
                .get(item.iri.as_str())
                .map_or("", |h| h.graph.as_str());
            (item.iri.as_str(), graph)
        })
        .collect();
    let sources = sources_of(store, &nodes);
    items
        .iter()
        .zip(sources)
        .map(|(item, source)| {
            let text = match texts.get(item.iri.as_str()) {
                Some(hit) => hit.text.clone(),
                None => lexicon
                    .entry_of(&item.iri)
                    .map(|e| e.text.clone())
                    .unwrap_or_default(),
            };
            TextHit {
                source,
                iri: item.iri.clone(),
                text,
                score: item.score,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_store::KindFilter;

    /// The walk's seeds taken from the vector stage's hits are the nearest
    /// instances a search of their own finds; with too few instances among the
    /// hits, they are searched for.
    #[tokio::test]
    async fn seeds_from_the_hits_are_the_nearest_instances() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(kgfuse_lexicon::testing::EMPLOYEES).await;
        let searches = || store.time_spent().vector_calls;
        let (mut terms_among_hits, mut taken, mut searched) = (false, 0, 0);
        for text in [
            "Who works for which organisation?",
            "a mountain that erupts",
            "Alice",
            "cooking a dish",
        ] {
            let question = Question::new(text);
            let hits = store
                .search(&question, 8, KindFilter::Any)
                .await
                .expect("hits");
            terms_among_hits |= hits.iter().any(|h| !INSTANCE_FILTER.admits(&h.kind));
            for (hits, wanted) in [
                (&hits[..], 1),
                (&hits[..], 2),
                (&hits[..], 3),
                (&hits[..2], 3),
            ] {
                let instances = hits
                    .iter()
                    .filter(|h| INSTANCE_FILTER.admits(&h.kind))
                    .count();
                let before = searches();
                let seeds = nearest_instances(&store, &question, wanted, hits)
                    .await
                    .expect("seeds");
                let search_of_their_own = searches() > before;
                assert_eq!(search_of_their_own, instances < wanted, "{text}: {wanted}");
                if search_of_their_own {
                    searched += 1;
                } else {
                    taken += 1;
                }
                let nearest: Vec<String> = store
                    .search(&question, wanted, INSTANCE_FILTER)
                    .await
                    .expect("instances")
                    .into_iter()
                    .map(|h| h.iri)
                    .collect();
                assert_eq!(seeds, nearest, "{text}: {wanted}");
            }
        }
        assert!(terms_among_hits, "some hits are ontology terms, left out");
        assert!(
            taken > 0 && searched > 0,
            "taken {taken}, searched {searched}"
        );
    }

    fn fused(iris: &[&str]) -> Vec<Fused> {
        iris.iter()
            .map(|iri| Fused {
                iri: (*iri).to_owned(),
                score: 0.0,
                ranks: Vec::new(),
            })
            .collect()
    }

    /// Private names and test helpers go after the public API, each part in
    /// its fused order; a node without a qualified name stays public.
    #[tokio::test]
    async fn the_public_api_comes_before_internals() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(
            "@prefix ex: <urn:ex:> .\n\
             @prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
             ex:helper kg:qualifiedName \"lib.core._helper\" .\n\
             ex:fixture kg:qualifiedName \"lib.tests.test_core.make_frame\" .\n\
             ex:mean kg:qualifiedName \"lib._stats.mean\" .\n\
             ex:init kg:qualifiedName \"lib.core.Frame.__init__\" .\n",
        )
        .await;
        let mut ranking = fused(&[
            "urn:ex:helper",
            "urn:ex:mean",
            "urn:ex:fixture",
            "urn:ex:unnamed",
            "urn:ex:init",
        ]);
        let internal = public_api_first(&store, &mut ranking).expect("partition");
        let order: Vec<&str> = ranking.iter().map(|f| f.iri.as_str()).collect();
        assert_eq!(
            order,
            [
                "urn:ex:mean",
                "urn:ex:unnamed",
                "urn:ex:init",
                "urn:ex:helper",
                "urn:ex:fixture"
            ]
        );
        assert_eq!(
            internal,
            HashSet::from(["urn:ex:helper".to_owned(), "urn:ex:fixture".to_owned()])
        );
    }
}
