//! A deterministic stand-in for a language model.

use crate::{LanguageModel, LlmError, Relevance};
use std::collections::BTreeSet;

/// Words that carry no topic.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "from", "with", "by", "at", "is",
    "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "i", "you",
    "we", "they", "he", "she", "my", "your", "our", "their", "me", "us", "do", "does", "did",
    "can", "could", "should", "would", "will", "shall", "may", "might", "must", "what", "which",
    "who", "whom", "how", "why", "when", "where", "there", "here", "as", "if", "then", "than",
    "so", "not", "no", "yes", "any", "all", "some", "each", "every", "about", "into", "out", "up",
    "down", "over", "under", "again", "also", "just", "only", "very", "too", "have", "has", "had",
    "get", "got", "write", "function", "please", "give", "tell", "show", "find", "use", "using",
    "time", "way",
];

/// Deterministic heuristics in place of a language model (offline, air-gapped, tests).
#[derive(Debug, Clone)]
pub struct RuleBased {
    /// Smallest fraction of the question's content words an item must share to be
    /// judged relevant.
    pub relevance_overlap: f32,
}

impl Default for RuleBased {
    fn default() -> Self {
        Self {
            relevance_overlap: 0.15,
        }
    }
}

/// Lowercase content words of a text, crudely stemmed (`merchants` -> `merchant`),
/// with identifiers split (`decode_signal` -> `decode`, `signal`).
pub fn content_words(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        // Split camelCase inside a token.
        let mut word = String::new();
        let mut previous_lower = false;
        let mut parts = Vec::new();
        for ch in raw.chars() {
            if ch.is_uppercase() && previous_lower && !word.is_empty() {
                parts.push(std::mem::take(&mut word));
            }
            previous_lower = ch.is_lowercase();
            word.extend(ch.to_lowercase());
        }
        if !word.is_empty() {
            parts.push(word);
        }
        for part in parts {
            if part.len() < 2 || STOPWORDS.contains(&part.as_str()) {
                continue;
            }
            let stem = if part.len() > 3
                && part.ends_with('s')
                && !["ss", "us", "is"].iter().any(|e| part.ends_with(e))
            {
                part[..part.len() - 1].to_owned()
            } else {
                part
            };
            out.insert(stem);
        }
    }
    out
}

/// Share of `question`'s content words that `item` contains.
fn overlap(question: &BTreeSet<String>, item: &BTreeSet<String>) -> f32 {
    if question.is_empty() {
        return 0.0;
    }
    let shared = question.intersection(item).count();
    #[allow(clippy::cast_precision_loss)]
    let ratio = shared as f32 / question.len() as f32;
    ratio
}

impl LanguageModel for RuleBased {
    fn name(&self) -> &str {
        "rule-based"
    }

    fn is_offline(&self) -> bool {
        true
    }

    /// The label sharing the most content words with the text (ties: first label);
    /// `None` when no label shares any.
    fn classify(&self, text: &str, labels: &[&str]) -> Result<Option<usize>, LlmError> {
        let words = content_words(text);
        let mut best: Option<(usize, usize)> = None;
        for (i, label) in labels.iter().enumerate() {
            let shared = words.intersection(&content_words(label)).count();
            if shared > 0 && best.is_none_or(|(_, b)| shared > b) {
                best = Some((i, shared));
            }
        }
        Ok(best.map(|(i, _)| i))
    }

    /// Backticked or quoted spans, identifiers (`snake_case`, `CamelCase`, dotted
    /// paths) and runs of capitalised words not at the start of the sentence.
    fn extract_entities(&self, text: &str) -> Result<Vec<String>, LlmError> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: &str| {
            let s = s.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if s.chars().count() >= 2 && !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        };
        for quote in ['`', '"', '\''] {
            let mut parts = text.split(quote);
            parts.next();
            while let (Some(inside), Some(_)) = (parts.next(), parts.next().or(Some(""))) {
                if !inside.is_empty() && inside.len() <= 80 {
                    push(inside);
                }
            }
        }
        let mut run: Vec<&str> = Vec::new();
        let mut sentence_start = true;
        for token in text.split_whitespace() {
            let word = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '.');
            let word = word.trim_end_matches('.');
            let is_identifier = word.contains('_')
                || (word.chars().skip(1).any(char::is_uppercase)
                    && word.chars().any(char::is_lowercase))
                || (word.contains('.') && word.split('.').all(|p| !p.is_empty()));
            if is_identifier {
                push(word);
            }
            let capitalised = word.chars().next().is_some_and(char::is_uppercase)
                && !STOPWORDS.contains(&word.to_lowercase().as_str());
            if capitalised && !sentence_start {
                run.push(word);
            } else {
                if !run.is_empty() {
                    push(&run.join(" "));
                    run.clear();
                }
                if capitalised && sentence_start && word.chars().skip(1).any(char::is_uppercase) {
                    push(word);
                }
            }
            sentence_start = token.ends_with(['.', '?', '!', ':']);
        }
        if !run.is_empty() {
            push(&run.join(" "));
        }
        Ok(out)
    }

    /// Relevant when the item shares at least `relevance_overlap` of the question's
    /// content words.
    fn judge_relevance(&self, question: &str, item: &str) -> Result<Relevance, LlmError> {
        let q = content_words(question);
        let share = overlap(&q, &content_words(item));
        Ok(Relevance {
            relevant: share >= self.relevance_overlap,
            why: format!(
                "shares {:.0}% of the question's content words (threshold {:.0}%)",
                share * 100.0,
                self.relevance_overlap * 100.0
            ),
        })
    }

    fn complete(&self, _system: &str, _prompt: &str) -> Result<String, LlmError> {
        Err(LlmError::Unsupported {
            model: self.name().to_owned(),
            task: "write free text; configure an OpenAI-compatible model".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_words_split_identifiers_and_drop_stopwords() {
        let words = content_words("How do I decode_signal for EngineSpeed frames?");
        let expected: BTreeSet<String> = ["decode", "signal", "engine", "speed", "frame"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(words, expected);
    }

    #[test]
    fn entities_come_from_quotes_identifiers_and_capitalised_runs() {
        let model = RuleBased::default();
        let entities = model
            .extract_entities(
                "Explain the ingestion pipeline and its connection to the KnowledgeGraphUpdateAgent. \
                 What does \"Employee Handbook 2025\" say about json.dumps and the Human Resources team?",
            )
            .expect("entities");
        for expected in [
            "KnowledgeGraphUpdateAgent",
            "Employee Handbook 2025",
            "json.dumps",
            "Human Resources",
        ] {
            assert!(
                entities.iter().any(|e| e == expected),
                "{expected} not in {entities:?}"
            );
        }
        assert!(
            !entities.iter().any(|e| e == "Explain" || e == "What"),
            "{entities:?}"
        );
    }

    #[test]
    fn relevance_and_classification_use_word_overlap() {
        let model = RuleBased::default();
        let question = "Write a function to activate high-beam headlights on bus 1";
        assert!(
            model
                .judge_relevance(
                    question,
                    "set_headlight_mode: switch headlights between low and high beam"
                )
                .expect("judge")
                .relevant
        );
        let unrelated = model
            .judge_relevance(question, "lock_doors: lock every door of the vehicle")
            .expect("judge");
        assert!(!unrelated.relevant, "{}", unrelated.why);
        assert_eq!(
            model
                .classify(
                    "the fee for a card transaction",
                    &["lighting", "payment fees"]
                )
                .expect("classify"),
            Some(1)
        );
        assert_eq!(
            model.classify("zzz", &["lighting"]).expect("classify"),
            None
        );
        assert!(model.complete("", "hi").is_err());
    }
}
