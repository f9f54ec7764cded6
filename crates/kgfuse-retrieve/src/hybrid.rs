//! `hybrid`: BM25 full-text and vector search fused with reciprocal rank fusion.
//!
//! Each channel ranks its own candidates; a node's fused score is
//! `sum over channels of 1 / (RRF_K + rank)` (rank from 1). Scores of the two
//! channels are not comparable (BM25 vs cosine), ranks are. The trace keeps every
//! channel's rank and score for every kept node.

use crate::RetrieveError;
use crate::sources::text_hit;
use kgfuse_core::context::{Dropped, FusedContext, TraceStage};
use kgfuse_store::{Store, VectorHit};
use std::collections::BTreeMap;

/// The usual RRF constant (Cormack et al. 2009): damps the weight of the top ranks.
pub const RRF_K: f32 = 60.0;

/// One node's ranks in the channels that found it.
#[derive(Debug, Default, Clone)]
struct Fused {
    hit: Option<VectorHit>,
    vector: Option<(usize, f32)>,
    bm25: Option<(usize, f32)>,
}

impl Fused {
    #[allow(clippy::cast_precision_loss)]
    fn score(&self) -> f32 {
        [self.vector, self.bm25]
            .iter()
            .flatten()
            .map(|(rank, _)| 1.0 / (RRF_K + *rank as f32))
            .sum()
    }

    fn describe(&self) -> String {
        let channel = |name: &str, c: Option<(usize, f32)>| match c {
            Some((rank, score)) => format!("{name} #{rank} ({score:.3})"),
            None => format!("{name} -"),
        };
        format!(
            "rrf {:.4} = {}, {}",
            self.score(),
            channel("vector", self.vector),
            channel("bm25", self.bm25)
        )
    }
}

/// Runs the strategy: each channel fetches `2 * top_k` candidates.
pub(crate) async fn retrieve(
    store: &Store,
    question: &str,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let depth = top_k.saturating_mul(2);
    let vector = store.search(question, depth, None).await?;
    let bm25 = store.full_text(question, depth).await?;
    let mut fused: BTreeMap<String, Fused> = BTreeMap::new();
    for (rank, hit) in vector.into_iter().enumerate() {
        let entry = fused.entry(hit.iri.clone()).or_default();
        entry.vector = Some((rank + 1, hit.score));
        entry.hit = Some(hit);
    }
    for (rank, hit) in bm25.into_iter().enumerate() {
        let entry = fused.entry(hit.iri.clone()).or_default();
        entry.bm25 = Some((rank + 1, hit.score));
        entry.hit.get_or_insert(hit);
    }
    let mut ranked: Vec<Fused> = fused.into_values().collect();
    ranked.sort_by(|a, b| {
        b.score().total_cmp(&a.score()).then_with(|| {
            let iri = |f: &Fused| f.hit.as_ref().map(|h| h.iri.clone()).unwrap_or_default();
            iri(a).cmp(&iri(b))
        })
    });
    let mut context = FusedContext::default();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (i, entry) in ranked.into_iter().enumerate() {
        let Some(hit) = entry.hit.clone() else {
            continue;
        };
        if i >= top_k {
            dropped.push(Dropped {
                iri: hit.iri,
                why: format!("{} beyond top-k {top_k}", entry.describe()),
            });
            continue;
        }
        kept.push(format!("{} {}", hit.iri, entry.describe()));
        context
            .unstructured
            .push(text_hit(store, hit, entry.score()));
    }
    context.trace.push(TraceStage {
        stage: "rrf".into(),
        kept,
        dropped,
    });
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_found_by_both_channels_beats_a_top_hit_of_one() {
        let both = Fused {
            vector: Some((3, 0.5)),
            bm25: Some((2, 7.0)),
            ..Fused::default()
        };
        let one = Fused {
            vector: Some((1, 0.9)),
            ..Fused::default()
        };
        assert!(both.score() > one.score());
        assert!(both.describe().contains("vector #3") && both.describe().contains("bm25 #2"));
        assert!(one.describe().contains("bm25 -"));
    }
}
