//! Text into search terms, the same way for labels, documents and questions.
//!
//! A text is cut into words (runs of letters, digits and `_`); a word that is an
//! identifier is split into its parts (`get_content_type` -> get, content, type;
//! `GraduateStudent12` -> graduate, student, 12) and also kept whole, lowercased
//! (`getcontenttype`), so that both "content type" and the exact identifier match.
//! Parts are lowercased, stop words and personal titles dropped, and the rest
//! reduced to their Snowball English stem (`frostem`, the stemmer LanceDB's own
//! full-text index uses): "vendors" and "vendor" become one term.

use frostem::{Algorithm, Stemmer};
use kgfuse_core::text::is_matching_stop_word;
use std::sync::LazyLock;

/// One search term of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The stemmed part, or the whole identifier lowercased.
    pub text: String,
    /// Index of the word it came from (words that are only stop words count too).
    pub word: usize,
    /// Whether this is a whole multi-part identifier rather than one part.
    pub whole: bool,
    /// How many words it spans (more than one for words joined into an
    /// identifier: "department 0" -> `department0`).
    pub span: usize,
}

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::new(Algorithm::English));

/// The words of a text: runs of alphanumeric characters and `_`.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The parts of one word: split at `_`, at a lower-to-upper change (`contentType`),
/// before the last capital of a capital run followed by lowercase (`HTTPServer` ->
/// HTTP, Server) and between letters and digits (`Course12` -> Course, 12).
pub fn identifier_parts(word: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, current) = chars[i];
            let previous = chars[i - 1].1;
            let next_is_lower = chars.get(i + 1).is_some_and(|(_, c)| c.is_lowercase());
            let boundary = (previous.is_lowercase() && current.is_uppercase())
                || (previous.is_uppercase() && current.is_uppercase() && next_is_lower)
                || (previous.is_alphabetic() && current.is_numeric())
                || (previous.is_numeric() && current.is_alphabetic());
            if boundary {
                parts.push(&piece[start..at]);
                start = at;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

/// The stem of a lowercased part.
pub fn stem(part: &str) -> String {
    STEMMER.stem(part).into_owned()
}

/// The search terms of `text`, in order.
pub fn analyze(text: &str) -> Vec<Term> {
    let mut out = Vec::new();
    for (word_index, word) in words(text).enumerate() {
        let parts = identifier_parts(word);
        for part in &parts {
            let lower = part.to_lowercase();
            if is_matching_stop_word(&lower) {
                continue;
            }
            out.push(Term {
                text: stem(&lower),
                word: word_index,
                whole: false,
                span: 1,
            });
        }
        if parts.len() > 1 {
            out.push(Term {
                text: word.replace('_', "").to_lowercase(),
                word: word_index,
                whole: true,
                span: 1,
            });
        }
    }
    out
}

/// Longest run of words joined into one identifier.
const MAX_JOINED: usize = 4;

/// The terms of a question: [`analyze`], plus runs of 2 to 4 adjacent words
/// (no stop word inside) joined as whole identifiers, because people write
/// identifiers as words: "full professor 2" may mean `FullProfessor2`, "content
/// type" `ContentType`.
pub fn analyze_question(text: &str) -> Vec<Term> {
    let mut out = analyze(text);
    let all: Vec<&str> = words(text).collect();
    for start in 0..all.len() {
        let mut joined = String::new();
        for (offset, word) in all[start..].iter().take(MAX_JOINED).enumerate() {
            let lower = word.replace('_', "").to_lowercase();
            if is_matching_stop_word(&lower) {
                break;
            }
            joined.push_str(&lower);
            if offset > 0 {
                out.push(Term {
                    text: joined.clone(),
                    word: start,
                    whole: true,
                    span: offset + 1,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        analyze(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_split_into_stemmed_parts_and_stay_whole() {
        assert_eq!(
            texts("get_content_type"),
            ["get", "content", "type", "getcontenttype"]
        );
        assert_eq!(
            texts("GraduateStudent12"),
            ["graduat", "student", "12", "graduatestudent12"]
        );
        assert_eq!(
            identifier_parts("HTTPServerError"),
            ["HTTP", "Server", "Error"]
        );
        assert_eq!(identifier_parts("worksFor"), ["works", "For"]);
        // "for" is a stop word; the whole identifier stays.
        assert_eq!(texts("worksFor"), ["work", "worksfor"]);
    }

    #[test]
    fn questions_also_join_adjacent_words_into_identifiers() {
        let joined: Vec<(String, usize, usize)> =
            analyze_question("full professor 2 of department 0")
                .into_iter()
                .filter(|t| t.whole)
                .map(|t| (t.text, t.word, t.span))
                .collect();
        assert!(
            joined.contains(&("fullprofessor2".to_owned(), 0, 3)),
            "{joined:?}"
        );
        assert!(
            joined.contains(&("department0".to_owned(), 4, 2)),
            "{joined:?}"
        );
        // Nothing is joined across the stop word "of" (word 3).
        assert!(
            !joined
                .iter()
                .any(|(_, word, span)| (*word..word + span).contains(&3)),
            "{joined:?}"
        );
    }

    #[test]
    fn plurals_titles_and_question_words_fold_away() {
        assert_eq!(texts("Which vendors?"), texts("vendor"));
        assert_eq!(texts("Dr. Keller"), ["keller"]);
        assert_eq!(texts("the Departments of Sales"), ["depart", "sale"]);
        let question = analyze("Who is Anna from Sales");
        assert_eq!(question.len(), 2);
        assert_eq!((question[0].word, question[1].word), (2, 4));
    }
}
