//! `bm25`: the plain lexical baseline. BM25 over every named node's labels
//! (identifiers split into words) and its comment, docstring or definition, from
//! the [lexicon](kgfuse_lexicon::lexicon): no vectors, no graph walk, no fusion. Every
//! evaluation table carries it beside the strategies, so a strategy that does not
//! beat it shows.

use crate::RetrieveError;
use kgfuse_core::context::{FusedContext, SourceRef, TextHit, TraceStage};
use kgfuse_lexicon::lexicon::Lexicon;
use kgfuse_store::{Question, Store};

/// The `top_k` best BM25 matches the question does not hold out.
pub(crate) fn retrieve(
    store: &Store,
    question: &Question,
    top_k: usize,
) -> Result<FusedContext, RetrieveError> {
    let lexicon = Lexicon::of(store)?;
    let held_out = question.held_out();
    let hits = lexicon.bm25(question.text(), top_k, &|e| !held_out.contains(&e.iri))?;
    let mut context = FusedContext::default();
    let mut kept = Vec::with_capacity(hits.len());
    for hit in hits {
        let entry = &hit.entry;
        kept.push(format!("{} (bm25 {:.3})", entry.iri, hit.score));
        context.unstructured.push(TextHit {
            iri: entry.iri.clone(),
            text: entry.text.clone(),
            score: hit.score,
            source: SourceRef {
                id: entry.iri.clone(),
                ..SourceRef::default()
            },
        });
    }
    context.trace.push(TraceStage {
        stage: "bm25".into(),
        kept,
        dropped: Vec::new(),
    });
    Ok(context)
}
