//! Keeping vector rows in step with the graph, and checking that they are.

use crate::stream_facts::StreamFacts;
use crate::{Store, StoreError};
use kgfuse_core::content_hash;
use kgfuse_core::iri::local_name;
use kgfuse_core::progress::Progress;
use kgfuse_core::vocab::{KGFUSE, WELL_KNOWN_PREFIXES, kg};
use kgfuse_graph::TextLiteral;
use kgfuse_vector::{VectorRow, embed_in_batches};
use std::collections::{BTreeMap, HashMap};

/// Rows embedded and written per round, so memory stays bounded on big loads.
/// Each round is one LanceDB commit and one data file: rounds of 16,384 rows wrote
/// LUBM-10 in 13 commits instead of 50 but no faster, and made an exact scan of a
/// 33,000-row table 1.5x slower (BENCHMARKS.md, "2026-11-27").
const WRITE_BATCH: usize = 4096;

/// The searchable text of one node, as derived from the graph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeText {
    pub text: String,
    pub graph: String,
}

/// Joins a node's literals: by predicate priority, then value; duplicates dropped.
pub(crate) fn compose(mut literals: Vec<TextLiteral>) -> Option<NodeText> {
    literals.retain(|l| !l.value.trim().is_empty());
    literals.sort();
    literals.dedup_by(|a, b| a.predicate == b.predicate && a.value == b.value);
    let graph = literals.first()?.graph.clone();
    let mut parts: Vec<&str> = Vec::new();
    for literal in &literals {
        let value = literal.value.trim();
        if !parts.contains(&value) {
            parts.push(value);
        }
    }
    Some(NodeText {
        text: parts.join("\n"),
        graph,
    })
}

/// Order in which kgfuse types name a node's kind (most specific first).
const KIND_PRIORITY: &[&str] = &[
    kg::METHOD,
    kg::FUNCTION,
    kg::PARAMETER,
    kg::CLASS,
    kg::MODULE,
    kg::PACKAGE,
    kg::CASE,
    kg::KNOWLEDGE_UNIT,
    kg::INPUT_TAG,
    kg::OUTPUT_TAG,
    kg::CHUNK,
    kg::POLICY,
    kg::DOCUMENT,
    kg::SOURCE_FILE,
];

/// Short kind of a node from its types: `Function` for kgfuse types,
/// `owl:Class`-style for well-known vocabularies, the local name otherwise.
pub(crate) fn kind_of(types: &[String]) -> String {
    if let Some(t) = KIND_PRIORITY.iter().find(|k| types.iter().any(|t| t == *k)) {
        return local_name(t).to_owned();
    }
    if let Some(t) = types.iter().find(|t| t.starts_with(KGFUSE)) {
        return local_name(t).to_owned();
    }
    let Some(first) = types.first() else {
        return "Resource".to_owned();
    };
    for (prefix, namespace) in WELL_KNOWN_PREFIXES {
        if let Some(local) = first.strip_prefix(namespace) {
            return format!("{prefix}:{local}");
        }
    }
    local_name(first).to_owned()
}

/// Rows changed by a synchronisation.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    /// New rows.
    pub added: usize,
    /// Rows whose text changed.
    pub updated: usize,
    /// Rows removed (node gone or text gone, or duplicates).
    pub deleted: usize,
    /// Rows already in step.
    pub unchanged: usize,
}

impl std::fmt::Display for SyncReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "vector rows: {} added, {} updated, {} deleted, {} unchanged",
            self.added, self.updated, self.deleted, self.unchanged
        )
    }
}

/// Result of [`Store::check`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// Embeddable nodes in the graph.
    pub nodes: usize,
    /// Rows in the vector table.
    pub rows: usize,
    /// Nodes without a row.
    pub missing_rows: Vec<String>,
    /// Rows without a node (or whose node lost all its text).
    pub orphan_rows: Vec<String>,
    /// Rows whose hash differs from the node's current text.
    pub stale_rows: Vec<String>,
    /// IRIs with more than one row.
    pub duplicate_rows: Vec<String>,
    /// What is wrong with the kgfuse vocabulary the store carries (missing, or
    /// another build's), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ontology_problem: Option<String>,
    /// How the lexicon's index (a layer above the store, checked by the
    /// facade) disagrees with the graph, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexicon_problem: Option<String>,
    /// How `paths`' data-flow graph kept on disk (a layer above the store,
    /// checked by the facade) disagrees with the graph, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_flow_problem: Option<String>,
    /// How `domain`'s packages kept on disk (a layer above the store, checked
    /// by the facade) disagree with the store, if they do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packages_problem: Option<String>,
}

impl CheckReport {
    /// True when the invariant holds.
    pub fn is_ok(&self) -> bool {
        self.missing_rows.is_empty()
            && self.orphan_rows.is_empty()
            && self.stale_rows.is_empty()
            && self.duplicate_rows.is_empty()
            && self.ontology_problem.is_none()
            && self.lexicon_problem.is_none()
            && self.data_flow_problem.is_none()
            && self.packages_problem.is_none()
    }
}

/// A row to write, before embedding.
struct Pending {
    iri: String,
    node: NodeText,
    hash: String,
    replace: bool,
}

impl Store {
    /// Text of every embeddable node, from a full scan of the text predicates.
    fn all_node_texts(&self) -> Result<BTreeMap<String, NodeText>, StoreError> {
        let mut by_subject: BTreeMap<String, Vec<TextLiteral>> = BTreeMap::new();
        for literal in self.graph.text_literals(&self.text_predicates)? {
            by_subject
                .entry(literal.subject.clone())
                .or_default()
                .push(literal);
        }
        Ok(by_subject
            .into_iter()
            .filter_map(|(iri, literals)| compose(literals).map(|t| (iri, t)))
            .collect())
    }

    /// Checks the invariant both ways without changing anything.
    pub async fn check(&self) -> Result<CheckReport, StoreError> {
        let nodes = self.all_node_texts()?;
        let keys = self.vectors.keys().await?;
        let mut rows: HashMap<&str, Vec<&str>> = HashMap::new();
        for (iri, hash) in &keys {
            rows.entry(iri).or_default().push(hash);
        }
        let ontology = self.ontology_status()?;
        let mut report = CheckReport {
            nodes: nodes.len(),
            rows: keys.len(),
            ontology_problem: (!ontology.is_current()).then(|| ontology.to_string()),
            ..CheckReport::default()
        };
        for (iri, node) in &nodes {
            match rows.get(iri.as_str()).map(Vec::as_slice) {
                None => report.missing_rows.push(iri.clone()),
                Some([hash]) => {
                    if *hash != content_hash(&node.text) {
                        report.stale_rows.push(iri.clone());
                    }
                }
                Some(_) => report.duplicate_rows.push(iri.clone()),
            }
        }
        for (iri, hashes) in &rows {
            if !nodes.contains_key(*iri) {
                report.orphan_rows.push((*iri).to_owned());
                if hashes.len() > 1 {
                    report.duplicate_rows.push((*iri).to_owned());
                }
            }
        }
        for list in [
            &mut report.missing_rows,
            &mut report.orphan_rows,
            &mut report.stale_rows,
            &mut report.duplicate_rows,
        ] {
            list.sort();
        }
        Ok(report)
    }

    /// Brings the rows of these IRIs in step with their current text in the graph.
    pub(crate) async fn sync_subjects(
        &self,
        iris: &[String],
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        self.sync_subjects_knowing(iris, None, progress).await
    }

    /// [`Self::sync_subjects`], taking the text and types that `facts` (a load's
    /// stream) knows from there and reading only the rest from the graph.
    pub(crate) async fn sync_subjects_knowing(
        &self,
        iris: &[String],
        facts: Option<&StreamFacts>,
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        let existing = self.vectors.hashes_of(iris).await?;
        let mut by_subject: BTreeMap<String, Vec<TextLiteral>> = BTreeMap::new();
        let mut unknown = Vec::new();
        for iri in iris {
            match facts.and_then(|f| f.text_of(iri)) {
                Some(literals) => {
                    by_subject.insert(iri.clone(), literals);
                }
                None => unknown.push(iri.clone()),
            }
        }
        for literal in self
            .graph
            .text_literals_of(&unknown, &self.text_predicates)?
        {
            by_subject
                .entry(literal.subject.clone())
                .or_default()
                .push(literal);
        }
        let wanted = by_subject
            .into_iter()
            .filter_map(|(iri, literals)| Some((iri, compose(literals)?)))
            .collect();
        self.apply(wanted, &existing, Vec::new(), iris, facts, progress)
            .await
    }

    /// The types of each of `iris`: from `facts` where it knows them, read from
    /// the graph for the rest (at once: from a thousand subjects on that is one
    /// pass over the types).
    fn types_of(
        &self,
        iris: Vec<String>,
        facts: Option<&StreamFacts>,
    ) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        let mut types = BTreeMap::new();
        let mut unknown = Vec::new();
        for iri in iris {
            match facts.and_then(|f| f.types_of(&iri)) {
                Some(known) => {
                    types.insert(iri, known);
                }
                None => unknown.push(iri),
            }
        }
        types.extend(self.graph.types_of_all(&unknown)?);
        Ok(types)
    }

    /// Full reconciliation: every node and every row.
    pub(crate) async fn reconcile_all(
        &self,
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        let wanted = self.all_node_texts()?;
        let keys = self.vectors.keys().await?;
        let mut existing = HashMap::new();
        let mut duplicates = Vec::new();
        for (iri, hash) in keys {
            if existing.insert(iri.clone(), hash).is_some() {
                duplicates.push(iri);
            }
        }
        duplicates.sort();
        duplicates.dedup();
        let scope: Vec<String> = existing.keys().cloned().collect();
        self.apply(wanted, &existing, duplicates, &scope, None, progress)
            .await
    }

    /// Writes the difference between `wanted` (graph) and `existing` (table).
    /// Rows in `scope` that are not wanted are deleted; duplicated IRIs are
    /// deleted and written again once. The rows' types come from `facts` where
    /// it knows them.
    async fn apply(
        &self,
        wanted: BTreeMap<String, NodeText>,
        existing: &HashMap<String, String>,
        duplicates: Vec<String>,
        scope: &[String],
        facts: Option<&StreamFacts>,
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        let (report, doomed, pending) = difference(wanted, existing, duplicates, scope);
        if !doomed.is_empty() {
            self.vectors.delete(&doomed).await?;
        }
        if !pending.is_empty() {
            self.write_rows(&pending, facts, progress).await?;
        }
        Ok(report)
    }

    /// Embeds the pending rows in batches of [`WRITE_BATCH`] and writes them:
    /// new rows added, changed ones replaced.
    async fn write_rows(
        &self,
        pending: &[Pending],
        facts: Option<&StreamFacts>,
        progress: &dyn Progress,
    ) -> Result<(), StoreError> {
        // Every row's kind, read at once rather than a batch at a time.
        let iris: Vec<String> = pending.iter().map(|p| p.iri.clone()).collect();
        let types = self.types_of(iris, facts)?;
        progress.start("embedding", Some(pending.len() as u64));
        for batch in pending.chunks(WRITE_BATCH) {
            let texts: Vec<String> = batch.iter().map(|p| p.node.text.clone()).collect();
            let vectors = embed_in_batches(
                self.embedder.as_ref(),
                &texts,
                self.config.embedder.batch_size,
                progress,
            )?;
            let mut new_rows = Vec::new();
            let mut changed_rows = Vec::new();
            for (p, vector) in batch.iter().zip(vectors) {
                let row = VectorRow {
                    iri: p.iri.clone(),
                    kind: kind_of(types.get(&p.iri).map_or(&[][..], Vec::as_slice)),
                    text: p.node.text.clone(),
                    hash: p.hash.clone(),
                    graph: p.node.graph.clone(),
                    vector,
                };
                if p.replace {
                    changed_rows.push(row);
                } else {
                    new_rows.push(row);
                }
            }
            self.vectors.add(&new_rows).await?;
            self.vectors.upsert(&changed_rows).await?;
        }
        progress.finish();
        Ok(())
    }
}

/// What a sync must do: the counts, the rows to delete (not wanted in `scope`,
/// or duplicated), and the rows to embed and write (new, changed, or duplicated).
fn difference(
    wanted: BTreeMap<String, NodeText>,
    existing: &HashMap<String, String>,
    duplicates: Vec<String>,
    scope: &[String],
) -> (SyncReport, Vec<String>, Vec<Pending>) {
    let mut report = SyncReport::default();
    let mut doomed: Vec<String> = scope
        .iter()
        .filter(|iri| existing.contains_key(*iri) && !wanted.contains_key(*iri))
        .cloned()
        .collect();
    report.deleted = doomed.len() + duplicates.len();
    doomed.extend(duplicates.iter().cloned());
    let mut pending = Vec::new();
    for (iri, node) in wanted {
        let hash = content_hash(&node.text);
        let duplicated = duplicates.binary_search(&iri).is_ok();
        match existing.get(&iri) {
            Some(old) if *old == hash && !duplicated => report.unchanged += 1,
            Some(_) if !duplicated => {
                report.updated += 1;
                pending.push(Pending {
                    iri,
                    node,
                    hash,
                    replace: true,
                });
            }
            _ => {
                report.added += 1;
                pending.push(Pending {
                    iri,
                    node,
                    hash,
                    replace: false,
                });
            }
        }
    }
    (report, doomed, pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(predicate: usize, value: &str, graph: &str) -> TextLiteral {
        TextLiteral {
            subject: "urn:s".into(),
            predicate,
            value: value.into(),
            graph: graph.into(),
        }
    }

    #[test]
    fn composes_by_priority_and_drops_duplicates() {
        let node = compose(vec![
            lit(5, "A comment.", "urn:g2"),
            lit(0, "label", "urn:g1"),
            lit(0, "label", "urn:g3"),
            lit(7, "  ", "urn:g1"),
        ])
        .expect("text");
        assert_eq!(node.text, "label\nA comment.");
        assert_eq!(node.graph, "urn:g1");
        assert_eq!(compose(vec![lit(0, " ", "urn:g")]), None);
    }

    #[test]
    fn kinds_prefer_specific_kgfuse_types() {
        let t = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(kind_of(&t(&[kg::FUNCTION, kg::METHOD])), "Method");
        assert_eq!(
            kind_of(&t(&["http://www.w3.org/2002/07/owl#Class"])),
            "owl:Class"
        );
        assert_eq!(kind_of(&t(&["http://example.org/Thing"])), "Thing");
        assert_eq!(kind_of(&[]), "Resource");
    }
}
