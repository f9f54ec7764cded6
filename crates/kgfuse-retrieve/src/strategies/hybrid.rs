//! `hybrid`: BM25 full-text and vector search fused with reciprocal rank fusion.
//!
//! Each channel ranks its own candidates and [`crate::fusion`] merges the ranks
//! (`sum over channels of 1 / (60 + rank)`): scores of the two channels are not
//! comparable (BM25 vs cosine), ranks are. The trace keeps every kept node's rank
//! in each channel.

use crate::RetrieveError;
use crate::fusion::{Channel, fuse};
use crate::sources::text_hits;
use kgfuse_core::context::{Dropped, FusedContext, TraceStage};
use kgfuse_store::{KindFilter, Question, Store, VectorHit};
use std::collections::HashMap;

/// Runs the strategy: each channel fetches `2 * top_k` candidates.
pub(crate) async fn retrieve(
    store: &Store,
    question: &Question,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let depth = top_k.saturating_mul(2);
    let vector = store.search(question, depth, KindFilter::Any).await?;
    let bm25 = store.full_text(question.text(), depth).await?;
    let iris = |hits: &[VectorHit]| hits.iter().map(|h| h.iri.clone()).collect();
    let fused = fuse(&[
        Channel::new("vector", iris(&vector)),
        Channel::new("bm25", iris(&bm25)),
    ]);
    let mut rows: HashMap<String, VectorHit> = HashMap::new();
    for hit in bm25.into_iter().chain(vector) {
        rows.insert(hit.iri.clone(), hit);
    }
    let mut context = FusedContext::default();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut returned = Vec::new();
    for (i, item) in fused.into_iter().enumerate() {
        if i >= top_k {
            dropped.push(Dropped {
                iri: item.iri.clone(),
                why: format!("{} beyond top-k {top_k}", item.describe()),
            });
            continue;
        }
        kept.push(format!("{} {}", item.iri, item.describe()));
        if let Some(hit) = rows.remove(&item.iri) {
            returned.push((hit, item.score));
        }
    }
    context.unstructured = text_hits(store, returned);
    context.trace.push(TraceStage {
        stage: "rrf".into(),
        kept,
        dropped,
    });
    Ok(context)
}
