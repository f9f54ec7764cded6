//! The lexicon: every named node of the store, its names and descriptions as
//! search terms, kept on disk in a tantivy index inside the store directory
//! ([`index`]) and brought in step with the graph when the store has changed
//! since (only the entries that changed are rewritten). A process that opens an
//! unchanged store reads the index as it is: nothing is built per process.
//!
//! It serves two jobs that need the same analysis of text ([`analyze`]):
//!
//! - **BM25 over names and descriptions** ([`Lexicon::bm25`], tantivy's BM25
//!   with Robertson's usual k1 1.2, b 0.75): labels, aliases, names (identifiers
//!   split into words) count twice, comments, docstrings, signatures,
//!   definitions and document text once; code bodies are left out, so a
//!   function is found by what it is called and what it says it does;
//! - **label candidates for entity linking** ([`Lexicon::name_matches`]): the
//!   names that share the most specific of the question's terms (a term query
//!   against the index, at most [`CANDIDATES`] a role), then, for each, how much
//!   of the name the question covers and how much of the question's words the
//!   name explains, term by term, with inflections, identifier parts and stem
//!   prefixes (`advises` ~ `advisor`) taken into account.
//!
//! Which literals are names is read off the data, not configured: the usual label
//! predicates (`rdfs:label`, `skos:prefLabel`/`altLabel`, `dcterms:title`,
//! `kgfuse:name`) and any predicate whose local name ends in `name`, `label`,
//! `title` or `alias` (`ub:name`, `foaf:name`, `ex:lastName`). Descriptions are the
//! usual comment predicates and any whose local name ends in `description`,
//! `comment`, `summary`, `abstract` or `definition`. Classes and properties are
//! named by their labels, else by their local names (`worksFor` -> works for).

pub mod analyze;
mod index;

pub use index::{Changes, LEXICON_DIR, LexiconError};

use crate::RetrieveError;
use crate::sparql;
use crate::sparql::cell_text;
use analyze::{Term, analyze, analyze_question};
use index::{EntityStatistics, LexiconIndex, Predicates, Source, Stamp};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::NamedNode;
use kgfuse_graph::model::Term as GraphTerm;
use kgfuse_store::Store;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument};

/// What a lexicon entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An instance: a person, a function, a chunk.
    Entity,
    /// A class (used as the object of `rdf:type`, or declared one).
    Class,
    /// A property (used as a predicate, or declared one).
    Property,
}

/// One node of the lexicon, as its index stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The node.
    pub iri: String,
    /// What it is.
    pub role: Role,
    /// Local names of its types (`Function`, `GraduateStudent`).
    pub kinds: Vec<String>,
    /// Its first name, for display.
    pub name: String,
    /// Names and descriptions as one text (what BM25 scored), for display;
    /// empty for classes and properties.
    pub text: String,
    /// Its names.
    pub names: Vec<String>,
}

impl Entry {
    /// The terms of its names: each name's parts, then its whole identifiers.
    pub fn name_terms(&self) -> Vec<String> {
        self.names
            .iter()
            .flat_map(|name| {
                let terms = NameTerms::of(name);
                terms.parts.into_iter().chain(terms.wholes)
            })
            .collect()
    }
}

/// A name of an entry that a question matches, and how well.
#[derive(Debug, Clone)]
pub struct NameMatch {
    /// The entry.
    pub entry: Arc<Entry>,
    /// Share of the name's term weight the question covers (1 = all of it; a
    /// whole identifier of the name counts as all of it).
    pub name_coverage: f32,
    /// Share of the name's parts' term weight the question's parts cover,
    /// whole identifiers aside: "Crossfit_Hanna" covers all of the name
    /// "Crossfit_Hanna" and part of "Crossfit_Hanna, January 2023".
    pub parts_coverage: f32,
    /// Share of the touched question words' term weight the name explains.
    pub word_coverage: f32,
    /// Question words the match touches.
    pub words: Vec<usize>,
    /// The question words where the name's last part (its head noun: "students"
    /// for the class "graduate student") matched.
    pub head_words: Vec<usize>,
}

impl NameMatch {
    /// Coverage both ways.
    pub fn score(&self) -> f32 {
        self.name_coverage * self.word_coverage
    }
}

/// A BM25 hit.
#[derive(Debug, Clone)]
pub struct LexicalHit {
    /// The entry.
    pub entry: Arc<Entry>,
    /// BM25 score.
    pub score: f32,
}

/// Most entries of one role whose names [`Lexicon::name_matches`] scores: the
/// ones whose names share the question's most specific terms (a common word
/// touches every function named with it, and scoring them all was most of a
/// question's linking time at a million functions).
pub const CANDIDATES: usize = 256;
/// Most name terms one question part extends to (`teach` -> `teacher`,
/// `teaches`, ...), the shortest first.
const MAX_EXTENSIONS: usize = 64;
/// A question part and a name part match by prefix when the shorter has this
/// many characters at least (`advis` ~ `advisor`, `teach` ~ `teacher`).
const MIN_PREFIX: usize = 4;
/// A prefix match counts this much of an exact one.
const PREFIX_WEIGHT: f32 = 0.8;
/// How a question part matches one name part, as [`Lexicon::matching_terms`]
/// would: 1 when equal, [`PREFIX_WEIGHT`] when one extends the other and the
/// shorter has [`MIN_PREFIX`] characters at least.
fn part_match(question_part: &str, name_part: &str) -> Option<f32> {
    if question_part == name_part {
        return Some(1.0);
    }
    let (shorter, longer) = if question_part.len() < name_part.len() {
        (question_part, name_part)
    } else {
        (name_part, question_part)
    };
    (longer.starts_with(shorter) && shorter.chars().count() >= MIN_PREFIX).then_some(PREFIX_WEIGHT)
}

/// What a match whose parts appear in another order than the name's keeps of its
/// word coverage.
const OUT_OF_ORDER: f32 = 0.5;

/// The lexicon, open: a snapshot of its index to read from.
pub struct Lexicon {
    index: LexiconIndex,
    searcher: Searcher,
    /// Live entries (every role).
    entries: u64,
    /// Entity documents, for BM25's statistics.
    entities: u64,
}

impl std::fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lexicon")
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// A name's analysed terms: its stemmed parts (without consecutive repeats),
/// then its whole identifiers (`graduatestudent12`).
struct NameTerms {
    parts: Vec<String>,
    wholes: Vec<String>,
}

impl NameTerms {
    fn of(name: &str) -> Self {
        let terms = analyze(name);
        let mut parts: Vec<String> = terms
            .iter()
            .filter(|t| !t.whole)
            .map(|t| t.text.clone())
            .collect();
        parts.dedup();
        let wholes = terms
            .into_iter()
            .filter(|t| t.whole)
            .map(|t| t.text)
            .collect();
        Self { parts, wholes }
    }
}

/// Name term -> (best match weight, question words), for the terms a question's
/// parts touch.
type Touched = HashMap<String, (f32, Vec<usize>)>;

/// Predicates whose literals name a node, whatever their local name.
const NAME_PREDICATES: &[&str] = &[
    w3c::RDFS_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::SKOS_ALT_LABEL,
    w3c::DCTERMS_TITLE,
    kg::NAME,
];
/// Predicates whose literals describe a node, whatever their local name.
const DESCRIPTION_PREDICATES: &[&str] = &[
    w3c::RDFS_COMMENT,
    w3c::SKOS_DEFINITION,
    w3c::DCTERMS_DESCRIPTION,
    kg::SIGNATURE,
    kg::KNOWLEDGE,
    kg::TEXT,
];
/// Name predicates that alone do not make a node worth searching (a parameter has
/// a `kgfuse:name` and nothing else).
const SECONDARY_NAMES: &[&str] = &[kg::NAME];

fn is_name_predicate(iri: &str) -> bool {
    if NAME_PREDICATES.contains(&iri) {
        return true;
    }
    let local = local_name(iri).to_ascii_lowercase();
    ["name", "label", "title", "alias"]
        .iter()
        .any(|end| local.ends_with(end))
        && local != "qualifiedname"
}

fn is_description_predicate(iri: &str) -> bool {
    if DESCRIPTION_PREDICATES.contains(&iri) {
        return true;
    }
    let local = local_name(iri).to_ascii_lowercase();
    [
        "description",
        "comment",
        "summary",
        "abstract",
        "definition",
    ]
    .iter()
    .any(|end| local.ends_with(end))
}

/// What the graph holds for the lexicon, read with a few scans (or, after a
/// write, for the nodes it changed).
#[derive(Default)]
struct Harvest {
    /// The predicates whose literals name or describe nodes.
    predicates: Predicates,
    /// (subject, value, is primary name) for names; descriptions separately.
    names: Vec<(String, String, bool)>,
    descriptions: Vec<(String, String)>,
    types: Vec<(String, String)>,
    classes: Vec<String>,
    properties: Vec<String>,
}

fn harvest(store: &Store) -> Result<Harvest, RetrieveError> {
    // Every predicate, then whether the few that look like names or
    // descriptions carry literals. A test on every triple's object
    // (`isLiteral(?o)` in the scan) makes Oxigraph decode each one: some
    // eight times the scan's cost.
    let predicates =
        sparql::run_whole_store(store, "SELECT DISTINCT ?p WHERE { ?s ?p ?o }".into())?;
    let mut name_predicates = Vec::new();
    let mut description_predicates = Vec::new();
    let mut properties = Vec::new();
    for row in &predicates.rows {
        let Some(p) = cell_text(row.first()) else {
            continue;
        };
        let (name, description) = (is_name_predicate(&p), is_description_predicate(&p));
        if (name || description) && has_literal_object(store, &p)? {
            if name {
                name_predicates.push(p.clone());
            } else {
                description_predicates.push(p.clone());
            }
        }
        properties.push(p);
    }
    let (class_kinds, property_kinds) = declaring_types();
    let kinds: Vec<kgfuse_graph::model::Term> = class_kinds
        .iter()
        .chain(&property_kinds)
        .filter_map(|k| NamedNode::new(k.as_str()).ok())
        .map(kgfuse_graph::model::Term::from)
        .collect();
    let declared = sparql::run_whole_store(
        store,
        format!(
            "SELECT DISTINCT ?x ?kind WHERE {{ ?x a ?kind . {} FILTER(isIRI(?x)) }}",
            sparql::values("kind", &kinds)
        ),
    )?;
    let mut classes = Vec::new();
    for row in &declared.rows {
        let (Some(x), Some(kind)) = (cell_text(row.first()), cell_text(row.get(1))) else {
            continue;
        };
        if class_kinds.contains(&kind) {
            classes.push(x);
        } else {
            properties.push(x);
        }
    }
    let predicates = Predicates {
        names: name_predicates,
        descriptions: description_predicates,
    };
    let (names, descriptions) =
        names_and_descriptions(&predicates, |of| store.graph().text_literals(of))?;
    // The types of the nodes that become entities (a primary name or a
    // description), in the order the query gives them; every type is a class.
    // Rows are consumed as they are read: the typed nodes outnumber the
    // entities (a function's parameters are typed, not named).
    let entities: HashSet<&str> = names
        .iter()
        .filter(|n| n.2)
        .map(|n| n.0.as_str())
        .chain(descriptions.iter().map(|d| d.0.as_str()))
        .collect();
    let typed = sparql::run_whole_store(
        store,
        // Blank nodes and literals are skipped below, not by `isIRI` in the
        // query, which would decode every term (3.1 s against 0.3 s for the
        // 947,161 typings of 100,000 synthetic functions).
        "SELECT ?s ?t WHERE { ?s a ?t }".into(),
    )?;
    let mut types = Vec::new();
    let mut type_iris: HashSet<String> = HashSet::new();
    for row in typed.rows {
        let mut cells = row.into_iter();
        let (Some(Some(GraphTerm::NamedNode(s))), Some(Some(GraphTerm::NamedNode(t)))) =
            (cells.next(), cells.next())
        else {
            continue;
        };
        let t = t.into_string();
        if entities.contains(s.as_str()) {
            types.push((s.into_string(), t.clone()));
        }
        type_iris.insert(t);
    }
    drop(entities);
    classes.extend(type_iris);
    classes.sort();
    classes.dedup();
    properties.sort();
    properties.dedup();
    Ok(Harvest {
        predicates,
        names,
        descriptions,
        types,
        classes,
        properties,
    })
}

/// Names (subject, value, whether a primary name) and descriptions (subject,
/// value): what `read` finds for the predicates (the whole graph's literals
/// of them, or some nodes').
type NamesAndDescriptions = (Vec<(String, String, bool)>, Vec<(String, String)>);

fn names_and_descriptions(
    predicates: &Predicates,
    read: impl Fn(&[NamedNode]) -> Result<Vec<kgfuse_graph::TextLiteral>, kgfuse_graph::GraphError>,
) -> Result<NamesAndDescriptions, RetrieveError> {
    let nodes = |iris: &[String]| -> Vec<NamedNode> {
        iris.iter()
            .filter_map(|p| NamedNode::new(p.as_str()).ok())
            .collect()
    };
    let names = read(&nodes(&predicates.names))?
        .into_iter()
        .map(|l| {
            let primary = !SECONDARY_NAMES.contains(&predicates.names[l.predicate].as_str());
            (l.subject, l.value, primary)
        })
        .collect();
    let descriptions = read(&nodes(&predicates.descriptions))?
        .into_iter()
        .map(|l| (l.subject, l.value))
        .collect();
    Ok((names, descriptions))
}

/// The types that declare a node a class, and those that declare it a
/// property.
fn declaring_types() -> ([String; 2], [String; 3]) {
    use kgfuse_core::vocab::{OWL, RDF, RDFS};
    (
        [format!("{OWL}Class"), format!("{RDFS}Class")],
        [
            format!("{RDF}Property"),
            format!("{OWL}ObjectProperty"),
            format!("{OWL}DatatypeProperty"),
        ],
    )
}

/// Most nodes one query of [`harvest_nodes`] names.
const NODES_PER_QUERY: usize = 256;

/// [`harvest`] for `nodes` only: their names, descriptions and types, and
/// whether each is a class or a property anywhere in the graph. `known` are the
/// name and description predicates of the last whole reading; a changed node
/// that is a new one joins them (its subjects are changed nodes too).
fn harvest_nodes(
    store: &Store,
    nodes: &BTreeSet<String>,
    known: &Predicates,
) -> Result<Harvest, RetrieveError> {
    let mut predicates = known.clone();
    for node in nodes {
        let (name, description) = (is_name_predicate(node), is_description_predicate(node));
        let listed = predicates.names.contains(node) || predicates.descriptions.contains(node);
        if (name || description) && !listed && has_literal_object(store, node)? {
            if name {
                predicates.names.push(node.clone());
            } else {
                predicates.descriptions.push(node.clone());
            }
        }
    }
    let iris: Vec<String> = nodes.iter().cloned().collect();
    let (names, descriptions) =
        names_and_descriptions(&predicates, |of| store.graph().text_literals_of(&iris, of))?;
    let mut harvest = Harvest {
        predicates,
        names,
        descriptions,
        ..Harvest::default()
    };
    let terms: Vec<kgfuse_graph::model::Term> = nodes
        .iter()
        .filter_map(|n| NamedNode::new(n.as_str()).ok())
        .map(kgfuse_graph::model::Term::from)
        .collect();
    let (class_kinds, property_kinds) = declaring_types();
    for chunk in terms.chunks(NODES_PER_QUERY) {
        let typed = sparql::run_whole_store(
            store,
            format!(
                "SELECT ?s ?t WHERE {{ {} ?s a ?t FILTER(isIRI(?t)) }}",
                sparql::values("s", chunk)
            ),
        )?;
        for row in &typed.rows {
            let (Some(s), Some(t)) = (cell_text(row.first()), cell_text(row.get(1))) else {
                continue;
            };
            if class_kinds.contains(&t) {
                harvest.classes.push(s.clone());
            } else if property_kinds.contains(&t) {
                harvest.properties.push(s.clone());
            }
            harvest.types.push((s, t));
        }
        for (pattern, into) in [
            ("?x a ?n FILTER(isIRI(?x))", &mut harvest.classes),
            ("?x ?n ?y", &mut harvest.properties),
        ] {
            let used = sparql::run_whole_store(
                store,
                format!(
                    "SELECT ?n WHERE {{ {} FILTER EXISTS {{ {pattern} }} }}",
                    sparql::values("n", chunk)
                ),
            )?;
            into.extend(used.rows.iter().filter_map(|row| cell_text(row.first())));
        }
    }
    for list in [&mut harvest.classes, &mut harvest.properties] {
        list.sort();
        list.dedup();
    }
    Ok(harvest)
}

/// Whether some triple of `predicate` has a literal object (the scan stops
/// at the first).
fn has_literal_object(store: &Store, predicate: &str) -> Result<bool, RetrieveError> {
    let Ok(predicate) = NamedNode::new(predicate) else {
        return Ok(false);
    };
    let found = sparql::run_whole_store(
        store,
        format!("SELECT ?o WHERE {{ ?s {predicate} ?o FILTER(isLiteral(?o)) }} LIMIT 1"),
    )?;
    Ok(!found.rows.is_empty())
}

/// One question word per matched name part (index in `parts`, word): where a part
/// occurs several times, the placement with the narrowest span of words wins
/// ("graduate" in "graduate students take GraduateCourse0" is word 1 for the class
/// graduate student, not the course's word).
fn place(parts: &[String], matched: &Touched) -> Vec<(usize, usize)> {
    let found: Vec<(usize, &Vec<usize>)> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| matched.get(p).map(|(_, words)| (i, words)))
        .filter(|(_, words)| !words.is_empty())
        .collect();
    let Some((_, starts)) = found.first() else {
        return Vec::new();
    };
    let mut best: Option<(usize, Vec<(usize, usize)>)> = None;
    for &start in *starts {
        let mut placed = vec![(found[0].0, start)];
        let mut previous = start;
        for (part, words) in found.iter().skip(1) {
            let nearest = words
                .iter()
                .copied()
                .min_by_key(|w| (w.abs_diff(previous), *w))
                .unwrap_or(previous);
            placed.push((*part, nearest));
            previous = nearest;
        }
        let low = placed.iter().map(|p| p.1).min().unwrap_or(start);
        let high = placed.iter().map(|p| p.1).max().unwrap_or(start);
        if best.as_ref().is_none_or(|(span, _)| high - low < *span) {
            best = Some((high - low, placed));
        }
    }
    best.map(|(_, placed)| placed).unwrap_or_default()
}

impl kgfuse_store::WholeStore for Lexicon {}

/// What the harvested nodes make: one [`Source`] per lexicon entry.
fn sources(harvest: &Harvest) -> Vec<Source> {
    let is_class: HashSet<&str> = harvest.classes.iter().map(String::as_str).collect();
    let is_property: HashSet<&str> = harvest.properties.iter().map(String::as_str).collect();
    let role_of = |iri: &str| {
        if is_class.contains(iri) {
            Role::Class
        } else if is_property.contains(iri) {
            Role::Property
        } else {
            Role::Entity
        }
    };
    // Entities: nodes with a primary name or a description.
    let mut texts: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    for (subject, value, _) in harvest.names.iter().filter(|n| n.2) {
        texts.entry(subject).or_default().0.push(value);
    }
    for (subject, value) in &harvest.descriptions {
        texts.entry(subject).or_default().1.push(value);
    }
    for (subject, value, primary) in &harvest.names {
        if !primary && let Some(entry) = texts.get_mut(subject.as_str()) {
            entry.0.push(value);
        }
    }
    let mut kinds: HashMap<&str, Vec<&str>> = HashMap::new();
    for (s, t) in &harvest.types {
        kinds.entry(s).or_default().push(local_name(t));
    }
    let mut out = Vec::with_capacity(texts.len());
    for (iri, (names, descriptions)) in &texts {
        let role = role_of(iri);
        let mut names = names.clone();
        // A class's or property's identifier is a name people use too
        // (LUBM labels `emailAddress` "can be reached at").
        if role != Role::Entity {
            names.push(local_name(iri));
        }
        names.sort_unstable();
        names.dedup();
        out.push(Source {
            iri: (*iri).to_owned(),
            role,
            kinds: kinds
                .get(iri)
                .map(|k| k.iter().map(|k| (*k).to_owned()).collect())
                .unwrap_or_default(),
            names: names.into_iter().map(str::to_owned).collect(),
            descriptions: if role == Role::Entity {
                descriptions.iter().map(|d| (*d).to_owned()).collect()
            } else {
                Vec::new()
            },
        });
    }
    // Classes and properties without a label are named by their local names.
    let mut named: HashSet<&str> = texts.keys().copied().collect();
    for iri in harvest.classes.iter().chain(&harvest.properties) {
        if named.insert(iri.as_str()) {
            out.push(Source {
                iri: iri.clone(),
                role: role_of(iri),
                kinds: Vec::new(),
                names: vec![local_name(iri).to_owned()],
                descriptions: Vec::new(),
            });
        }
    }
    out
}

/// The lock that [`Lexicon::open`] holds for the index in `dir`, shared by
/// every store of the process opened on that directory.
fn opening_lock(dir: &std::path::Path) -> Arc<std::sync::Mutex<()>> {
    static LOCKS: std::sync::LazyLock<
        std::sync::Mutex<HashMap<std::path::PathBuf, Arc<std::sync::Mutex<()>>>>,
    > = std::sync::LazyLock::new(Default::default);
    let mut locks = LOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(locks.entry(dir.to_owned()).or_default())
}

impl Lexicon {
    /// The store's lexicon: its index read as it is when the store has not
    /// changed since it was last brought in step, else brought in step first
    /// (entries that changed rewritten, the rest kept). Kept until the next write.
    pub fn of(store: &Store) -> Result<Arc<Self>, RetrieveError> {
        store.derived(|| Self::open(store))
    }

    fn open(store: &Store) -> Result<Self, RetrieveError> {
        let dir = store.dir().join(LEXICON_DIR);
        // One thread of the process brings a directory's index in step at a
        // time; the others then find it in step and read it (a server's
        // requests after a write would otherwise each read the graph and wait
        // for the index's writer in turn).
        let lock = opening_lock(&dir);
        let _opening = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let version = store.content_version()?;
        let index = match LexiconIndex::open(&dir) {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!("{e}; the lexicon is built in memory for this process");
                LexiconIndex::in_memory()?
            }
        };
        let stamp = index.stamp();
        if version.is_some() && stamp.content_version == version {
            let lexicon = Self::reading(index)?;
            tracing::info!(
                entries = lexicon.entries,
                dir = %dir.display(),
                "lexicon: read from its index, in step with the store"
            );
            return Ok(lexicon);
        }
        let started = std::time::Instant::now();
        let changed = match (stamp.content_version, version) {
            (Some(indexed), Some(now)) if indexed < now => store.changed_between(indexed, now)?,
            _ => None,
        };
        let (changes, read) = match &changed {
            Some(nodes) => {
                let harvest = harvest_nodes(store, nodes, &stamp.predicates)?;
                let stamp = Stamp::new(version, harvest.predicates.clone());
                (
                    index.write_nodes(nodes, &sources(&harvest), &stamp)?,
                    "the written nodes",
                )
            }
            None => {
                let harvest = harvest(store)?;
                let stamp = Stamp::new(version, harvest.predicates.clone());
                (index.write(&sources(&harvest), &stamp)?, "the whole graph")
            }
        };
        let lexicon = Self::reading(index)?;
        tracing::info!(
            entries = lexicon.entries,
            read,
            written = changes.written,
            removed = changes.removed,
            unchanged = changes.unchanged,
            elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            dir = %dir.display(),
            "lexicon: index brought in step with the store"
        );
        Ok(lexicon)
    }

    /// What bringing the index in step with the graph would change, written
    /// nowhere (`kgfuse check`), when the index says it is in step with the
    /// store's content version: all zero but `unchanged` when it is. `None` when
    /// the index is behind (not built yet, or the store written since): the next
    /// question brings it in step, as it is meant to.
    pub fn check(store: &Store) -> Result<Option<Changes>, RetrieveError> {
        let index = LexiconIndex::open(&store.dir().join(LEXICON_DIR))?;
        let version = store.content_version()?;
        if version.is_none() || index.stamp().content_version != version {
            return Ok(None);
        }
        Ok(Some(index.differences(&sources(&harvest(store)?))?))
    }

    /// Brings the index in step with the graph whatever its stamp says
    /// (`kgfuse check --repair`).
    pub fn repair(store: &Store) -> Result<Changes, RetrieveError> {
        let index = LexiconIndex::open(&store.dir().join(LEXICON_DIR))?;
        let harvest = harvest(store)?;
        let stamp = Stamp::new(store.content_version()?, harvest.predicates.clone());
        Ok(index.write(&sources(&harvest), &stamp)?)
    }

    /// A lexicon of `sources` alone, in memory (tests).
    #[cfg(test)]
    fn of_sources(sources: &[Source]) -> Self {
        let index = LexiconIndex::in_memory().expect("index in memory");
        index
            .write(sources, &Stamp::new(None, Predicates::default()))
            .expect("written");
        Self::reading(index).expect("read")
    }

    fn reading(index: LexiconIndex) -> Result<Self, RetrieveError> {
        let searcher = index.searcher();
        let entities =
            index::entity_documents(&searcher, &index.fields).map_err(|e| index.failed(e))?;
        Ok(Self {
            entries: searcher.num_docs(),
            entities,
            searcher,
            index,
        })
    }

    fn failed(&self, source: tantivy::TantivyError) -> RetrieveError {
        self.index.failed(source).into()
    }

    /// The entry stored at `address`.
    fn load(&self, address: DocAddress) -> Result<Arc<Entry>, RetrieveError> {
        let doc: TantivyDocument = self.searcher.doc(address).map_err(|e| self.failed(e))?;
        let fields = &self.index.fields;
        let first = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        let all = |field| -> Vec<String> {
            doc.get_all(field)
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let names = all(fields.names);
        Ok(Arc::new(Entry {
            iri: first(fields.iri),
            role: index::role_of_number(
                doc.get_first(fields.role)
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0),
            ),
            kinds: all(fields.kinds),
            name: names.first().cloned().unwrap_or_default(),
            text: first(fields.text),
            names,
        }))
    }

    /// The entries of one role, by IRI.
    pub fn entries_of(&self, role: Role) -> Result<Vec<Arc<Entry>>, RetrieveError> {
        let query = self.role_query(role);
        let found = self
            .searcher
            .search(&query, &DocSetCollector)
            .map_err(|e| self.failed(e))?;
        let mut out = found
            .into_iter()
            .map(|address| self.load(address))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by(|a, b| a.iri.cmp(&b.iri));
        Ok(out)
    }

    fn role_query(&self, role: Role) -> TermQuery {
        TermQuery::new(
            tantivy::Term::from_field_u64(self.index.fields.role, index::role_number(role)),
            IndexRecordOption::Basic,
        )
    }

    /// The entry of an IRI.
    pub fn find(&self, iri: &str) -> Result<Option<Arc<Entry>>, RetrieveError> {
        let query = TermQuery::new(
            tantivy::Term::from_field_text(self.index.fields.iri, iri),
            IndexRecordOption::Basic,
        );
        let found = self
            .searcher
            .search(&query, &TopDocs::with_limit(1).order_by_score())
            .map_err(|e| self.failed(e))?;
        found
            .first()
            .map(|(_, address)| self.load(*address))
            .transpose()
    }

    /// The entry of an IRI for display and ranking, where a failed lookup
    /// reads as no entry (and is logged): the index answered the question's
    /// earlier reads, so a failure here is rare and only loses a name.
    pub fn entry_of(&self, iri: &str) -> Option<Arc<Entry>> {
        self.find(iri).unwrap_or_else(|e| {
            tracing::warn!("looking up {iri} in the lexicon: {e}");
            None
        })
    }

    /// How many entries' names hold `term`.
    fn name_df(&self, term: &str) -> u64 {
        self.searcher
            .doc_freq(&tantivy::Term::from_field_text(
                self.index.fields.name_terms,
                term,
            ))
            .unwrap_or(0)
    }

    /// Inverse document frequency of a name term among the entries' names.
    pub fn name_idf(&self, term: &str) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let n = self.entries.max(1) as f32;
        #[allow(clippy::cast_precision_loss)]
        let df = self.name_df(term) as f32;
        (1.0 + n / (df + 1.0)).ln()
    }

    /// The `k` entity entries that best match `text` by BM25, optionally only those
    /// `keep` accepts; ties in IRI order.
    pub fn bm25(
        &self,
        text: &str,
        k: usize,
        keep: &dyn Fn(&Entry) -> bool,
    ) -> Result<Vec<LexicalHit>, RetrieveError> {
        let mut terms: Vec<String> = analyze_question(text).into_iter().map(|t| t.text).collect();
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| -> (Occur, Box<dyn Query>) {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(
                        tantivy::Term::from_field_text(self.index.fields.body, t),
                        IndexRecordOption::WithFreqs,
                    )),
                )
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let statistics = EntityStatistics {
            searcher: &self.searcher,
            entities: self.entities,
        };
        // Fetched beyond k for the entries `keep` refuses and for ties at the
        // cut; more when too many were refused.
        let mut limit = k + k / 2 + 8;
        loop {
            let top = self
                .searcher
                .search_with_statistics_provider(
                    &query,
                    &TopDocs::with_limit(limit).order_by_score(),
                    &statistics,
                )
                .map_err(|e| self.failed(e))?;
            let exhausted = top.len() < limit;
            let mut hits = Vec::with_capacity(top.len());
            for (score, address) in top {
                let entry = self.load(address)?;
                if keep(&entry) {
                    hits.push(LexicalHit { entry, score });
                }
            }
            if hits.len() > k || exhausted {
                hits.sort_by(|a, b| {
                    b.score
                        .total_cmp(&a.score)
                        .then_with(|| a.entry.iri.cmp(&b.entry.iri))
                });
                hits.truncate(k);
                return Ok(hits);
            }
            limit = limit.saturating_mul(4);
        }
    }

    /// Name terms that match a question part: the part itself, and by prefix
    /// (either way) when both are long enough; with the weight of the match.
    fn matching_terms(&self, part: &str) -> Result<Vec<(String, f32)>, RetrieveError> {
        let mut out: Vec<(String, f32)> = Vec::new();
        if self.name_df(part) > 0 {
            out.push((part.to_owned(), 1.0));
        }
        if part.chars().count() < MIN_PREFIX {
            return Ok(out);
        }
        // Name terms extending the part (`teach` -> `teacher`), the shortest
        // first.
        let mut extended: BTreeSet<(usize, String)> = BTreeSet::new();
        let upper = [part.as_bytes(), &[0xFF]].concat();
        for segment in self.searcher.segment_readers() {
            let inverted = segment
                .inverted_index(self.index.fields.name_terms)
                .map_err(|e| self.failed(e))?;
            let mut stream = inverted
                .terms()
                .range()
                .gt(part.as_bytes())
                .lt(&upper)
                .into_stream()
                .map_err(|e| self.failed(e.into()))?;
            while stream.advance() {
                let key = stream.key();
                // Once full, a term no shorter than the longest kept would go
                // again at once: skipped before it is copied (a common word
                // begins 50,000 identifiers of a large store).
                let full = extended.len() >= MAX_EXTENSIONS;
                if full
                    && extended
                        .last()
                        .is_some_and(|(len, last)| (key.len(), key) >= (*len, last.as_bytes()))
                {
                    continue;
                }
                if let Ok(term) = std::str::from_utf8(key) {
                    extended.insert((term.len(), term.to_owned()));
                    if extended.len() > MAX_EXTENSIONS {
                        extended.pop_last();
                    }
                }
            }
        }
        out.extend(extended.into_iter().map(|(_, t)| (t, PREFIX_WEIGHT)));
        // Name terms the part extends (`advisor` -> `advis`).
        for (end, _) in part.char_indices().skip(MIN_PREFIX) {
            if self.name_df(&part[..end]) > 0 {
                out.push((part[..end].to_owned(), PREFIX_WEIGHT));
            }
        }
        Ok(out)
    }

    /// Every name of the entries of `role` whose names best share the
    /// question's terms ([`CANDIDATES`] at most), scored by coverage both ways;
    /// one match per entry, its best name.
    pub fn name_matches(
        &self,
        question: &[Term],
        role: Role,
    ) -> Result<Vec<NameMatch>, RetrieveError> {
        // Question part -> (words it occurs in); whole identifiers separately.
        let mut parts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut wholes: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for term in question {
            let map = if term.whole { &mut wholes } else { &mut parts };
            map.entry(term.text.as_str())
                .or_default()
                .extend(term.word..term.word + term.span);
        }
        let mut touched: Touched = HashMap::new();
        for (part, words) in &parts {
            for (term, weight) in self.matching_terms(part)? {
                let slot = touched.entry(term).or_insert((0.0, Vec::new()));
                slot.0 = slot.0.max(weight);
                slot.1.extend(words);
            }
        }
        let mut idf: HashMap<String, f32> = HashMap::new();
        let mut out = Vec::new();
        for address in self.candidates(&touched, &wholes, role)? {
            let entry = self.load(address)?;
            let best = entry
                .names
                .iter()
                .filter_map(|name| {
                    self.name_match(
                        &entry,
                        &NameTerms::of(name),
                        &touched,
                        question,
                        &wholes,
                        &mut idf,
                    )
                })
                .reduce(|best, m| if m.score() > best.score() { m } else { best });
            out.extend(best);
        }
        Ok(out)
    }

    /// The entries of `role` whose names best share the touched terms: BM25
    /// over the name terms, each term weighted by how it matched.
    fn candidates(
        &self,
        touched: &Touched,
        wholes: &BTreeMap<&str, Vec<usize>>,
        role: Role,
    ) -> Result<Vec<DocAddress>, RetrieveError> {
        let field = self.index.fields.name_terms;
        let term_query = |text: &str, weight: f32| -> (Occur, Box<dyn Query>) {
            let query = TermQuery::new(
                tantivy::Term::from_field_text(field, text),
                IndexRecordOption::WithFreqs,
            );
            (
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(query), weight)),
            )
        };
        let mut terms: Vec<(Occur, Box<dyn Query>)> = touched
            .iter()
            .map(|(text, (weight, _))| term_query(text, *weight))
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        terms.extend(wholes.keys().map(|w| term_query(w, 1.0)));
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(Box::new(self.role_query(role)), 0.0)),
            ),
            (Occur::Must, Box::new(BooleanQuery::new(terms))),
        ]);
        let found = self
            .searcher
            .search(&query, &TopDocs::with_limit(CANDIDATES).order_by_score())
            .map_err(|e| self.failed(e))?;
        Ok(found.into_iter().map(|(_, address)| address).collect())
    }

    /// One name of a candidate scored: how much of the name the question
    /// covers, how much of the touched question words the name explains, and the
    /// words. `None` when the question touches none of it.
    fn name_match(
        &self,
        entry: &Arc<Entry>,
        name: &NameTerms,
        touched: &Touched,
        question: &[Term],
        wholes: &BTreeMap<&str, Vec<usize>>,
        idf: &mut HashMap<String, f32>,
    ) -> Option<NameMatch> {
        let mut idf_of = |term: &str| -> f32 {
            if let Some(&value) = idf.get(term) {
                return value;
            }
            let value = self.name_idf(term);
            idf.insert(term.to_owned(), value);
            value
        };
        let whole_words: Vec<usize> = name
            .wholes
            .iter()
            .filter_map(|w| wholes.get(w.as_str()))
            .flatten()
            .copied()
            .collect();
        let total: f32 = name.parts.iter().map(|p| idf_of(p)).sum();
        let covered: f32 = name
            .parts
            .iter()
            .filter_map(|p| touched.get(p).map(|(w, _)| (p, *w)))
            .map(|(p, w)| w * idf_of(p))
            .sum();
        let placed = place(&name.parts, touched);
        let mut words: Vec<usize> = placed.iter().map(|(_, w)| *w).collect();
        let by_whole = !whole_words.is_empty();
        let name_coverage = if whole_words.is_empty() {
            if total > 0.0 { covered / total } else { 0.0 }
        } else {
            words = whole_words;
            1.0
        };
        words.sort_unstable();
        words.dedup();
        if words.is_empty() {
            return None;
        }
        let last = name.parts.len().saturating_sub(1);
        let head_words: Vec<usize> = placed
            .iter()
            .filter(|(part, _)| *part == last)
            .map(|(_, w)| *w)
            .collect();
        let mut word_coverage = word_coverage(question, &name.parts, &words, &mut idf_of);
        let (in_order, gap) = reading(question, &placed, &words, by_whole);
        if !in_order {
            word_coverage *= OUT_OF_ORDER;
        }
        if gap {
            word_coverage *= OUT_OF_ORDER;
        }
        Some(NameMatch {
            entry: Arc::clone(entry),
            name_coverage,
            parts_coverage: if total > 0.0 { covered / total } else { 0.0 },
            word_coverage,
            words,
            head_words,
        })
    }
}

/// How much of the touched question `words` a name of `name_parts` explains,
/// weighted by the words' idf.
fn word_coverage(
    question: &[Term],
    name_parts: &[String],
    words: &[usize],
    idf_of: &mut dyn FnMut(&str) -> f32,
) -> f32 {
    let mut word_total = 0.0;
    let mut word_covered = 0.0;
    for term in question
        .iter()
        .filter(|t| !t.whole && words.contains(&t.word))
    {
        let idf = idf_of(&term.text);
        word_total += idf;
        if let Some(best) = name_parts
            .iter()
            .filter_map(|p| part_match(&term.text, p))
            .reduce(f32::max)
        {
            word_covered += best * idf;
        }
    }
    if word_total > 0.0 {
        word_covered / word_total
    } else {
        1.0
    }
}

/// Whether the name's parts were found in its order, and whether other words of
/// the question fall between them. Parts in another order ("2 of department" for
/// Department2), or with other words between ("professor ... 0" for
/// FullProfessor0 in "full professor 2 of department 0"), are weaker readings.
fn reading(
    question: &[Term],
    placed: &[(usize, usize)],
    words: &[usize],
    by_whole: bool,
) -> (bool, bool) {
    let in_order = by_whole || placed.windows(2).all(|w| w[0].1 <= w[1].1);
    let gap = !by_whole
        && words
            .first()
            .zip(words.last())
            .is_some_and(|(first, last)| {
                question.iter().any(|t| {
                    !t.whole && t.word > *first && t.word < *last && !words.contains(&t.word)
                })
            });
    (in_order, gap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon(entries: &[(&str, Role, &[&str], &[&str])]) -> Lexicon {
        let sources: Vec<Source> = entries
            .iter()
            .map(|(iri, role, names, descriptions)| Source {
                iri: (*iri).to_owned(),
                role: *role,
                kinds: Vec::new(),
                names: names.iter().map(|n| (*n).to_owned()).collect(),
                descriptions: descriptions.iter().map(|d| (*d).to_owned()).collect(),
            })
            .collect();
        Lexicon::of_sources(&sources)
    }

    fn best(lexicon: &Lexicon, question: &str, role: Role) -> Vec<(String, f32)> {
        let mut matches = lexicon
            .name_matches(&analyze(question), role)
            .expect("matches");
        matches.sort_by(|a, b| b.score().total_cmp(&a.score()));
        matches
            .into_iter()
            .map(|m| (m.entry.iri.clone(), m.score()))
            .collect()
    }

    #[test]
    fn partial_names_and_identifiers_match_by_coverage() {
        let lexicon = lexicon(&[
            ("urn:anna", Role::Entity, &["Anna Keller"], &[]),
            ("urn:bob", Role::Entity, &["Bob Berg"], &[]),
            ("urn:gc0", Role::Entity, &["GraduateCourse0"], &[]),
            ("urn:c0", Role::Entity, &["Course0"], &[]),
            ("urn:advisor", Role::Property, &["advisor"], &[]),
        ]);
        let found = best(&lexicon, "Where does Dr. Keller work?", Role::Entity);
        assert_eq!(found[0].0, "urn:anna");
        assert!(found[0].1 > 0.3 && found[0].1 < 1.0, "{found:?}");
        let found = best(&lexicon, "Who takes GraduateCourse0?", Role::Entity);
        assert_eq!(found[0], ("urn:gc0".to_owned(), 1.0));
        assert!(
            found[1].1 < 1.0,
            "Course0 explains only part of the word: {found:?}"
        );
        let found = best(&lexicon, "who takes graduate course 0", Role::Entity);
        assert_eq!(found[0].0, "urn:gc0");
        let found = best(&lexicon, "Who advises her?", Role::Property);
        assert_eq!(found[0].0, "urn:advisor");
    }

    /// `part_match` is `matching_terms` restricted to one name part: the same
    /// weight for every pair, exact, extended either way, short or long.
    #[test]
    fn a_part_matches_as_the_index_lookup_would() {
        let names = [
            "teacher",
            "teach",
            "advis",
            "advisor",
            "fee",
            "feed",
            "decode_fee_12",
            "école",
        ];
        let lexicon = lexicon(
            &names
                .iter()
                .map(|n| (*n, Role::Entity, std::slice::from_ref(n), &[][..]))
                .collect::<Vec<_>>(),
        );
        let parts: Vec<String> = names
            .iter()
            .flat_map(|n| analyze(n))
            .map(|t| t.text)
            .collect();
        for question in [
            "teach", "teacher", "advisor", "advis", "fee", "feed", "decod", "écol", "éco",
        ] {
            let looked_up = lexicon.matching_terms(question).expect("terms");
            for part in &parts {
                let expected = looked_up
                    .iter()
                    .filter(|(t, _)| t == part)
                    .map(|(_, w)| *w)
                    .reduce(f32::max);
                assert_eq!(part_match(question, part), expected, "{question} ~ {part}");
            }
        }
    }

    /// A part that begins more name terms than are kept extends to the
    /// shortest of them, ties in text order.
    #[test]
    fn a_part_extends_to_the_shortest_terms_it_begins() {
        // `ledger`, then 0-4 letters `k`, then the number in letters `a`-`j`.
        let names: Vec<String> = (0..150usize)
            .map(|i| {
                let number: String = format!("{i:03}")
                    .bytes()
                    .map(|digit| char::from(digit - b'0' + b'a'))
                    .collect();
                format!("ledger{}{number}", "k".repeat(i % 5))
            })
            .collect();
        let borrowed: Vec<[&str; 1]> = names.iter().map(|n| [n.as_str()]).collect();
        let lexicon = lexicon(
            &borrowed
                .iter()
                .map(|n| (n[0], Role::Entity, &n[..], &[][..]))
                .collect::<Vec<_>>(),
        );
        let mut terms: Vec<String> = names
            .iter()
            .flat_map(|n| analyze(n))
            .map(|t| t.text)
            .collect();
        terms.retain(|t| t.starts_with("ledger") && t != "ledger");
        terms.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        terms.dedup();
        assert!(terms.len() > MAX_EXTENSIONS, "{} terms", terms.len());
        let extended: Vec<String> = lexicon
            .matching_terms("ledger")
            .expect("terms")
            .into_iter()
            .filter(|(t, _)| t != "ledger")
            .map(|(t, _)| t)
            .collect();
        assert_eq!(extended, terms[..MAX_EXTENSIONS]);
    }

    #[test]
    fn bm25_prefers_the_named_function_and_ignores_code() {
        let lexicon = lexicon(&[
            (
                "urn:get_content_type",
                Role::Entity,
                &["get_content_type"],
                &["Return the message's content type."],
            ),
            (
                "urn:set_payload",
                Role::Entity,
                &["set_payload"],
                &["Set the payload to the given value."],
            ),
        ]);
        let hits = lexicon
            .bm25("content type of a message", 5, &|_| true)
            .expect("hits");
        assert_eq!(hits[0].entry.iri, "urn:get_content_type");
        assert_eq!(hits.len(), 1);
    }

    /// Tantivy's BM25, with entity documents as the collection, gives the
    /// scores of Robertson's formula (k1 1.2, b 0.75) over the same terms
    /// (field lengths this short are kept exactly).
    #[test]
    fn bm25_scores_are_robertsons() {
        let lexicon = lexicon(&[
            (
                "urn:a",
                Role::Entity,
                &["Calendar"],
                &["A date and a date."],
            ),
            ("urn:b", Role::Entity, &["Clock"], &["The date."]),
            ("urn:c", Role::Entity, &["Disk"], &["Stores files."]),
            ("urn:Date", Role::Class, &["Date"], &[]),
        ]);
        let hits = lexicon.bm25("date", 3, &|_| true).expect("hits");
        // Documents: names twice, descriptions once; the class has none.
        let (length_a, length_b, length_c) = (4.0_f32, 3.0, 4.0);
        let average = (length_a + length_b + length_c) / 3.0;
        let idf = ((3.0_f32 - 2.0 + 0.5) / (2.0 + 0.5) + 1.0).ln();
        let score = |tf: f32, length: f32| {
            idf * tf * 2.2 / (tf + 1.2 * (1.0 - 0.75 + 0.75 * length / average))
        };
        let names: Vec<&str> = hits.iter().map(|h| h.entry.iri.as_str()).collect();
        assert_eq!(names, ["urn:a", "urn:b"]);
        let (a, b) = (score(2.0, length_a), score(1.0, length_b));
        assert!((hits[0].score - a).abs() < 1e-4, "{} vs {a}", hits[0].score);
        assert!((hits[1].score - b).abs() < 1e-4, "{} vs {b}", hits[1].score);
    }

    /// After each write, reading only the nodes it changed leaves the index as
    /// reading the whole graph would: `check` (which reads the whole graph)
    /// finds nothing to write or remove, through new instances, a new name
    /// predicate, a node first used as a type and a property first used.
    #[tokio::test]
    async fn reading_the_written_nodes_gives_what_reading_the_whole_graph_gives() {
        let (dir, store) = crate::testing::with_turtle(crate::testing::EMPLOYEES).await;
        Lexicon::of(&store).expect("built from the whole graph");
        let writes = [
            "ex:carol a ex:Employee ; rdfs:label \"Carol Jones\" ; ex:worksFor ex:acme .",
            "ex:carol ex:nickname \"Caz\" . ex:acme rdfs:comment \"Makes anvils.\" .",
            "ex:dave a ex:Contractor ; rdfs:label \"Dave\" .",
            "ex:dave ex:reportsTo ex:carol .",
        ];
        for (i, triples) in writes.iter().enumerate() {
            let turtle = format!(
                "@prefix ex: <http://example.org/> .\n\
                 @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n{triples}\n"
            );
            let before = store.content_version().expect("version").expect("local");
            crate::testing::load_turtle(&store, dir.path(), &format!("write{i}.ttl"), &turtle)
                .await;
            let after = store.content_version().expect("version").expect("local");
            let changed = store.changed_between(before, after).expect("changes");
            assert!(changed.is_some(), "write {i} recorded its nodes");
            let lexicon = Lexicon::of(&store).expect("brought in step");
            let changes = Lexicon::check(&store)
                .expect("check")
                .expect("the index is in step with the store");
            assert_eq!(
                (changes.written, changes.removed),
                (0, 0),
                "write {i}: {changes:?}"
            );
            assert_eq!(u64::try_from(changes.unchanged).ok(), Some(lexicon.entries));
        }
        let lexicon = Lexicon::of(&store).expect("lexicon");
        let role_of = |iri: &str| lexicon.find(iri).expect("find").map(|e| e.role);
        assert_eq!(role_of("http://example.org/Contractor"), Some(Role::Class));
        assert_eq!(
            role_of("http://example.org/reportsTo"),
            Some(Role::Property)
        );
        let carol = lexicon
            .find("http://example.org/carol")
            .expect("find")
            .expect("carol");
        assert!(carol.names.contains(&"Caz".to_owned()), "{carol:?}");
        // Her asserted type and the one RDFS entails from it.
        assert!(carol.kinds.contains(&"Employee".to_owned()), "{carol:?}");
        assert!(carol.kinds.contains(&"Person".to_owned()), "{carol:?}");
    }

    /// Threads that ask for the lexicon together after a write all get it with
    /// the write in it, and the index ends in step with the graph.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn threads_asking_together_share_one_update() {
        let (dir, store) = crate::testing::with_turtle(crate::testing::EMPLOYEES).await;
        Lexicon::of(&store).expect("built");
        let path = dir.path().join("more.ttl");
        std::fs::write(
            &path,
            "<http://example.org/erin> <http://www.w3.org/2000/01/rdf-schema#label> \"Erin\" .\n",
        )
        .expect("write the file");
        store
            .load_files(
                &[path.as_path().into()],
                None,
                &kgfuse_core::progress::NoProgress,
            )
            .await
            .expect("load");
        let found: Vec<bool> = std::thread::scope(|scope| {
            let asks: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let lexicon = Lexicon::of(&store).expect("lexicon");
                        lexicon
                            .find("http://example.org/erin")
                            .expect("find")
                            .is_some()
                    })
                })
                .collect();
            asks.into_iter()
                .map(|a| a.join().expect("thread"))
                .collect()
        });
        assert_eq!(found, [true; 4]);
        let changes = Lexicon::check(&store).expect("check").expect("in step");
        assert_eq!((changes.written, changes.removed), (0, 0));
    }
}
