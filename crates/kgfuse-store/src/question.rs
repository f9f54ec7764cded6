//! A question as one request sees it: its text, and its embedding computed the
//! first time a search needs it, then kept. Every stage of a request that searches
//! by the question (the vector hits, the walk's seeds, the package choice, the
//! ontology slice) takes the same `Question`, so the question is embedded once per
//! request, however many stages search.

use std::sync::OnceLock;

/// A question's text with its embedding, computed on first use by
/// [`crate::Store::vector_of`] and kept for the question's lifetime.
#[derive(Debug, Default)]
pub struct Question {
    text: String,
    vector: OnceLock<Vec<f32>>,
}

impl Question {
    /// A question not embedded yet.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            vector: OnceLock::new(),
        }
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
    use crate::Store;
    use kgfuse_core::config::StoreConfig;

    #[tokio::test]
    async fn a_question_is_embedded_once_however_many_searches_use_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(
            &dir.path().join("store"),
            StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 32),
        )
        .await
        .expect("init");
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
}
