//! IRIs as people read them: the local name, and a prefixed form.

/// The local name of an IRI: its last non-empty segment after a `#` or `/`
/// (`http://example.org/pkg/` -> `pkg`); the whole IRI when it has none.
///
/// ```
/// use kgfuse_core::iri::local_name;
/// assert_eq!(local_name("https://w3id.org/kgfuse/ontology#Function"), "Function");
/// assert_eq!(local_name("http://example.org/a/b"), "b");
/// assert_eq!(local_name("http://example.org/a/"), "a");
/// assert_eq!(local_name("urn:x"), "urn:x");
/// ```
pub fn local_name(iri: &str) -> &str {
    iri.rsplit(['#', '/'])
        .find(|segment| !segment.is_empty())
        .unwrap_or(iri)
}

/// `iri` as `prefix:local` when one of `prefixes` (prefix, namespace) covers it
/// with a plain local name (letters, digits, `_`, `-`; the longest namespace
/// wins); the prefix used and the short form. `None` when none does.
///
/// ```
/// use kgfuse_core::iri::compact_iri;
/// let prefixes = [("ex".to_owned(), "http://ex.org/".to_owned())];
/// assert_eq!(compact_iri("http://ex.org/Ann", &prefixes), Some(("ex".into(), "ex:Ann".into())));
/// assert_eq!(compact_iri("http://ex.org/a/b", &prefixes), None);
/// ```
pub fn compact_iri(iri: &str, prefixes: &[(String, String)]) -> Option<(String, String)> {
    let (prefix, namespace) = prefixes
        .iter()
        .filter(|(_, ns)| !ns.is_empty() && iri.starts_with(ns.as_str()))
        .max_by_key(|(_, ns)| ns.len())?;
    let local = &iri[namespace.len()..];
    let plain = local
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    plain.then(|| (prefix.clone(), format!("{prefix}:{local}")))
}

/// `iri` compacted with `prefixes`, else `<iri>`: how SPARQL and Turtle write it.
///
/// ```
/// use kgfuse_core::iri::compact;
/// let prefixes = [("ex".to_owned(), "http://ex.org/".to_owned())];
/// assert_eq!(compact("http://ex.org/Ann", &prefixes), "ex:Ann");
/// assert_eq!(compact("urn:x", &prefixes), "<urn:x>");
/// ```
pub fn compact(iri: &str, prefixes: &[(String, String)]) -> String {
    compact_iri(iri, prefixes).map_or_else(|| format!("<{iri}>"), |(_, short)| short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iris_compact_with_the_longest_prefix() {
        let prefixes = vec![
            ("ex".to_owned(), "http://ex.org/".to_owned()),
            ("exa".to_owned(), "http://ex.org/a/".to_owned()),
        ];
        assert_eq!(compact("http://ex.org/a/b", &prefixes), "exa:b");
        assert_eq!(compact("urn:x", &prefixes), "<urn:x>");
        assert_eq!(
            compact("http://ex.org/a b", &prefixes),
            "<http://ex.org/a b>"
        );
    }
}
