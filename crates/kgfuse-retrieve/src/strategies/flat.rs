//! `flat`: vector top-k over every embedded node, the baseline.

use crate::RetrieveError;
use crate::sources::text_hits;
use kgfuse_core::context::{FusedContext, TraceStage};
use kgfuse_store::{KindFilter, Question, Store};

/// The `top_k` nearest nodes to the question, with their sources.
pub(crate) async fn retrieve(
    store: &Store,
    question: &Question,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let hits = store.search(question, top_k, KindFilter::Any).await?;
    let mut context = FusedContext::default();
    let kept = hits
        .iter()
        .map(|hit| format!("{} ({}, {:.3})", hit.iri, hit.kind, hit.score))
        .collect();
    let scored = hits.into_iter().map(|hit| {
        let score = hit.score;
        (hit, score)
    });
    context.unstructured = text_hits(store, scored.collect());
    context.trace.push(TraceStage {
        stage: "vector".into(),
        kept,
        dropped: Vec::new(),
    });
    Ok(context)
}
