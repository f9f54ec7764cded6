//! Entity mentions: one Aho-Corasick automaton over all entity labels, matched in
//! chunk text case-insensitively at word boundaries.

use super::EntityLabel;
use crate::IngestError;
use aho_corasick::{AhoCorasick, MatchKind};
use oxrdf::NamedNode;
use std::collections::{BTreeSet, HashMap};

/// Entity labels shorter than this (in characters) are too ambiguous to look for.
const MIN_LABEL_CHARS: usize = 3;

/// Finds entity labels in chunk text.
#[derive(Debug)]
pub(super) struct MentionFinder {
    /// `None` when there is no label to look for.
    matcher: Option<AhoCorasick>,
    /// Per pattern, the indexes of the entities with that label.
    targets: Vec<Vec<usize>>,
    /// The distinct entities.
    pub(super) entities: Vec<NamedNode>,
}

/// Lowercase with runs of whitespace as one space, so labels match across line
/// breaks and case.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl MentionFinder {
    pub(super) fn new(entities: &[EntityLabel]) -> Result<Self, IngestError> {
        let mut nodes: Vec<NamedNode> = Vec::new();
        let mut node_index: HashMap<&str, usize> = HashMap::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut pattern_index: HashMap<String, usize> = HashMap::new();
        let mut targets: Vec<Vec<usize>> = Vec::new();
        for entity in entities {
            let label = normalize(&entity.label);
            if label.chars().count() < MIN_LABEL_CHARS {
                continue;
            }
            let node = match node_index.get(entity.iri.as_str()) {
                Some(&node) => node,
                None => match NamedNode::new(entity.iri.as_str()) {
                    Ok(iri) => {
                        nodes.push(iri);
                        node_index.insert(&entity.iri, nodes.len() - 1);
                        nodes.len() - 1
                    }
                    Err(error) => {
                        tracing::warn!(iri = %entity.iri, %error, "entity IRI is not valid; its labels are not looked for");
                        continue;
                    }
                },
            };
            let pattern = match pattern_index.get(&label) {
                Some(&pattern) => pattern,
                None => {
                    patterns.push(label.clone());
                    targets.push(Vec::new());
                    pattern_index.insert(label, patterns.len() - 1);
                    patterns.len() - 1
                }
            };
            if let Some(target) = targets.get_mut(pattern)
                && !target.contains(&node)
            {
                target.push(node);
            }
        }
        let matcher = if patterns.is_empty() {
            None
        } else {
            // Overlapping search (Standard) so a longer label that fails the word
            // boundary test does not hide a shorter one that passes.
            let matcher = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&patterns)
                .map_err(|e| IngestError::Invalid(format!("entity labels: {e}")))?;
            Some(matcher)
        };
        Ok(Self {
            matcher,
            targets,
            entities: nodes,
        })
    }

    /// The entities whose labels occur in `text` at word boundaries; of overlapping
    /// matches the leftmost-longest wins.
    pub(super) fn find(&self, text: &str) -> BTreeSet<usize> {
        let mut found = BTreeSet::new();
        let Some(matcher) = &self.matcher else {
            return found;
        };
        let haystack = normalize(text);
        let mut matches: Vec<(usize, usize, usize)> = matcher
            .find_overlapping_iter(haystack.as_str())
            .filter(|m| {
                let before = haystack[..m.start()].chars().next_back();
                let after = haystack[m.end()..].chars().next();
                !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
            })
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .collect();
        matches.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        let mut covered_until = 0;
        for (start, end, pattern) in matches {
            if start < covered_until {
                continue;
            }
            covered_until = end;
            if let Some(entities) = self.targets.get(pattern) {
                found.extend(entities.iter().copied());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(iri: &str, label: &str) -> EntityLabel {
        EntityLabel {
            iri: iri.to_owned(),
            label: label.to_owned(),
        }
    }

    #[test]
    fn a_longer_label_failing_the_boundary_does_not_hide_a_shorter_one() {
        let finder = MentionFinder::new(&[
            entity("urn:x:A", "merchant"),
            entity("urn:x:B", "merchant fee"),
        ])
        .expect("finder");
        let found: Vec<&str> = finder
            .find("Merchant fees")
            .into_iter()
            .map(|i| finder.entities[i].as_str())
            .collect();
        assert_eq!(found, ["urn:x:A"]);
        let found: Vec<&str> = finder
            .find("the merchant fee.")
            .into_iter()
            .map(|i| finder.entities[i].as_str())
            .collect();
        assert_eq!(found, ["urn:x:B"], "leftmost-longest wins");
    }
}
