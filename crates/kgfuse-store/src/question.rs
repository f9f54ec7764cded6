//! A question as one request sees it: its text, and its embedding computed the
//! first time a search needs it, then kept. Every stage of a request that searches
//! by the question (the vector hits, the walk's seeds, the package choice, the
//! ontology slice) takes the same `Question`, so the question is embedded once per
//! request, however many stages search.

use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A question's text with its embedding, computed on first use by
/// [`crate::Store::vector_of`] and kept for the question's lifetime.
#[derive(Debug, Default)]
pub struct Question {
    text: String,
    vector: OnceLock<Vec<f32>>,
    held_out: BTreeSet<String>,
}

impl Question {
    /// A question not embedded yet.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            vector: OnceLock::new(),
            held_out: BTreeSet::new(),
        }
    }

    /// The same question with `nodes` held out: no search made for it returns
    /// them ([`crate::Store::search`] still returns `k` rows when it can), so
    /// a held-out node neither fills a slot nor seeds a later stage.
    #[must_use]
    pub fn holding_out(&self, nodes: &BTreeSet<String>) -> Self {
        Self {
            text: self.text.clone(),
            vector: self.vector.clone(),
            held_out: nodes.clone(),
        }
    }

    /// The nodes held out of every search for this question.
    pub fn held_out(&self) -> &BTreeSet<String> {
        &self.held_out
    }

    /// The question's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The embedding, when a search has computed it.
    pub fn vector_if_embedded(&self) -> Option<&[f32]> {
        self.vector.get().map(Vec::as_slice)
    }

    /// Keeps `vector` as the embedding unless one is kept already; returns the
    /// kept one.
    pub(crate) fn keep(&self, vector: Vec<f32>) -> &[f32] {
        self.vector.get_or_init(|| vector)
    }
}

impl From<&str> for Question {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::hash_store;

    #[tokio::test]
    async fn a_question_is_embedded_once_however_many_searches_use_it() {
        let (_dir, store) = hash_store().await;
        let question = Question::new("what does the store carry?");
        assert!(question.vector_if_embedded().is_none());
        let first = store
            .search(&question, 3, kgfuse_vector::KindFilter::Any)
            .await
            .expect("search");
        assert_eq!(store.time_spent().embeddings, 1);
        let again = store
            .search(&question, 3, kgfuse_vector::KindFilter::Any)
            .await
            .expect("search");
        let among = store
            .search_among(&question, &[first[0].iri.clone()])
            .await
            .expect("search among");
        assert_eq!(store.time_spent().embeddings, 1, "embedded again");
        assert_eq!(
            first.iter().map(|h| &h.iri).collect::<Vec<_>>(),
            again.iter().map(|h| &h.iri).collect::<Vec<_>>()
        );
        assert_eq!(among[0].iri, first[0].iri);
        assert_eq!(
            question.vector_if_embedded(),
            Some(store.embed(question.text()).expect("embed").as_slice())
        );
    }

    /// A held-out node is in no search's answer, and the next row takes its slot.
    #[tokio::test]
    async fn a_held_out_node_takes_no_slot() {
        let (_dir, store) = hash_store().await;
        let question = Question::new("what does the store carry?");
        let iris = |hits: &[crate::VectorHit]| -> Vec<String> {
            hits.iter().map(|h| h.iri.clone()).collect()
        };
        let all = iris(
            &store
                .search(&question, 5, kgfuse_vector::KindFilter::Any)
                .await
                .expect("search"),
        );
        assert_eq!(all.len(), 5, "the ontology's rows");
        let holding = question.holding_out(&BTreeSet::from([all[0].clone()]));
        let hits = iris(
            &store
                .search(&holding, 4, kgfuse_vector::KindFilter::Any)
                .await
                .expect("search"),
        );
        assert_eq!(hits, all[1..5]);
        let among = iris(
            &store
                .search_among(&holding, &all[..2])
                .await
                .expect("search among"),
        );
        assert_eq!(among, all[1..2]);
        assert_eq!(store.time_spent().embeddings, 1, "the vector is kept");
    }
}
