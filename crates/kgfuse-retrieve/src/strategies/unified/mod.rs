//! `unified`: the unified context retriever's iterative refinement, on a
//! question understood once ([`Understanding`], `kgfuse-understand`): its
//! linked terms, the query graphs and plans with their answer set, and a real
//! model's reading come from there; this strategy asks a model nothing more
//! (unless [`RetrieveOptions::model_query`] asks for a query of its own).
//!
//! 1. vector retrieval gives the unstructured side (chunks with their sources);
//! 2. the entities: the understanding's linked nodes, then nodes whose label
//!    is a spelling of a name the question mentions (the model's reading's
//!    names, else the offline extraction's), then the best hits;
//! 3. generated SPARQL: the understanding's query graphs and answer set
//!    (`queries.rs`), optionally a real model's text-to-SPARQL query, and
//!    templates (outgoing and incoming facts of every entity, class membership;
//!    a second round for nodes the first round ties to two entities); every
//!    query is parsed and checked against the loaded ontology and the data
//!    before it runs;
//! 4. paths between pairs of entities (up to `MAX_PAIR_HOPS` edges) become evidence;
//! 5. one fact ranking under a bounded budget: rows the constructed query and the
//!    model's query agree on first, then the better-supported query's rows (mean
//!    relevance), the other's next, then path evidence and template facts by relevance (a linked
//!    property, a value of the linked class, a relation between entities), schema
//!    bookkeeping (ranges, `isDefinedBy`, pictures) last; the trace says what the
//!    budget cut.
//!
//! 6. one fused node ranking (channels.rs), the functions of a code question;
//!    its `domain` channel is DomAgent's offline half;
//! 7. for a code question, worked examples: the cases nearest the question and
//!    those that exercise the returned functions, fused.
//!
//! A FACTUAL question uses fewer vector hits as context, a SEMANTIC one fewer facts;
//! the two sides are never merged into one string.
//!
//! [`retrieve`] below runs the stages in this order; each file holds a group:
//! `entities.rs` (1, 2), `queries.rs` (3: the understanding's answers, a
//! model's query), `reads.rs` (3 templates, 4 paths: the graph reads),
//! `channels.rs` (6: the fused node ranking and its channels), `facts.rs` (5:
//! the fact ranking and budget), `cases.rs` (7: worked examples).
//!
//! The graph reads of stages 3 (templates), 4 (the walks around the entities)
//! and the fused ranking's walk and gate depend only on the entities and the
//! question, so they are read together, round by round
//! ([`kgfuse_graph::Graph::read_in_rounds`]): on a SPARQL server a retrieval
//! costs five requests beside the understanding's (docs/scaling-out.md,
//! "Round trips").

mod cases;
pub(crate) mod channels;
mod entities;
mod facts;
mod queries;
mod reads;
mod site;

use crate::strategies::neighborhood::{Adjacency, add_edges, evidence, walk_starts};
use crate::{RetrieveError, RetrieveOptions, domain};
use channels::{Signals, WalkStart, Walked, ranking_stage};
use entities::*;
use facts::*;
use kgfuse_core::context::{Dispatch, Dropped, Fact, FusedContext, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::{Literal, NamedNode, Term};
use kgfuse_graph::templates::{Neighbourhood, WalkLimits, WalkRounds};
use kgfuse_graph::{EdgeIndex, GraphError, QueryOutcome, Rounds, parse_query};
use kgfuse_lexicon::lexicon::Lexicon;
use kgfuse_lexicon::linking::Linked;
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_lexicon::sparql::{OneRead, Rejected, Solutions, run_checked, values, with_values};
use kgfuse_llm::{LanguageModel, RuleBased};
use kgfuse_plan::planner;
use kgfuse_store::{KindFilter, Question, Store, VectorHit};
use kgfuse_text2sparql::{
    Grounding, QuestionEntity, TextToSparqlOptions, entity_labels, text_to_sparql,
};
use kgfuse_understand::Understanding;
use queries::*;
use reads::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Runs the strategy, stage by stage, on a question understood to
/// [`kgfuse_understand::Depth::Graph`] (its linked terms, query graphs and
/// answer set come from the [`Understanding`]); `question` is the question
/// holding out the request's excluded nodes.
pub(crate) async fn retrieve(
    store: &Store,
    model: &dyn LanguageModel,
    understanding: &Understanding,
    question: &Question,
    options: &RetrieveOptions,
) -> Result<FusedContext, RetrieveError> {
    let top_k = options.top_k;
    let mut context = FusedContext::default();
    let hits = vector_stage(store, question, top_k, &mut context).await?;
    let linked = &understanding.linked;
    let mut rejected = Vec::new();
    let entities = entity_stage(
        store,
        question,
        &understanding.names,
        &hits,
        linked,
        &mut context,
        &mut rejected,
    )?;
    let holds_code = crate::holds_code(store)?;
    let sites = if holds_code {
        site::sites_of(store, question)?
    } else {
        Vec::new()
    };
    let code = match sites.first() {
        Some(site) => Some(format!(
            "the question declares {}: what its body calls",
            site.function
        )),
        None => channels::asks_for_code(store, holds_code, question, &hits)?,
    };
    let shortlist = domain_shortlist(store, question, holds_code, options).await?;
    let read = graph_reads(
        store,
        question,
        &hits,
        &entities,
        code.is_some(),
        shortlist.as_ref(),
        options,
    )
    .await?;
    let domain_functions = domain_ranking(shortlist, question.text(), options, read.ties.as_ref())?;
    answers_stage(understanding, &mut context, &mut rejected);
    let constructed = &understanding.constructed;
    // A model whose plan answered has written this question's query.
    let generated = if options.model_query && !understanding.answered_by_model() {
        model_query_stage(store, model, question, linked, &entities, &mut context).await?
    } else {
        Vec::new()
    };
    let template = read.templates.finish(&mut context, &mut rejected);
    ontology_check_stage(&rejected, &mut context);
    let path_facts = path_stage(&entities, read.path_walks, code.as_deref(), &mut context);
    let signals = Signals {
        question,
        hits: &hits,
        linked,
        answers: &constructed.facts,
        code: code.as_deref(),
        holds_code,
        domain: &domain_functions,
        sites: &sites,
    };
    ranking_stage(store, &signals, options, read.walked, &mut context).await?;
    let sources = FactSources {
        constructed: constructed.facts.clone(),
        generated,
        paths: path_facts,
        template,
    };
    let relevance = Relevance::new(store, linked, &entities)?;
    facts_stage(
        sources,
        &relevance,
        code.is_some(),
        understanding.dispatch,
        top_k,
        &mut context,
    );
    if code.is_some() {
        cases::cases_stage(store, question, options, &mut context).await?;
    }
    Ok(context)
}

/// Stages 3c and 4 and the ranking's walk and gate, read together ([`graph_stage`]):
/// the walks start at the entities (for paths, unless the question asks for code)
/// and at the ranking's seeds (among them the best instances of `hits`, the
/// vector stage's), over the edge index when there is one.
async fn graph_reads<'a>(
    store: &'a Store,
    question: &Question,
    hits: &[VectorHit],
    entities: &[NamedNode],
    asks_for_code: bool,
    shortlist: Option<&domain::Shortlist>,
    options: &RetrieveOptions,
) -> Result<GraphReads<'a>, RetrieveError> {
    let index = store.edge_index()?;
    let ties = match shortlist {
        Some(shortlist) => shortlist.read_ties(store, &RuleBased::default(), index.as_deref())?,
        None => OneRead::new(store, None),
    };
    let path_from = if asks_for_code {
        &[]
    } else {
        &entities[..entities.len().saturating_sub(1)]
    };
    let walks = Walks {
        path_from,
        start: WalkStart::new(store, question, options, hits).await?,
        index,
    };
    graph_stage(store, entities, walks, ties, options)
}

/// The `domain` channel's first half (stage 6), when the store holds code:
/// DomAgent's package choice and candidates, before its gate reads the graph.
/// The channel is DomAgent's offline half (package choice by similarity, the
/// gate by structure): `unified` asks a model nothing beyond its reading of
/// the question; `--strategy domain` is where a model chooses and judges.
async fn domain_shortlist(
    store: &Store,
    question: &Question,
    holds_code: bool,
    options: &RetrieveOptions,
) -> Result<Option<domain::Shortlist>, RetrieveError> {
    if !holds_code {
        return Ok(None);
    }
    let depth = channels::depth(options);
    Ok(Some(
        domain::shortlist(
            store,
            &RuleBased::default(),
            question,
            depth,
            options.domain,
        )
        .await?,
    ))
}

/// The `domain` channel's second half: the gate, given the ties read with the
/// other stages; empty when the store holds no code.
fn domain_ranking(
    shortlist: Option<domain::Shortlist>,
    question: &str,
    options: &RetrieveOptions,
    ties: Option<&Solutions>,
) -> Result<Vec<String>, RetrieveError> {
    let Some(shortlist) = shortlist else {
        return Ok(Vec::new());
    };
    shortlist.ranked_functions(
        &RuleBased::default(),
        question,
        channels::depth(options),
        options.domain,
        &options.exclude,
        ties,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hub with more facts than the cut keeps the first in text order, the
    /// other node keeps all of its own, and code is left out before the cut.
    #[tokio::test]
    async fn each_node_keeps_its_own_facts_in_text_order() {
        let mut turtle = String::from(
            "@prefix ex: <urn:ex:> .\n\
             @prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
             ex:small ex:links ex:o1 , ex:o2 .\n\
             ex:hub kg:code \"def hub(): pass\" .\n",
        );
        // `kg:code` sorts before `ex:links`, so it would take a place if it were
        // cut after; the links are written in reverse, so the store's order is
        // not the text order.
        for i in (0..40).rev() {
            turtle.push_str(&format!("ex:hub ex:links ex:o{i:02} .\n"));
        }
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(&turtle).await;
        let nodes = ["urn:ex:hub", "urn:ex:small"].map(|n| NamedNode::new(n).expect("iri"));
        let solutions = run_checked(&store, facts_query(&nodes, true))
            .expect("run")
            .unwrap_or_else(|rejected| panic!("rejected: {:?}", rejected.unknown));
        let kept = first_facts_of_each(&solutions);
        let objects = |node: &str| -> Vec<String> {
            kept.iter()
                .filter(|[entity, ..]| entity == node)
                .map(|[_, _, other, _]| other.clone())
                .collect()
        };
        let hub = objects("urn:ex:hub");
        let expected: Vec<String> = (0..FACTS_PER_ENTITY)
            .map(|i| format!("urn:ex:o{i:02}"))
            .collect();
        assert_eq!(hub, expected);
        assert_eq!(objects("urn:ex:small").len(), 2);
    }

    /// A remote graph runs the printed algebra: the facts query must print as
    /// itself (each node's LIMIT where it was).
    #[test]
    fn the_facts_query_prints_as_itself() {
        let nodes = ["urn:ex:a", "urn:ex:b"].map(|n| NamedNode::new(n).expect("iri"));
        for outgoing in [true, false] {
            let parse = |text: &str| {
                spargebra::SparqlParser::new()
                    .parse_query(text)
                    .unwrap_or_else(|e| panic!("{e}: {text}"))
            };
            let query = parse(&facts_query(&nodes, outgoing));
            let printed = query.to_string();
            assert_eq!(parse(&printed), query, "{printed}");
            assert_eq!(printed.matches("LIMIT 250 ").count(), 2, "{printed}");
        }
    }

    #[test]
    fn a_node_tied_to_two_entities_joins_the_second_round() {
        let fact = |s: &str, p: &str, o: &str| Fact {
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            graph: "urn:g".into(),
        };
        let facts = [
            fact("urn:a", "urn:uses", "urn:shared"),
            fact("urn:b", "urn:uses", "urn:shared"),
            fact("urn:a", "urn:uses", "urn:only-a"),
            fact("urn:b", w3c::RDF_TYPE, "urn:Class"),
            fact("urn:a", w3c::RDF_TYPE, "urn:Class"),
        ];
        let entities = ["urn:a".to_owned(), "urn:b".to_owned()];
        let fresh: Vec<String> = second_round_entities(&facts, &entities)
            .into_iter()
            .map(NamedNode::into_string)
            .collect();
        assert_eq!(fresh, ["urn:shared"]);
    }

    #[test]
    fn identifiers_are_spelled_as_labels() {
        let forms: Vec<String> = spellings("KnowledgeGraphUpdateAgent")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            forms.contains(&"\"Knowledge graph update agent\"@en".to_owned()),
            "{forms:?}"
        );
        assert!(forms.contains(&"\"KnowledgeGraphUpdateAgent\"".to_owned()));
        let snake: Vec<String> = spellings("decode_signal")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(snake.contains(&"\"decode signal\"".to_owned()), "{snake:?}");
        assert!(snake.contains(&"\"decode_signal\"".to_owned()));
    }

    const INVENTED: &str = "SELECT ?o WHERE { ex:alice ex:employer ?o }";
    const VALID: &str = "```sparql\nSELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }\n```";
    const VALID_TEXT: &str = "SELECT ?x ?o WHERE { ?x a ex:Employee ; ex:worksFor ?o }";

    /// `unified` on `question` understood to the graph.
    async fn unified(
        store: &Store,
        model: &dyn LanguageModel,
        question: &str,
        options: &RetrieveOptions,
    ) -> FusedContext {
        let understanding = kgfuse_understand::understand(
            store,
            model,
            Question::new(question),
            kgfuse_understand::Depth::Graph,
        )
        .expect("understood");
        retrieve(
            store,
            model,
            &understanding,
            &understanding.question,
            options,
        )
        .await
        .expect("unified")
    }

    /// With `model_query`, a model's own query joins the facts, with its trace;
    /// without, the model is asked nothing beyond its reading.
    #[tokio::test]
    async fn unified_adds_the_generated_query_its_facts_and_its_trace() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(kgfuse_lexicon::testing::EMPLOYEES).await;
        let model = kgfuse_lexicon::testing::Scripted::new(&[INVENTED, VALID]);
        let options = RetrieveOptions {
            top_k: 4,
            model_query: true,
            ..RetrieveOptions::default()
        };
        let context = unified(
            &store,
            &model,
            "Who works for which organisation?",
            &options,
        )
        .await;
        assert!(
            context.sparql.iter().any(|q| q == VALID_TEXT),
            "{:?}",
            context.sparql
        );
        let stage = context
            .trace
            .iter()
            .find(|s| s.stage == kgfuse_text2sparql::STAGE)
            .expect("text-to-sparql stage");
        assert_eq!(stage.dropped.len(), 1);
        assert_eq!(stage.kept, [VALID_TEXT]);
        let first = context.structured_facts.first().expect("facts");
        assert!(
            context
                .structured_facts
                .iter()
                .any(|f| f.subject == "http://example.org/alice"
                    && f.predicate == "http://example.org/worksFor"
                    && f.object == "http://example.org/acme"),
            "{first:?}"
        );
        // The linked entities reach the model with their labels.
        let request = &model.requests()[0];
        assert!(!request.entities.is_empty());
        assert!(
            request
                .entities
                .iter()
                .all(|e| !e.label.is_empty() && e.iri.starts_with("http"))
        );

        // Rows that are not triples become trace items.
        let model = kgfuse_lexicon::testing::Scripted::new(&[
            "SELECT ?name WHERE { ?x ex:worksFor ex:acme ; rdfs:label ?name }",
        ]);
        let context = unified(
            &store,
            &model,
            "What are the names of Acme's employees?",
            &options,
        )
        .await;
        let stage = context
            .trace
            .iter()
            .find(|s| s.stage == kgfuse_text2sparql::STAGE)
            .expect("text-to-sparql stage");
        assert!(stage.kept.iter().any(|k| k == "?name = Alice"), "{stage:?}");

        let model = kgfuse_lexicon::testing::Scripted::new(&[VALID]);
        let options = RetrieveOptions {
            model_query: false,
            ..options
        };
        let context = unified(
            &store,
            &model,
            "Who works for which organisation?",
            &options,
        )
        .await;
        assert!(model.requests().is_empty());
        assert!(
            context
                .trace
                .iter()
                .all(|s| s.stage != kgfuse_text2sparql::STAGE)
        );
    }
}
