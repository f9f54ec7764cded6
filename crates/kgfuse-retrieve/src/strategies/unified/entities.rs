//! Stages 1 and 2: the vector hits, and the linked entities (linked nodes, then
//! nodes a model-extracted name spells, then the best hits).

use super::*;

/// Vector hits whose IRIs become linked entities.
pub(super) const HIT_ENTITIES: usize = 3;

/// Most linked entities queried.
pub(super) const MAX_ENTITIES: usize = 6;

/// The spellings under which a name may be stored as a label: as written,
/// lowercased, capitalised, and, for identifiers, split into words
/// (`KnowledgeGraphUpdateAgent`, `knowledge_graph_update_agent` -> "Knowledge graph
/// update agent"); each also as an `@en` literal.
pub(super) fn spellings(name: &str) -> Vec<Term> {
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
pub(super) fn nodes_named(
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
        name = kg::NAME,
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

/// Stage 1, vector retrieval: the question's nearest rows, which seed the
/// entities and the graph walk of the fused ranking (stage 6).
pub(super) async fn vector_stage(
    store: &Store,
    question: &Question,
    top_k: usize,
    context: &mut FusedContext,
) -> Result<Vec<VectorHit>, RetrieveError> {
    let hits = store.search(question, top_k, KindFilter::Any).await?;
    context.trace.push(TraceStage {
        stage: "vector".into(),
        kept: hits
            .iter()
            .map(|hit| format!("{} ({:.3})", hit.iri, hit.score))
            .collect(),
        dropped: Vec::new(),
    });
    Ok(hits)
}

/// Stage 2, entities: linked mentions first (best candidates of each), then nodes
/// whose label is a spelling of a name the language model extracted (`names`),
/// then the best vector hits; at most `MAX_ENTITIES`, none the question holds out.
pub(super) fn entity_stage(
    store: &Store,
    question: &Question,
    names: &[String],
    hits: &[VectorHit],
    linked: &Linked,
    context: &mut FusedContext,
    rejected: &mut Vec<Rejected>,
) -> Result<Vec<NamedNode>, RetrieveError> {
    let mut entities: Vec<String> = linked.entities().map(|c| c.iri.clone()).collect();
    for node in nodes_named(store, names, &mut context.sparql, rejected)? {
        if !entities.contains(&node) {
            entities.push(node);
        }
    }
    for hit in hits.iter().take(HIT_ENTITIES) {
        if !entities.contains(&hit.iri) {
            entities.push(hit.iri.clone());
        }
    }
    let mut dropped = Vec::new();
    entities.retain(|entity| {
        let held_out = question.held_out().contains(entity);
        if held_out {
            dropped.push(Dropped {
                iri: entity.clone(),
                why: "held out by the caller".into(),
            });
        }
        !held_out
    });
    if entities.len() > MAX_ENTITIES {
        for extra in entities.split_off(MAX_ENTITIES) {
            dropped.push(Dropped {
                iri: extra,
                why: format!("more than {MAX_ENTITIES} entities"),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "entities".into(),
        kept: names
            .iter()
            .map(|n| format!("named in question: {n}"))
            .chain(entities.iter().cloned())
            .collect(),
        dropped,
    });
    Ok(entities
        .iter()
        .filter_map(|e| NamedNode::new(e.as_str()).ok())
        .collect())
}

/// The entities the model is given: the linked mentions' candidates (those a
/// mention only qualifies are not anchors); when nothing linked, the entity
/// stage's first entities.
pub(super) fn question_entities(
    store: &Store,
    linked: &Linked,
    entities: &[NamedNode],
) -> Result<Vec<QuestionEntity>, RetrieveError> {
    let named: Vec<QuestionEntity> = linked
        .mentions
        .iter()
        .flat_map(|mention| {
            mention.candidates.iter().map(|candidate| QuestionEntity {
                label: candidate.name.clone(),
                iri: candidate.iri.clone(),
                anchor: !mention.qualifier,
            })
        })
        .collect();
    if !named.is_empty() {
        return Ok(named);
    }
    let first = &entities[..entities.len().min(HIT_ENTITIES)];
    Ok(entity_labels(store, first)?
        .into_iter()
        .map(|(label, iri)| QuestionEntity {
            label,
            iri,
            anchor: false,
        })
        .collect())
}
