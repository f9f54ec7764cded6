//! What the answer loop knows about a candidate's source: its document, authority,
//! dates, what supersedes it and what it conflicts with. Read from the graph with
//! fixed queries whose only inputs are IRIs bound through `VALUES`.

use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_lexicon::sparql::{cell_is_true, cell_text};
use kgfuse_lexicon::sparql::{run, values};
use kgfuse_retrieve::RetrieveError;
use kgfuse_store::Store;
use std::collections::{BTreeMap, BTreeSet};

/// A candidate's source facts. A value stated on the item itself wins over the
/// one stated on its document.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SourceFacts {
    /// The document the item is part of (or is stated in), else the item itself.
    pub document: String,
    /// The document's title (or the item's label), when known.
    pub title: Option<String>,
    /// Authority in [0, 1]; unknown counts as 0.5.
    pub authority: Option<f32>,
    /// Effective date, `YYYY-MM-DD`.
    pub effective: Option<String>,
    /// Last day it is valid, `YYYY-MM-DD`.
    pub valid_until: Option<String>,
    /// Nodes that supersede the item or its document.
    pub superseded_by: Vec<String>,
    /// Nodes the item or its document conflicts with.
    pub conflicts_with: BTreeSet<String>,
    /// The item is a class or property of an ontology, not a source of knowledge.
    pub is_schema: bool,
}

impl SourceFacts {
    /// Authority with the neutral default for sources that state none.
    pub fn authority_or_default(&self) -> f32 {
        self.authority.unwrap_or(0.5)
    }

    /// True when `valid_until` lies before `today` (both `YYYY-MM-DD`).
    pub fn is_stale(&self, today: &str) -> bool {
        self.valid_until
            .as_deref()
            .is_some_and(|until| until < today)
    }

    /// The item's own IRI and its document's, the nodes a supersession or a
    /// conflict can be stated about.
    pub fn nodes<'a>(&'a self, item: &'a str) -> [&'a str; 2] {
        [item, self.document.as_str()]
    }
}

/// The items that are valid IRIs, as terms for a `VALUES` block (others are skipped:
/// they cannot be graph nodes).
fn iri_terms<'a>(items: impl IntoIterator<Item = &'a String>) -> Vec<Term> {
    items
        .into_iter()
        .filter_map(|iri| NamedNode::new(iri).ok().map(Term::NamedNode))
        .collect()
}

/// Looks up [`SourceFacts`] for every item.
pub(crate) fn source_facts(
    store: &Store,
    items: &[String],
) -> Result<BTreeMap<String, SourceFacts>, RetrieveError> {
    let terms = iri_terms(items);
    let mut facts: BTreeMap<String, SourceFacts> = BTreeMap::new();
    if terms.is_empty() {
        return Ok(facts);
    }
    let documents = run(
        store,
        format!(
            "SELECT ?item ?doc ?title ?authority ?effective ?until ?schema WHERE {{ {values} \
               OPTIONAL {{ ?item <{part_of}> ?partOf }} \
               OPTIONAL {{ ?item <{stated_in}> ?stated . ?stated a <{document}> }} \
               BIND(COALESCE(?partOf, ?stated, ?item) AS ?doc) \
               OPTIONAL {{ ?doc <{title}> ?docTitle }} \
               OPTIONAL {{ ?item <{label}> ?itemLabel }} \
               BIND(COALESCE(?docTitle, ?itemLabel) AS ?title) \
               OPTIONAL {{ ?item <{authority}> ?itemAuthority }} \
               OPTIONAL {{ ?doc <{authority}> ?docAuthority }} \
               BIND(COALESCE(?itemAuthority, ?docAuthority) AS ?authority) \
               OPTIONAL {{ ?item <{effective}> ?itemEffective }} \
               OPTIONAL {{ ?doc <{effective}> ?docEffective }} \
               BIND(COALESCE(?itemEffective, ?docEffective) AS ?effective) \
               OPTIONAL {{ ?item <{until}> ?itemUntil }} \
               OPTIONAL {{ ?doc <{until}> ?docUntil }} \
               BIND(COALESCE(?itemUntil, ?docUntil) AS ?until) \
               BIND(EXISTS {{ ?item a ?type VALUES ?type {{ <{owl}Class> <{rdfs}Class> \
                 <{rdf}Property> <{owl}ObjectProperty> <{owl}DatatypeProperty> \
                 <{owl}AnnotationProperty> }} }} AS ?schema) \
             }}",
            values = values("item", &terms),
            part_of = w3c::DCTERMS_IS_PART_OF,
            stated_in = kg::STATED_IN,
            document = kg::DOCUMENT,
            title = w3c::DCTERMS_TITLE,
            label = w3c::RDFS_LABEL,
            authority = kg::AUTHORITY,
            effective = kg::EFFECTIVE_DATE,
            until = kg::VALID_UNTIL,
            owl = kgfuse_core::vocab::OWL,
            rdfs = kgfuse_core::vocab::RDFS,
            rdf = kgfuse_core::vocab::RDF,
        ),
    )?;
    for row in &documents.rows {
        let Some(item) = cell_text(row.first()) else {
            continue;
        };
        // Several rows per item (titles in several languages): the first wins.
        facts.entry(item.clone()).or_insert_with(|| SourceFacts {
            document: cell_text(row.get(1)).unwrap_or_else(|| item.clone()),
            title: cell_text(row.get(2)),
            authority: cell_text(row.get(3)).and_then(|a| a.parse().ok()),
            effective: cell_text(row.get(4)),
            valid_until: cell_text(row.get(5)),
            is_schema: cell_is_true(row.get(6)),
            ..SourceFacts::default()
        });
    }
    // Supersession and conflicts, stated about items or their documents.
    let nodes: BTreeSet<String> = facts
        .iter()
        .flat_map(|(item, f)| [item.clone(), f.document.clone()])
        .collect();
    let node_terms = iri_terms(nodes.iter());
    let relations = run(
        store,
        format!(
            "SELECT ?node ?kind ?other WHERE {{ {values} \
               {{ ?other <{supersedes}> ?node BIND(\"superseded\" AS ?kind) }} \
               UNION {{ ?node <{conflicts}> ?other BIND(\"conflict\" AS ?kind) }} \
               UNION {{ ?other <{conflicts}> ?node BIND(\"conflict\" AS ?kind) }} \
             }}",
            values = values("node", &node_terms),
            supersedes = kg::SUPERSEDES,
            conflicts = kg::CONFLICTS_WITH,
        ),
    )?;
    let mut superseded: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut conflicts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in &relations.rows {
        let (Some(node), Some(kind), Some(other)) = (
            cell_text(row.first()),
            cell_text(row.get(1)),
            cell_text(row.get(2)),
        ) else {
            continue;
        };
        let target = if kind == "superseded" {
            &mut superseded
        } else {
            &mut conflicts
        };
        target.entry(node).or_default().insert(other);
    }
    for (item, f) in &mut facts {
        for node in [item.clone(), f.document.clone()] {
            if let Some(by) = superseded.get(&node) {
                f.superseded_by.extend(by.iter().cloned());
            }
            if let Some(with) = conflicts.get(&node) {
                f.conflicts_with.extend(with.iter().cloned());
            }
        }
        f.superseded_by.sort();
        f.superseded_by.dedup();
    }
    Ok(facts)
}

/// Labels and aliases of the entities the items mention or name, for query rewriting.
pub(crate) fn related_terms(store: &Store, items: &[String]) -> Result<Vec<String>, RetrieveError> {
    let terms = iri_terms(items);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let solutions = run(
        store,
        format!(
            "SELECT DISTINCT ?term WHERE {{ {values} \
               {{ ?item <{mentions}> ?entity }} UNION {{ BIND(?item AS ?entity) }} \
               {{ ?entity <{label}> ?term }} UNION {{ ?entity <{alt}> ?term }} \
             }} LIMIT 64",
            values = values("item", &terms),
            mentions = kg::MENTIONS,
            label = w3c::RDFS_LABEL,
            alt = w3c::SKOS_ALT_LABEL,
        ),
    )?;
    Ok(solutions
        .rows
        .iter()
        .filter_map(|row| cell_text(row.first()))
        .collect())
}

/// Whether some node of `from` and some node of `to` are joined by one edge,
/// either way.
pub(crate) fn one_edge_apart(
    store: &Store,
    from: &[String],
    to: &[String],
) -> Result<bool, RetrieveError> {
    let (from, to) = (iri_terms(from), iri_terms(to));
    if from.is_empty() || to.is_empty() {
        return Ok(false);
    }
    let solutions = run(
        store,
        format!(
            "SELECT ?a WHERE {{ {from} {to} {{ ?a ?p ?b }} UNION {{ ?b ?p ?a }} }} LIMIT 1",
            from = values("a", &from),
            to = values("b", &to),
        ),
    )?;
    Ok(!solutions.rows.is_empty())
}

/// Nodes one or two policy relations away from the items (`mentions`, then
/// `escalatesTo` / `requires` / `appliesTo`), with the relation path, for
/// multi-hop questions ("who approves it?" needs the escalation target).
pub(crate) fn related_nodes(
    store: &Store,
    items: &[String],
) -> Result<Vec<(String, String)>, RetrieveError> {
    let terms = iri_terms(items);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let solutions = run(
        store,
        format!(
            "SELECT DISTINCT ?item ?via ?target WHERE {{ {values} \
               {{ ?item ?via ?target VALUES ?via {{ <{mentions}> <{escalates}> <{requires}> <{applies}> }} }} \
               UNION {{ ?item <{mentions}> ?entity . ?entity ?hop ?target \
                        VALUES ?hop {{ <{escalates}> <{requires}> }} \
                        BIND(CONCAT(\"mentions/\", STR(?hop)) AS ?via) }} \
             }} LIMIT 200",
            values = values("item", &terms),
            mentions = kg::MENTIONS,
            escalates = kg::ESCALATES_TO,
            requires = kg::REQUIRES,
            applies = kg::APPLIES_TO,
        ),
    )?;
    Ok(solutions
        .rows
        .iter()
        .filter_map(|row| {
            let via = cell_text(row.get(1))?;
            let target = cell_text(row.get(2))?;
            Some((target, via))
        })
        .collect())
}
