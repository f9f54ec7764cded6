//! Words of code and prose, defined once: identifier words, English singulars
//! and model replies without their code fences.
//!
//! The search index has finer rules of its own (stemming, stop words, joined
//! identifiers: `kgfuse_lexicon::lexicon::analyze`); what is here is what several
//! crates must agree on.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_language_tags_are_removed() {
        assert_eq!(strip_fences("```sparql\nASK {}\n```").trim(), "ASK {}");
        assert_eq!(strip_fences("```\nASK {}\n```\n").trim(), "ASK {}");
        assert_eq!(strip_fences("  ASK {} ").trim(), "ASK {}");
    }
}
