//! `unified`: the unified context retriever's iterative refinement.
//!
//! 1. vector retrieval gives the unstructured side (chunks with their sources);
//! 2. entity extraction: the IRIs of the best hits, plus nodes whose label, alias
//!    or name is a spelling of an entity the language model extracts from the
//!    question (`KnowledgeGraphUpdateAgent` finds "Knowledge graph update agent");
//! 3. generated SPARQL about those entities (outgoing and incoming facts with
//!    labels and graphs, class membership) gives the structured side; each query is
//!    parsed and checked against the loaded ontology and the data before it runs
//!    (a predicate or class the store does not know rejects it, in the trace);
//! 4. a second, last round: nodes that the first round's facts tie to two or more
//!    entities become entities and their facts fill the remaining budget;
//! 5. paths between pairs of entities (up to `MAX_PAIR_HOPS` edges) become evidence.
//!
//! With a real language model (not [`LanguageModel::is_offline`]), step 2 is followed
//! by [text-to-SPARQL](crate::text_to_sparql): the model writes a query from the
//! question, an ontology slice and the linked entities, kgfuse checks it (and asks
//! for repairs) before running it; the accepted query joins `sparql`, the triples
//! its rows assert come first among the facts (rows that are not triples go to its
//! `text-to-sparql` trace stage). Offline, only the templates run.
//!
//! A FACTUAL question uses fewer vector hits as context, a SEMANTIC one fewer facts;
//! the two sides are never merged into one string.

use crate::RetrieveError;
use crate::neighborhood::{Adjacency, add_edges, evidence};
use crate::sources::{cell_text, text_hit};
use crate::sparql::{Rejected, run_checked, with_values};
use crate::text_to_sparql::{TextToSparqlOptions, entity_labels, text_to_sparql};
use kgfuse_core::context::{Dispatch, Dropped, Fact, FusedContext, TraceStage};
use kgfuse_core::vocab::{kgfuse, w3c};
use kgfuse_graph::model::{Literal, NamedNode, Term};
use kgfuse_llm::LanguageModel;
use kgfuse_store::Store;

/// Vector hits whose IRIs become linked entities.
const HIT_ENTITIES: usize = 3;
/// Most linked entities queried.
const MAX_ENTITIES: usize = 6;
/// Facts read per entity and direction.
const FACTS_PER_ENTITY: usize = 25;
/// Predicates whose values are prose or code: the unstructured side's business.
const LONG_TEXT: &[&str] = &[
    kgfuse::TEXT,
    kgfuse::CODE,
    kgfuse::KNOWLEDGE,
    w3c::RDFS_COMMENT,
    w3c::SKOS_DEFINITION,
    w3c::DCTERMS_DESCRIPTION,
];

/// Predicates that organise the store rather than state domain facts.
const BOOKKEEPING: &[&str] = &[
    w3c::RDF_TYPE,
    w3c::RDFS_LABEL,
    w3c::SKOS_ALT_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::DCTERMS_IS_PART_OF,
    kgfuse::MENTIONS,
    kgfuse::CHUNK_ID,
    kgfuse::SECTION,
    kgfuse::HAS_CHUNK,
    kgfuse::START_LINE,
    kgfuse::END_LINE,
];

/// Longest path searched between two linked entities.
const MAX_PAIR_HOPS: usize = 3;

/// The spellings under which a name may be stored as a label: as written,
/// lowercased, capitalised, and, for identifiers, split into words
/// (`KnowledgeGraphUpdateAgent`, `knowledge_graph_update_agent` -> "Knowledge graph
/// update agent"); each also as an `@en` literal.
fn spellings(name: &str) -> Vec<Term> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch.is_whitespace() {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        word.push(ch);
    }
    words.extend((!word.is_empty()).then_some(word));
    let spaced = words.join(" ");
    let capitalise = |text: &str| {
        let mut chars = text.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        })
    };
    let mut forms = vec![
        name.to_owned(),
        name.to_lowercase(),
        capitalise(&name.to_lowercase()),
        spaced.to_lowercase(),
        capitalise(&spaced.to_lowercase()),
        spaced,
    ];
    forms.sort();
    forms.dedup();
    let mut out = Vec::new();
    for form in forms {
        out.push(Literal::new_simple_literal(form.clone()).into());
        if let Ok(tagged) = Literal::new_language_tagged_literal(form, "en") {
            out.push(tagged.into());
        }
    }
    out
}

/// Nodes whose label, alias or name is one of the spellings of `names`. The
/// spellings are the VALUES of the label, so Oxigraph looks them up in its object
/// index instead of scanning every label; the question's text only ever appears as
/// literal values.
fn nodes_named(
    store: &Store,
    names: &[String],
    sparql: &mut Vec<String>,
    rejected: &mut Vec<Rejected>,
) -> Result<Vec<String>, RetrieveError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<Term> = names.iter().flat_map(|n| spellings(n)).collect();
    let template = format!(
        "?node <{label}>|<{alt}>|<{pref}>|<{name}> ?needle . FILTER(isIRI(?node))",
        label = w3c::RDFS_LABEL,
        alt = w3c::SKOS_ALT_LABEL,
        pref = w3c::SKOS_PREF_LABEL,
        name = kgfuse::NAME,
    );
    let solutions = match run_checked(store, with_values(&template, "needle", &values, 50))? {
        Ok(solutions) => solutions,
        Err(rejection) => {
            rejected.push(rejection);
            return Ok(Vec::new());
        }
    };
    let column = solutions.column("node").unwrap_or(0);
    let mut out: Vec<String> = solutions
        .rows
        .iter()
        .filter_map(|r| cell_text(r.get(column)))
        .collect();
    sparql.push(solutions.text);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Most entities a second round adds.
const SECOND_ROUND_ENTITIES: usize = 3;

/// Nodes that domain facts of the first round link to at least two different
/// entities (a shared component, a common cause), most linked first.
fn second_round_entities(facts: &[Fact], entities: &[String]) -> Vec<NamedNode> {
    let mut links: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    for fact in facts {
        if BOOKKEEPING.contains(&fact.predicate.as_str()) {
            continue;
        }
        for (node, other) in [(&fact.object, &fact.subject), (&fact.subject, &fact.object)] {
            if !entities.contains(node) && entities.contains(other) {
                links
                    .entry(node.as_str())
                    .or_default()
                    .insert(other.as_str());
            }
        }
    }
    let mut ranked: Vec<(&str, usize)> = links
        .into_iter()
        .filter(|(_, linked)| linked.len() >= 2)
        .map(|(node, linked)| (node, linked.len()))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .filter_map(|(node, _)| NamedNode::new(node).ok())
        .take(SECOND_ROUND_ENTITIES)
        .collect()
}

/// Facts about the entities, both directions, with the graph each lives in.
fn facts_about(
    store: &Store,
    entities: &[NamedNode],
    sparql: &mut Vec<String>,
    rejected: &mut Vec<Rejected>,
) -> Result<Vec<Fact>, RetrieveError> {
    let values: Vec<Term> = entities.iter().cloned().map(Term::from).collect();
    let mut facts = Vec::new();
    let limit = FACTS_PER_ENTITY * entities.len();
    for (template, outgoing) in [
        ("GRAPH ?g { ?e ?p ?x }".to_owned(), true),
        (
            format!("GRAPH ?g {{ ?x ?p ?e }} FILTER(?p != <{}>)", w3c::RDF_TYPE),
            false,
        ),
    ] {
        let solutions = match run_checked(store, with_values(&template, "e", &values, limit))? {
            Ok(solutions) => solutions,
            Err(rejection) => {
                rejected.push(rejection);
                continue;
            }
        };
        let at = |name: &str| solutions.column(name);
        let (Some(e), Some(p), Some(x), Some(g)) = (at("e"), at("p"), at("x"), at("g")) else {
            sparql.push(solutions.text);
            continue;
        };
        for row in &solutions.rows {
            let (Some(entity), Some(predicate), Some(other), Some(graph)) = (
                cell_text(row.get(e)),
                cell_text(row.get(p)),
                cell_text(row.get(x)),
                cell_text(row.get(g)),
            ) else {
                continue;
            };
            // Prose and code belong to the unstructured side; facts are relations
            // and short values.
            if LONG_TEXT.contains(&predicate.as_str()) || other.len() > 400 {
                continue;
            }
            let (subject, object) = if outgoing {
                (entity, other)
            } else {
                (other, entity)
            };
            let fact = Fact {
                subject,
                predicate,
                object,
                graph,
            };
            if !facts.iter().any(|f: &Fact| {
                f.subject == fact.subject
                    && f.predicate == fact.predicate
                    && f.object == fact.object
            }) {
                facts.push(fact);
            }
        }
        sparql.push(solutions.text);
    }
    Ok(facts)
}

/// The graph within `MAX_PAIR_HOPS` edges of an entity, as an adjacency (walked
/// once per entity, then searched for every other entity).
fn surroundings(store: &Store, from: &NamedNode) -> Result<Adjacency, RetrieveError> {
    let (_, edges) = store.graph().neighbourhood(from, MAX_PAIR_HOPS, 400)?;
    let mut adjacency = Adjacency::new();
    add_edges(&mut adjacency, edges);
    Ok(adjacency)
}

/// Runs the strategy.
pub(crate) async fn retrieve(
    store: &Store,
    model: &dyn LanguageModel,
    question: &str,
    dispatch: Dispatch,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let mut context = FusedContext::default();
    // 1. Vector side.
    let hits = store.search(question, top_k, None).await?;
    let text_budget = match dispatch {
        Dispatch::Factual => top_k.div_ceil(2),
        _ => top_k,
    };
    let mut vector_kept = Vec::new();
    let mut vector_dropped = Vec::new();
    for (i, hit) in hits.iter().enumerate() {
        if i < text_budget {
            vector_kept.push(format!("{} ({:.3})", hit.iri, hit.score));
            context
                .unstructured
                .push(text_hit(store, hit.clone(), hit.score));
        } else {
            vector_dropped.push(Dropped {
                iri: hit.iri.clone(),
                why: "factual question: text budget halved in favour of facts".into(),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "vector".into(),
        kept: vector_kept,
        dropped: vector_dropped,
    });

    // 2. Entities: best hits, then nodes named like the question's entities.
    let names = model.extract_entities(question).unwrap_or_default();
    let mut entities: Vec<String> = hits
        .iter()
        .take(HIT_ENTITIES)
        .map(|h| h.iri.clone())
        .collect();
    let mut rejected = Vec::new();
    for node in nodes_named(store, &names, &mut context.sparql, &mut rejected)? {
        if !entities.contains(&node) {
            entities.insert(0, node);
        }
    }
    let mut dropped = Vec::new();
    if entities.len() > MAX_ENTITIES {
        for extra in entities.split_off(MAX_ENTITIES) {
            dropped.push(Dropped {
                iri: extra,
                why: format!("more than {MAX_ENTITIES} entities"),
            });
        }
    }
    let nodes: Vec<NamedNode> = entities
        .iter()
        .filter_map(|e| NamedNode::new(e.as_str()).ok())
        .collect();
    context.trace.push(TraceStage {
        stage: "entities".into(),
        kept: names
            .iter()
            .map(|n| format!("named in question: {n}"))
            .chain(entities.iter().cloned())
            .collect(),
        dropped,
    });

    // A query written by the language model about the question and these
    // entities, checked before it runs (a real model only: templates otherwise).
    let mut generated_facts = Vec::new();
    if !model.is_offline() {
        let linked = entity_labels(store, &nodes)?;
        let generated = text_to_sparql(
            store,
            model,
            question,
            &linked,
            &TextToSparqlOptions::default(),
        )
        .await?;
        let mut stage = generated.trace.clone();
        if let Some(query) = &generated.query {
            context.sparql.push(query.clone());
            if generated.facts.is_empty() {
                stage.kept.extend(generated.row_summaries());
            }
        }
        context.trace.push(stage);
        generated_facts = generated.facts;
    }

    // 3. Generated SPARQL about the entities.
    if !nodes.is_empty() {
        let mut facts = facts_about(store, &nodes, &mut context.sparql, &mut rejected)?;
        let fact_budget = match dispatch {
            Dispatch::Semantic => top_k * 2,
            _ => top_k * 6,
        };
        let mut kept_facts = Vec::new();
        let mut dropped_facts = Vec::new();
        // Relations between entities first, then domain relations, then bookkeeping
        // (types, labels, chunk links), each in a stable order.
        facts.sort_by_key(|f| {
            let both = entities.contains(&f.subject) && entities.contains(&f.object);
            let bookkeeping = BOOKKEEPING.contains(&f.predicate.as_str());
            (
                !both,
                bookkeeping,
                f.subject.clone(),
                f.predicate.clone(),
                f.object.clone(),
            )
        });
        for (i, fact) in facts.into_iter().enumerate() {
            if i < fact_budget {
                kept_facts.push(format!(
                    "{} {} {}",
                    fact.subject, fact.predicate, fact.object
                ));
                context.structured_facts.push(fact);
            } else {
                dropped_facts.push(Dropped {
                    iri: fact.subject,
                    why: format!("fact budget {fact_budget} for a {dispatch:?} question"),
                });
            }
        }
        context.trace.push(TraceStage {
            stage: "sparql".into(),
            kept: kept_facts,
            dropped: dropped_facts,
        });

        // Second (and last) round: nodes the first round's facts tie to several
        // entities are entities too; read their facts with what budget is left.
        let fresh = second_round_entities(&context.structured_facts, &entities);
        if !fresh.is_empty() && context.structured_facts.len() < fact_budget {
            let more = facts_about(store, &fresh, &mut context.sparql, &mut rejected)?;
            let mut kept = Vec::new();
            for fact in more {
                if context.structured_facts.len() >= fact_budget {
                    break;
                }
                if BOOKKEEPING.contains(&fact.predicate.as_str())
                    || context.structured_facts.iter().any(|f| {
                        f.subject == fact.subject
                            && f.predicate == fact.predicate
                            && f.object == fact.object
                    })
                {
                    continue;
                }
                kept.push(format!(
                    "{} {} {}",
                    fact.subject, fact.predicate, fact.object
                ));
                context.structured_facts.push(fact);
            }
            context.trace.push(TraceStage {
                stage: "second round".into(),
                kept: fresh
                    .iter()
                    .map(|n| format!("entity {}", n.as_str()))
                    .chain(kept)
                    .collect(),
                dropped: Vec::new(),
            });
        }
    }
    // Every generated query is checked against the ontology and the data first.
    context.trace.push(TraceStage {
        stage: "ontology check".into(),
        kept: vec![format!(
            "{} generated queries use only known predicates and classes",
            context.sparql.len()
        )],
        dropped: rejected.iter().map(Rejected::dropped).collect(),
    });

    // 4. Paths between pairs of entities.
    let mut path_kept = Vec::new();
    for (i, from) in nodes.iter().enumerate() {
        if i + 1 >= nodes.len() {
            break;
        }
        let adjacency = surroundings(store, from)?;
        for to in nodes.iter().skip(i + 1) {
            if let Some((path, facts)) =
                evidence(&adjacency, &[from.as_str().to_owned()], to.as_str())
            {
                path_kept.push(path.join(" -> "));
                for fact in facts {
                    if !context.structured_facts.iter().any(|f| {
                        f.subject == fact.subject
                            && f.predicate == fact.predicate
                            && f.object == fact.object
                    }) {
                        context.structured_facts.push(fact);
                    }
                }
                context.paths.push(path);
            }
        }
    }
    context.trace.push(TraceStage {
        stage: "paths".into(),
        kept: path_kept,
        dropped: Vec::new(),
    });

    // The generated query's facts answer the question directly: they come first.
    if !generated_facts.is_empty() {
        let template_facts = std::mem::replace(&mut context.structured_facts, generated_facts);
        for fact in template_facts {
            let same = context.structured_facts.iter_mut().find(|f| {
                f.subject == fact.subject
                    && f.predicate == fact.predicate
                    && f.object == fact.object
            });
            match same {
                Some(known) if known.graph.is_empty() => known.graph = fact.graph,
                Some(_) => {}
                None => context.structured_facts.push(fact),
            }
        }
    }
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
