//! Semantic input/output tags (SGKR's semantic I/O nodes).
//!
//! A tag is a normalised concept name: `merchant_id`, `merchant` and `merchants`
//! all become `merchant`; `FeeRule` and `list[FeeRule]` become `fee rule`. Inputs come
//! from parameter names and types, outputs from return types and from the verb-object
//! shape of a function's name (`compute_fee` produces `fee`).

use kgfuse_core::text::{identifier_words, singular};

/// Name parts that say how a value is held, not what it is.
const HOLDER_SUFFIXES: &[&str] = &[
    "id", "ids", "key", "keys", "idx", "obj", "str", "list", "dict", "set", "df", "ref",
];

/// Names and types too generic to be a concept.
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    "self", "cls", "args", "kwargs", "kw", "kwds", "x", "y", "i", "j", "k", "n", "s", "o", "a",
    "b", "c", "d", "f", "v", "e", "obj", "data", "value", "values", "item", "items", "other",
    "arg", "val", "result", "str", "int", "float", "bool", "bytes", "none", "any", "object",
    "dict", "list", "tuple", "set", "frozenset", "optional", "union", "iterable", "iterator",
    "sequence", "mapping", "callable", "type", "self type", "u8", "u16", "u32", "u64", "u128",
    "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "char", "string", "vec",
    "option", "box", "rc", "arc", "cow", "t", "u", "fmt", "formatter", "size", "len", "default",
    "name", "text", "path", "dir", "data dir", "directory", "data directory", "record", "row",
    "line", "buf", "buffer", "file", "fp", "stream", "context", "ctx", "config", "kwarg",
];

/// Verbs whose object is what a function produces (`get_fee` -> `fee`).
const PRODUCING_VERBS: &[&str] = &[
    "get",
    "compute",
    "calculate",
    "calc",
    "find",
    "load",
    "read",
    "make",
    "create",
    "build",
    "parse",
    "fetch",
    "count",
    "total",
    "average",
    "avg",
    "sum",
    "to",
    "as",
    "new",
    "lookup",
    "resolve",
    "select",
    "match",
    "list",
    "most",
    "cheapest",
    "estimate",
];

/// The concept a name stands for, or `None` for generic names.
pub fn normalise(name: &str) -> Option<String> {
    let mut parts = identifier_words(name.trim_start_matches('*'));
    while parts.len() > 1
        && parts
            .last()
            .is_some_and(|w| HOLDER_SUFFIXES.contains(&w.as_str()))
    {
        parts.pop();
    }
    if parts.is_empty() {
        return None;
    }
    let as_written = parts.join(" ");
    if let Some(last) = parts.last_mut() {
        *last = singular(last);
    }
    let tag = parts.join(" ");
    let meaningful = tag.chars().filter(|c| c.is_alphabetic()).count() >= 3
        && !GENERIC.contains(&tag.as_str())
        && !GENERIC.contains(&as_written.as_str())
        && !parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit()));
    meaningful.then_some(tag)
}

/// Concepts named by a type annotation: the innermost named types of
/// `list[FeeRule]`, `Option<&Merchant>`, `dict[str, Merchant]`.
pub fn from_type(annotation: &str) -> Vec<String> {
    let mut tags = Vec::new();
    for token in
        annotation.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == ':'))
    {
        let last = token.rsplit(['.', ':']).next().unwrap_or(token);
        if last.chars().next().is_some_and(char::is_uppercase)
            && let Some(tag) = normalise(last)
            && !tags.contains(&tag)
        {
            tags.push(tag);
        }
    }
    tags
}

/// What a function's name says it produces: the words after a producing verb.
pub fn from_function_name(name: &str) -> Option<String> {
    let parts = identifier_words(name);
    let (verb, rest) = parts.split_first()?;
    if rest.is_empty() || !PRODUCING_VERBS.contains(&verb.as_str()) {
        return None;
    }
    // `get_fee_for_merchant` -> `fee`: stop at a preposition.
    let object: Vec<&String> = rest
        .iter()
        .take_while(|w| {
            !["for", "from", "of", "by", "with", "in", "to", "per"].contains(&w.as_str())
        })
        .collect();
    let joined = object
        .iter()
        .map(|w| w.as_str())
        .collect::<Vec<_>>()
        .join("_");
    normalise(&joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise_to_concepts() {
        assert_eq!(normalise("merchant_id").as_deref(), Some("merchant"));
        assert_eq!(normalise("merchant").as_deref(), Some("merchant"));
        assert_eq!(normalise("merchants").as_deref(), Some("merchant"));
        assert_eq!(normalise("FeeRule").as_deref(), Some("fee rule"));
        assert_eq!(normalise("fee_rules").as_deref(), Some("fee rule"));
        assert_eq!(normalise("categories").as_deref(), Some("category"));
        assert_eq!(normalise("status").as_deref(), Some("status"));
        assert_eq!(
            normalise("transaction_value").as_deref(),
            Some("transaction value")
        );
        assert_eq!(normalise("self"), None);
        assert_eq!(normalise("**kwargs"), None);
        assert_eq!(normalise("x"), None);
    }

    #[test]
    fn types_and_function_names_give_concepts() {
        assert_eq!(from_type("list[FeeRule]"), ["fee rule"]);
        assert_eq!(from_type("Option<&crate::model::Merchant>"), ["merchant"]);
        assert_eq!(from_type("dict[str, int]"), Vec::<String>::new());
        assert_eq!(from_function_name("compute_fee").as_deref(), Some("fee"));
        assert_eq!(
            from_function_name("get_fee_rules_for_merchant").as_deref(),
            Some("fee rule")
        );
        assert_eq!(from_function_name("compute"), None);
        assert_eq!(from_function_name("helper_fee"), None);
    }
}
