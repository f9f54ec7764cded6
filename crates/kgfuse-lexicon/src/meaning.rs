//! Class words linked by meaning: a question says "physicians" where the store's
//! class is named "doctor". Names are matched by their words first
//! ([`crate::linking`]); a question word that no name claims is compared, through
//! the store's embedder, with the name of every class, and links to the closest
//! class when it is close enough and clearly closer than the next.
//!
//! Only a semantic embedder knows that two different words mean alike: with the
//! hash embedder (feature hashing of the words themselves) nothing links here.
//! The classes compared are the store's own, not kgfuse's kinds of code and
//! documents.

use crate::RetrieveError;
use crate::lexicon::analyze::words;
use crate::lexicon::{Entry, Lexicon, Role};
use crate::linking::{Candidate, Linked};
use kgfuse_core::iri::local_name;
use kgfuse_core::math::dot;
use kgfuse_core::text::{identifier_words, is_matching_stop_word};
use kgfuse_core::vocab::KGFUSE;
use kgfuse_store::{Store, StoreError, WholeStore};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Least cosine between a question word and a class name for the word to name
/// the class. All-MiniLM-L6-v2 puts a word and its synonym or plural at 0.62-0.87
/// ("people" / person 0.62, "physicians" / doctor 0.83), words merely of one
/// domain at 0.16-0.54 ("money" / salary 0.41, "physicians" / clinic 0.48).
pub const MIN_COSINE: f32 = 0.6;
/// How much closer the best class must be than the second best.
const MARGIN: f32 = 0.05;
/// The score a class linked by meaning gets: below a name said in part.
pub const MEANING_SCORE: f32 = 0.4;
/// A store with more classes than this is not compared word by word (its
/// classes are code kinds or a taxonomy, not the words of its questions).
const MAX_CLASSES: usize = 2_000;
/// Shortest question word compared.
const MIN_WORD_CHARS: usize = 3;

/// The store's class names and their embeddings, built once per write.
pub struct ClassVectors {
    classes: Vec<(Arc<Entry>, Vec<f32>)>,
}

impl WholeStore for ClassVectors {}

impl ClassVectors {
    /// The class vectors of the store (empty with the hash embedder or too many
    /// classes).
    pub fn of(store: &Store, lexicon: &Lexicon) -> Result<Arc<Self>, RetrieveError> {
        store.derived(|| Self::build(store, lexicon))
    }

    fn build(store: &Store, lexicon: &Lexicon) -> Result<Self, RetrieveError> {
        // kgfuse's own kinds (function, module, case...) are named by their names
        // only: a code question's "arguments" or "examples" is not about them.
        let classes: Vec<Arc<Entry>> = lexicon
            .entries_of(Role::Class)?
            .into_iter()
            .filter(|c| !c.iri.starts_with(KGFUSE))
            .collect();
        if !knows_meaning(store) || classes.is_empty() || classes.len() > MAX_CLASSES {
            return Ok(Self {
                classes: Vec::new(),
            });
        }
        let texts: Vec<String> = classes
            .iter()
            .map(|c| class_text(&c.name, &c.iri))
            .collect();
        let vectors = store.embedder().embed(&texts).map_err(StoreError::from)?;
        Ok(Self {
            classes: classes.into_iter().zip(vectors).collect(),
        })
    }
}

/// Whether the store's embedder places words by meaning.
fn knows_meaning(store: &Store) -> bool {
    store.embedder().kind() != "hash"
}

/// A class's name as words: "GraduateStudent" -> "graduate student".
fn class_text(name: &str, iri: &str) -> String {
    let name = if name.is_empty() {
        local_name(iri)
    } else {
        name
    };
    identifier_words(name).join(" ")
}

/// The classes the question's unclaimed words name by meaning, one per word at
/// most and none the question names already, scored [`MEANING_SCORE`].
pub fn classes_by_meaning(
    store: &Store,
    lexicon: &Lexicon,
    question: &str,
    linked: &Linked,
    is_asked: impl Fn(usize) -> bool,
) -> Result<Vec<Candidate>, RetrieveError> {
    let vectors = ClassVectors::of(store, lexicon)?;
    if vectors.classes.is_empty() {
        return Ok(Vec::new());
    }
    let claimed = claimed_words(linked);
    let open: Vec<(usize, String)> = words(question)
        .enumerate()
        .filter(|(i, _)| !claimed.contains(i))
        .map(|(i, w)| (i, w.to_lowercase()))
        .filter(|(_, w)| {
            w.chars().count() >= MIN_WORD_CHARS
                && w.chars().all(char::is_alphabetic)
                && !is_matching_stop_word(w)
        })
        .collect();
    if open.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<String> = open.iter().map(|(_, w)| w.clone()).collect();
    let embedded = store.embedder().embed(&texts).map_err(StoreError::from)?;
    let named: BTreeSet<&str> = linked.classes.iter().map(|c| c.iri.as_str()).collect();
    let mut out = Vec::new();
    for ((word, _), vector) in open.iter().zip(&embedded) {
        if let Some(entry) = closest(&vectors.classes, vector) {
            // A class the question names already is not named again by another
            // word ("dog pets": the dog is a kind of pet, not a second pet).
            if named.contains(entry.iri.as_str()) {
                continue;
            }
            out.push(Candidate {
                iri: entry.iri.clone(),
                name: entry.name.clone(),
                score: MEANING_SCORE,
                name_coverage: 0.0,
                kinds: entry.kinds.clone(),
                words: vec![*word],
                by_head: true,
                asked: is_asked(*word),
            });
        }
    }
    Ok(out)
}

/// The question words some mention, class or property already holds.
fn claimed_words(linked: &Linked) -> BTreeSet<usize> {
    linked
        .mentions
        .iter()
        .flat_map(|m| m.words.iter().copied())
        .chain(linked.classes.iter().flat_map(|c| c.words.iter().copied()))
        .chain(
            linked
                .properties
                .iter()
                .flat_map(|c| c.words.iter().copied()),
        )
        .collect()
}

/// The class closest to `word`, when at least [`MIN_COSINE`] and [`MARGIN`]
/// closer than the next.
fn closest<T: Clone>(classes: &[(T, Vec<f32>)], word: &[f32]) -> Option<T> {
    let mut best: Option<(&T, f32)> = None;
    let mut second = f32::MIN;
    for (entry, vector) in classes {
        let cosine = dot(word, vector);
        match best {
            Some((_, top)) if cosine <= top => second = second.max(cosine),
            _ => {
                if let Some((_, top)) = best {
                    second = second.max(top);
                }
                best = Some((entry, cosine));
            }
        }
    }
    best.filter(|&(_, top)| top >= MIN_COSINE && top - second >= MARGIN)
        .map(|(entry, _)| entry.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_class_links_only_when_close_and_clearly_closest() {
        let classes = vec![(0, vec![1.0, 0.0]), (1, vec![0.0, 1.0])];
        assert_eq!(closest(&classes, &[0.9, 0.436]), Some(0));
        // Close, but as close to both.
        assert_eq!(closest(&classes, &[0.707, 0.707]), None);
        // Clearly closest, but not close.
        assert_eq!(closest(&classes, &[0.5, -0.866]), None);
    }

    #[test]
    fn class_names_become_words() {
        assert_eq!(class_text("GraduateStudent", "urn:x"), "graduate student");
        assert_eq!(
            class_text("", "http://example.org/ont#Car_Maker"),
            "car maker"
        );
    }
}
