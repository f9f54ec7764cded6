//! Stage 3's generated queries: the understanding's query graphs and answer
//! set into the context, and (when asked) a real model's text-to-SPARQL query.

use super::*;

/// The understanding's queries and answer in the context: the query graphs'
/// queries and trace, the question's answer set and the query that gave it.
/// The query graphs' rejected queries join the ontology check's.
pub(super) fn answers_stage(
    understanding: &Understanding,
    context: &mut FusedContext,
    rejected: &mut Vec<Rejected>,
) {
    let constructed = &understanding.constructed;
    context.sparql.extend(constructed.queries.iter().cloned());
    // A plan's query ran as it reads; a lookup's answer column is read from a
    // query graph's rows, already listed.
    if let Some(answer) = &understanding.answers
        && (answer.source == planner::SOURCE || understanding.answered_by_model())
    {
        context.sparql.insert(0, answer.query.clone());
    }
    context.answers.clone_from(&understanding.answers);
    rejected.extend(constructed.rejected.iter().cloned());
}

/// Stage 3b, a query written by a real language model about the question,
/// grounded in the linked entities and terms, checked before it runs. Offline
/// there is none: the query graphs are the offline half.
pub(super) async fn model_query_stage(
    store: &Store,
    model: &dyn LanguageModel,
    question: &Question,
    linked: &Linked,
    entities: &[NamedNode],
    context: &mut FusedContext,
) -> Result<Vec<Fact>, RetrieveError> {
    if model.is_offline() {
        return Ok(Vec::new());
    }
    let grounding = Grounding {
        entities: question_entities(store, linked, entities)?,
        named: linked
            .properties
            .iter()
            .chain(&linked.classes)
            .map(|term| term.iri.clone())
            .collect(),
    };
    let generated = text_to_sparql(
        store,
        model,
        question,
        &grounding,
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
    Ok(generated.facts)
}
