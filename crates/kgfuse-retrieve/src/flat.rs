//! `flat`: vector top-k over every embedded node, the baseline.

use crate::RetrieveError;
use crate::sources::text_hit;
use kgfuse_core::context::{FusedContext, TraceStage};
use kgfuse_store::Store;

/// The `top_k` nearest nodes to the question, with their sources.
pub(crate) async fn retrieve(
    store: &Store,
    question: &str,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let hits = store.search(question, top_k, None).await?;
    let mut context = FusedContext::default();
    let mut kept = Vec::with_capacity(hits.len());
    for hit in hits {
        kept.push(format!("{} ({}, {:.3})", hit.iri, hit.kind, hit.score));
        let score = hit.score;
        context.unstructured.push(text_hit(store, hit, score));
    }
    context.trace.push(TraceStage {
        stage: "vector".into(),
        kept,
        dropped: Vec::new(),
    });
    Ok(context)
}
