//! Reading the model's replies: find the JSON object in them (models wrap it in
//! code fences or prose) and check it has the shape each task expects.
//!
//! Every parser returns `Err(problem)` with a short description of what is wrong;
//! the client quotes it in its one corrective re-ask.

use crate::{Claim, Draft, Relevance};
use kgfuse_core::text::{fenced_block, strip_fences};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The JSON object in a reply: the whole reply, the inside of its code fence, or
/// the first balanced `{...}` span in surrounding prose that parses as an object.
pub(crate) fn json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    for candidate in [text, strip_fences(text)] {
        if let Ok(Value::Object(object)) = serde_json::from_str(candidate.trim()) {
            return Some(object);
        }
    }
    embedded_object(text)
}

/// The JSON object a reply holds (bare, fenced or among prose), as compact text.
pub(crate) fn json_text(reply: &str) -> Result<String, String> {
    json_object(reply)
        .map(|object| Value::Object(object).to_string())
        .ok_or_else(|| "no JSON object".to_owned())
}

/// The first `{...}` span of `text` that parses as a JSON object. A balanced span
/// that does not parse is skipped whole, so objects nested in it are not mistaken
/// for the reply.
fn embedded_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let mut from = 0;
    while let Some(found) = text[from..].find('{') {
        let start = from + found;
        match matching_brace(&text[start..]) {
            Some(length) => {
                let span = &text[start..start + length];
                if let Ok(Value::Object(object)) = serde_json::from_str(span) {
                    return Some(object);
                }
                from = start + length;
            }
            None => from = start + 1,
        }
    }
    None
}

/// The length of the balanced `{...}` span `text` starts with, skipping braces
/// inside JSON strings.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The reply's JSON object read as `T`.
fn parse_object<T: DeserializeOwned>(reply: &str) -> Result<T, String> {
    let object = json_object(reply).ok_or("no JSON object found")?;
    serde_json::from_value(Value::Object(object)).map_err(|e| format!("wrong shape: {e}"))
}

/// `{"label": <index or null>}`, the index below `labels`. The field must be
/// present: a missing label is a malformed reply, not "no label".
pub(crate) fn label(reply: &str, labels: usize) -> Result<Option<usize>, String> {
    let object = json_object(reply).ok_or("no JSON object found")?;
    let value = object.get("label").ok_or("no \"label\" field")?;
    if value.is_null() {
        return Ok(None);
    }
    value
        .as_u64()
        .and_then(|index| usize::try_from(index).ok())
        .filter(|&index| index < labels)
        .map(Some)
        .ok_or_else(|| {
            format!(
                "\"label\" is {value}, not null or one of the numbers 0 to {}",
                labels.saturating_sub(1)
            )
        })
}

#[derive(Deserialize)]
struct EntitiesReply {
    entities: Vec<String>,
}

/// `{"entities": [...]}`, trimmed, without empty entries or duplicates.
pub(crate) fn entities(reply: &str) -> Result<Vec<String>, String> {
    let parsed: EntitiesReply = parse_object(reply)?;
    let mut out: Vec<String> = Vec::new();
    for entity in parsed.entities {
        let entity = entity.trim();
        if !entity.is_empty() && !out.iter().any(|e| e == entity) {
            out.push(entity.to_owned());
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct ChoiceReply {
    reading: usize,
}

/// `{"reading": N}` over `readings` readings numbered from 1: the chosen
/// reading's index from 0, `None` for 0 (none answers).
pub(crate) fn choice(reply: &str, readings: usize) -> Result<Option<usize>, String> {
    let parsed: ChoiceReply = parse_object(reply)?;
    match parsed.reading {
        0 => Ok(None),
        n if n <= readings => Ok(Some(n - 1)),
        n => Err(format!(
            "there is no reading {n}; the readings are 1 to {readings}"
        )),
    }
}

#[derive(Deserialize)]
struct JudgementReply {
    relevant: Vec<usize>,
    #[serde(default)]
    why: String,
}

/// `{"relevant": [item numbers], "why": str}` over `items` items: one
/// [`Relevance`] per item, every number below `items`.
pub(crate) fn judgements(reply: &str, items: usize) -> Result<Vec<Relevance>, String> {
    let parsed: JudgementReply = parse_object(reply)?;
    if let Some(n) = parsed.relevant.iter().find(|&&n| n >= items) {
        return Err(format!(
            "there is no item {n}; the items are 0 to {}",
            items.saturating_sub(1)
        ));
    }
    let why = parsed.why.trim();
    Ok((0..items)
        .map(|n| {
            let relevant = parsed.relevant.contains(&n);
            Relevance {
                relevant,
                why: if why.is_empty() {
                    if relevant {
                        "judged relevant"
                    } else {
                        "judged not relevant"
                    }
                    .to_owned()
                } else if relevant {
                    why.to_owned()
                } else {
                    format!("not among the relevant items ({why})")
                },
            }
        })
        .collect())
}

#[derive(Deserialize)]
struct QueryReply {
    query: String,
}

/// `{"query": str}`, not empty.
pub(crate) fn query(reply: &str) -> Result<String, String> {
    let parsed: QueryReply = parse_object(reply)?;
    let query = parsed.query.trim();
    if query.is_empty() {
        return Err("\"query\" is empty".to_owned());
    }
    Ok(query.to_owned())
}

#[derive(Deserialize)]
struct DraftReply {
    status: String,
    #[serde(default)]
    claims: Vec<ClaimReply>,
    #[serde(default)]
    missing: String,
}

#[derive(Deserialize)]
struct ClaimReply {
    text: String,
    #[serde(default)]
    citations: Vec<String>,
}

/// `{"status": "answered"|"insufficient", "claims": [...], "missing": str}`. An
/// answer needs at least one claim, and every claim a text and citations, all of
/// them ids in `passage_ids`.
pub(crate) fn draft(reply: &str, passage_ids: &[&str]) -> Result<Draft, String> {
    let parsed: DraftReply = parse_object(reply)?;
    match parsed.status.trim().to_ascii_lowercase().as_str() {
        "answered" => answer_claims(parsed.claims, passage_ids).map(Draft::Answer),
        "insufficient" => {
            let missing = parsed.missing.trim();
            Ok(Draft::Insufficient {
                missing: if missing.is_empty() {
                    "the passages do not answer the question".to_owned()
                } else {
                    missing.to_owned()
                },
            })
        }
        other => Err(format!(
            "\"status\" is {other:?}, not \"answered\" or \"insufficient\""
        )),
    }
}

/// The claims of an answer, checked: texts present, citations known.
fn answer_claims(claims: Vec<ClaimReply>, passage_ids: &[&str]) -> Result<Vec<Claim>, String> {
    if claims.is_empty() {
        return Err("status \"answered\" but no claims".to_owned());
    }
    let mut out = Vec::with_capacity(claims.len());
    for (number, claim) in (1..).zip(claims) {
        let text = claim.text.trim();
        if text.is_empty() {
            return Err(format!("claim {number} has no text"));
        }
        let mut citations: Vec<String> = Vec::new();
        for citation in claim.citations {
            let citation = citation.trim();
            if !passage_ids.contains(&citation) {
                return Err(format!(
                    "claim {number} cites {citation:?}, which is not a given passage id"
                ));
            }
            if !citations.iter().any(|c| c == citation) {
                citations.push(citation.to_owned());
            }
        }
        if citations.is_empty() {
            return Err(format!("claim {number} cites no passage"));
        }
        out.push(Claim {
            text: text.to_owned(),
            citations,
        });
    }
    Ok(out)
}

/// `{"sparql": str}`, a query in a `` ```sparql `` fence, or the bare query (a
/// grammar-held reply); a SELECT or ASK query.
pub(crate) fn sparql(reply: &str) -> Result<String, String> {
    let from_json = json_object(reply).and_then(|object| {
        object
            .get("sparql")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let bare = || {
        let text = reply.trim();
        matches!(query_form(text).as_deref(), Some("SELECT" | "ASK")).then(|| text.to_owned())
    };
    let query = from_json
        .or_else(|| fenced_block(reply, Some("sparql")).map(str::to_owned))
        .or_else(bare)
        .ok_or(
            "neither a JSON object with a \"sparql\" string, a ```sparql block nor a bare query",
        )?;
    let query = strip_fences(&query).trim();
    match query_form(query) {
        Some(form) if form == "SELECT" || form == "ASK" => Ok(query.to_owned()),
        Some(form) => Err(format!("a {form} query; only SELECT or ASK are allowed")),
        None => Err("no SELECT or ASK query found".to_owned()),
    }
}

/// Keywords that start a SPARQL query or update after the prologue.
const QUERY_FORMS: &[&str] = &[
    "SELECT",
    "ASK",
    "CONSTRUCT",
    "DESCRIBE",
    "INSERT",
    "DELETE",
    "LOAD",
    "CLEAR",
    "DROP",
    "CREATE",
    "ADD",
    "MOVE",
    "COPY",
    "WITH",
];

/// The first query or update keyword of a SPARQL text, upper-cased, skipping
/// comments, IRIs, strings and prefixed names (so `PREFIX`/`BASE` declarations).
fn query_form(query: &str) -> Option<String> {
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '#' => skip_until(&mut chars, '\n'),
            '<' => skip_until(&mut chars, '>'),
            '"' | '\'' => skip_until(&mut chars, c),
            c if c.is_alphabetic() => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if !(next.is_alphanumeric() || matches!(next, '_' | '-' | ':' | '.')) {
                        break;
                    }
                    word.push(next);
                    chars.next();
                }
                let word = word.to_ascii_uppercase();
                if QUERY_FORMS.contains(&word.as_str()) {
                    return Some(word);
                }
            }
            _ => {}
        }
    }
    None
}

/// Advances past the next `end`.
fn skip_until(chars: &mut impl Iterator<Item = char>, end: char) {
    for c in chars.by_ref() {
        if c == end {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_bare_fenced_or_in_prose() {
        let want = Some(0);
        assert_eq!(label(r#"{"label": 0}"#, 2), Ok(want));
        assert_eq!(label("```json\n{\"label\": 0}\n```", 2), Ok(want));
        assert_eq!(label("```\n{\"label\": 0}\n```", 2), Ok(want));
        assert_eq!(
            label(
                "Sure {not json}! The answer is {\"label\": 0} as {asked}.",
                2
            ),
            Ok(want)
        );
        assert_eq!(label(r#"{"label": null}"#, 2), Ok(None));
        assert!(label("the first one", 2).is_err());
        assert!(label(r#"{"label": 2}"#, 2).is_err());
        assert!(label(r#"{"choice": 1}"#, 2).is_err());
    }

    #[test]
    fn braces_inside_strings_do_not_end_the_object() {
        let reply = r#"Result: {"query": "a } tricky \" {query"} done"#;
        assert_eq!(query(reply), Ok("a } tricky \" {query".to_owned()));
        assert!(query(r#"{"query": "  "}"#).is_err());
    }

    #[test]
    fn entities_are_trimmed_and_deduplicated() {
        assert_eq!(
            entities(r#"{"entities": [" EngineData ", "", "EngineData", "decode_signal"]}"#),
            Ok(vec!["EngineData".to_owned(), "decode_signal".to_owned()])
        );
        assert!(entities(r#"{"entities": "EngineData"}"#).is_err());
    }

    #[test]
    fn drafts_must_cite_given_passages() {
        let ids = ["doc::1", "doc::2"];
        let good = r#"{"status": "answered", "claims": [{"text": "Two days.", "citations": ["doc::2", "doc::2"]}], "missing": ""}"#;
        assert_eq!(
            draft(good, &ids),
            Ok(Draft::Answer(vec![Claim {
                text: "Two days.".into(),
                citations: vec!["doc::2".into()],
            }]))
        );
        let unknown = r#"{"status": "answered", "claims": [{"text": "X.", "citations": ["[1]"]}]}"#;
        assert!(
            draft(unknown, &ids)
                .expect_err("unknown id")
                .contains("[1]")
        );
        let uncited = r#"{"status": "answered", "claims": [{"text": "X.", "citations": []}]}"#;
        assert!(draft(uncited, &ids).is_err());
        assert!(draft(r#"{"status": "answered", "claims": []}"#, &ids).is_err());
        assert!(draft(r#"{"status": "maybe"}"#, &ids).is_err());
        assert_eq!(
            draft(
                r#"{"status": "insufficient", "claims": [], "missing": "vesting"}"#,
                &ids
            ),
            Ok(Draft::Insufficient {
                missing: "vesting".into()
            })
        );
    }

    #[test]
    fn sparql_comes_from_json_a_fence_or_bare_and_must_be_read_only() {
        let select = "PREFIX ex: <http://ex.org/select#>\nSELECT ?s WHERE { ?s ex:p ?o }";
        let json = serde_json::json!({ "sparql": select }).to_string();
        assert_eq!(sparql(&json), Ok(select.to_owned()));
        let fenced = format!("Here you go:\n```sparql\n{select}\n```\n");
        assert_eq!(sparql(&fenced), Ok(select.to_owned()));
        let json_with_fence = serde_json::json!({ "sparql": format!("```sparql\n{select}\n```") });
        assert_eq!(sparql(&json_with_fence.to_string()), Ok(select.to_owned()));
        assert_eq!(
            sparql(r##"{"sparql": "# ask\nask { ?s ?p ?o }"}"##),
            Ok("# ask\nask { ?s ?p ?o }".to_owned())
        );
        // `{}` in the query parses as JSON, but the fenced query is still found.
        assert_eq!(sparql("```sparql\nASK {}\n```"), Ok("ASK {}".to_owned()));
        assert!(sparql(r#"{"sparql": "DELETE WHERE { ?s ?p ?o }"}"#).is_err());
        assert!(sparql(r#"{"sparql": "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"}"#).is_err());
        // A bare query is what a grammar-held reply is; an update is not accepted
        // bare either, and prose is no query.
        assert_eq!(
            sparql(" SELECT ?s WHERE { ?s ?p ?o }\n"),
            Ok("SELECT ?s WHERE { ?s ?p ?o }".to_owned())
        );
        assert!(sparql("DELETE WHERE { ?s ?p ?o }").is_err());
        assert!(sparql("The query is below.").is_err());
        assert!(sparql(r#"{"query": "SELECT ?s"}"#).is_err());
    }
}
