//! Words of code and prose, defined once: identifier words, English singulars,
//! stop words, sentences, and model replies without their code fences.
//!
//! The search index builds on these with rules of its own (stemming, joined
//! identifiers: `kgfuse_lexicon::lexicon::analyze`); what is here is what several
//! crates must agree on.

use std::ops::Range;

/// Lowercased words of a text: split at every character that is not a letter or
/// digit (`_`, `-`, spaces) and where a lowercase letter or digit meets an
/// uppercase one (`decodeSignal` -> `decode`, `signal`; `HTTPServer` stays one
/// word).
///
/// The hash embedder's features are these words, so stored vectors depend on
/// this function byte for byte: change it only with a new embedder kind.
///
/// ```
/// use kgfuse_core::text::identifier_words;
/// assert_eq!(identifier_words("fee_of decodeSignal"), ["fee", "of", "decode", "signal"]);
/// assert_eq!(identifier_words("utf8Decode"), ["utf8", "decode"]);
/// ```
pub fn identifier_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The singular of a lowercase English word, by suffix only: `merchants` ->
/// `merchant`, `categories` -> `category`; `status`, `class`, `analysis`, `bus`
/// stay. Ingestion names semantic tags with it and retrieval folds questions with
/// it, so both sides must use this one function.
///
/// ```
/// use kgfuse_core::text::singular;
/// assert_eq!(singular("categories"), "category");
/// assert_eq!(singular("status"), "status");
/// ```
pub fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies")
        && stem.len() >= 2
    {
        return format!("{stem}y");
    }
    if word.len() > 3
        && word.ends_with('s')
        && !["ss", "us", "is", "os"].iter().any(|e| word.ends_with(e))
    {
        return word[..word.len() - 1].to_owned();
    }
    word.to_owned()
}

/// A model's reply without its code fence: the body of the first complete
/// fenced block (the line of three backticks and a language tag dropped); for a
/// reply that opens a fence and never closes it or keeps it on one line, what
/// follows the opening; else the reply as it is. Not trimmed.
///
/// ```
/// use kgfuse_core::text::strip_fences;
/// assert_eq!(strip_fences("Here:\n```sparql\nASK {}\n```").trim(), "ASK {}");
/// assert_eq!(strip_fences("```ASK {}```").trim(), "ASK {}");
/// assert_eq!(strip_fences("```json\n{\"a\": 1}").trim(), "{\"a\": 1}");
/// assert_eq!(strip_fences("ASK {}"), "ASK {}");
/// ```
pub fn strip_fences(reply: &str) -> &str {
    if let Some(body) = fenced_block(reply, None) {
        return body;
    }
    let Some(rest) = reply.trim().strip_prefix("```") else {
        return reply;
    };
    let rest = rest.strip_suffix("```").unwrap_or(rest);
    match rest.split_once('\n') {
        Some((tag, body)) if tag.trim().chars().all(|c| c.is_alphanumeric() || c == '-') => body,
        _ => rest,
    }
}

/// The body of the first complete fenced block; with `language`, of the first
/// block whose tag is that language (case-insensitive). `None` when there is
/// no such block.
///
/// ```
/// use kgfuse_core::text::fenced_block;
/// let reply = "```text\nnote\n```\n```python\nprint(1)\n```";
/// assert_eq!(fenced_block(reply, Some("python")), Some("print(1)\n"));
/// assert_eq!(fenced_block("no fence", None), None);
/// ```
pub fn fenced_block<'a>(text: &'a str, language: Option<&str>) -> Option<&'a str> {
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after_ticks = &rest[open + 3..];
        let line_end = after_ticks.find('\n')?;
        let tag = after_ticks[..line_end].trim();
        let body = &after_ticks[line_end + 1..];
        let close = body.find("```")?;
        if language.is_none_or(|wanted| tag.eq_ignore_ascii_case(wanted)) {
            return Some(&body[..close]);
        }
        rest = &body[close + 3..];
    }
    None
}

/// Words that carry no meaning on their own: articles, pronouns, auxiliaries,
/// prepositions, question words and request phrasing ("please", "show"). Both
/// stop-word sets below start from these. Sorted, for binary search.
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can",
    "could", "did", "do", "does", "each", "for", "from", "give", "had", "has", "have", "how", "i",
    "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "show",
    "some", "tell", "that", "the", "their", "there", "these", "they", "this", "those", "to", "was",
    "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would",
    "you", "your",
];

/// What matching a question's words to the store's names drops beyond the
/// function words: more pronouns, "list", and the `s` of a split `'s`. Kept short
/// on purpose: "get", "set", "use", "function" are words of code and stay.
const MATCHING_EXTRA: &[&str] = &["her", "his", "list", "s", "them", "whose"];

/// Personal titles, dropped from matching so that "Dr. Keller" matches "Anna Keller".
const TITLES: &[&str] = &["dame", "dr", "miss", "mr", "mrs", "ms", "mx", "sir"];

/// What weighing a text's topic drops beyond the function words (the offline
/// model's relevance and answer choice): modal verbs, adverbs, verbs of asking
/// ("find", "write", "use") and vague nouns ("time", "way"). Sorted.
const TOPIC_EXTRA: &[&str] = &[
    "again", "down", "every", "find", "function", "get", "got", "he", "here", "just", "many",
    "may", "might", "much", "must", "no", "not", "only", "out", "over", "shall", "she", "should",
    "so", "than", "then", "time", "too", "under", "up", "us", "use", "using", "very", "way",
    "write", "yes",
];

/// Whether a lowercased word is dropped when a question's words are matched to
/// names (the lexicon, linking, BM25).
pub fn is_matching_stop_word(word: &str) -> bool {
    FUNCTION_WORDS.binary_search(&word).is_ok()
        || MATCHING_EXTRA.binary_search(&word).is_ok()
        || TITLES.binary_search(&word).is_ok()
}

/// Whether a lowercased word carries no topic (the offline model's relevance,
/// entity and answer choices).
pub fn is_topic_stop_word(word: &str) -> bool {
    FUNCTION_WORDS.binary_search(&word).is_ok() || TOPIC_EXTRA.binary_search(&word).is_ok()
}

/// Where [`sentence_ranges`] cuts a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentenceBreaks {
    /// After `.`, `!` or `?` (or their full-width forms) followed by white space:
    /// the sentences of prose, which chunking keeps whole.
    Prose,
    /// Also after `;`, and at every line break: the short clauses an extractive
    /// answer quotes and checks one by one.
    Clauses,
}

/// The sentences of `text[range]`, as ranges of `text` without surrounding white
/// space; blank pieces are skipped. A decimal point or an abbreviation without a
/// following space does not cut.
///
/// ```
/// use kgfuse_core::text::{SentenceBreaks, sentence_ranges};
/// let text = "Fees are 2.5 %. Refunds take a day; ask first.\nDone";
/// let cut = |breaks| -> Vec<&str> {
///     sentence_ranges(text, 0..text.len(), breaks).into_iter().map(|r| &text[r]).collect()
/// };
/// assert_eq!(cut(SentenceBreaks::Prose), ["Fees are 2.5 %.", "Refunds take a day; ask first.", "Done"]);
/// assert_eq!(cut(SentenceBreaks::Clauses), ["Fees are 2.5 %.", "Refunds take a day;", "ask first.", "Done"]);
/// ```
pub fn sentence_ranges(
    text: &str,
    range: Range<usize>,
    breaks: SentenceBreaks,
) -> Vec<Range<usize>> {
    let mut parts = Vec::new();
    let mut start = range.start;
    let mut chars = text[range.clone()].char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        let at = range.start + offset;
        let next = chars.peek().map(|&(_, next)| next);
        // (end of this sentence, start of the next)
        let cut = match breaks {
            SentenceBreaks::Prose => (matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
                && next.is_some_and(char::is_whitespace))
            .then(|| (at + c.len_utf8(), at + c.len_utf8())),
            SentenceBreaks::Clauses if c == '\n' => Some((at, at + 1)),
            SentenceBreaks::Clauses => (matches!(c, '.' | '?' | '!' | ';')
                && next.is_none_or(|next| next.is_ascii_whitespace()))
            .then_some((at + 1, at + 1)),
        };
        if let Some((end, next_start)) = cut {
            parts.extend(trimmed(text, start..end));
            start = next_start;
        }
    }
    parts.extend(trimmed(text, start..range.end));
    parts
}

/// `range` without the white space at either end; `None` when nothing is left.
pub fn trimmed(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let slice = &text[range.clone()];
    let start = range.start + (slice.len() - slice.trim_start().len());
    let end = range.end - (slice.len() - slice.trim_end().len());
    (start < end).then_some(start..end)
}

/// The first paragraph of a docstring, its whitespace collapsed, cut at a word
/// boundary to at most `max` characters.
pub fn first_paragraph(text: &str, max: usize) -> String {
    let paragraph = text.split("\n\n").next().unwrap_or(text);
    let joined = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut out = String::new();
    for word in joined.split(' ') {
        if out.chars().count() + word.chars().count() + 1 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_word_lists_are_sorted_and_apart() {
        for list in [FUNCTION_WORDS, MATCHING_EXTRA, TITLES, TOPIC_EXTRA] {
            let mut sorted = list.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted, list);
        }
        for extra in [MATCHING_EXTRA, TOPIC_EXTRA] {
            assert!(
                extra.iter().all(|w| !FUNCTION_WORDS.contains(w)),
                "{extra:?}"
            );
        }
        assert!(is_matching_stop_word("dr") && !is_topic_stop_word("dr"));
        assert!(is_topic_stop_word("function") && !is_matching_stop_word("function"));
        assert!(is_matching_stop_word("the") && is_topic_stop_word("the"));
    }

    #[test]
    fn fences_and_language_tags_are_removed() {
        assert_eq!(strip_fences("```sparql\nASK {}\n```").trim(), "ASK {}");
        assert_eq!(strip_fences("```\nASK {}\n```\n").trim(), "ASK {}");
        assert_eq!(strip_fences("  ASK {} ").trim(), "ASK {}");
    }
}
