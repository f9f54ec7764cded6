//! The lexicon: every named node of the store, its names and descriptions as
//! search terms, built from the graph once per write (kept in
//! [`Store::derived`]).
//!
//! It serves two jobs that need the same analysis of text ([`analyze`]):
//!
//! - **BM25 over names and descriptions** ([`Lexicon::bm25`]): labels, aliases,
//!   names (identifiers split into words) count twice, comments, docstrings,
//!   signatures, definitions and document text once; code bodies are left out, so
//!   a function is found by what it is called and what it says it does;
//! - **label candidates for entity linking** ([`Lexicon::name_matches`]): how much
//!   of a node's name the question covers, and how much of the question's words the
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

use crate::RetrieveError;
use crate::sparql;
use crate::sparql::cell_text;
use analyze::{Term, analyze, analyze_question};
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::NamedNode;
use kgfuse_graph::model::Term as GraphTerm;
use kgfuse_store::Store;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

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

/// One node of the lexicon.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The node.
    pub iri: String,
    /// What it is.
    pub role: Role,
    /// Local names of its types (`Function`, `GraduateStudent`), shared by the
    /// entries of the same types.
    pub kinds: Arc<[String]>,
    /// Its first name, for display.
    pub name: String,
    /// Names and descriptions as one text (what BM25 scored), for display.
    pub text: String,
    /// Its names in [`Lexicon::names`].
    names: std::ops::Range<u32>,
}

/// One name of one entry, analysed: its terms in the lexicon's array of name
/// terms, the stemmed parts first (without repeats), then the whole identifiers
/// (`graduatestudent12`).
#[derive(Debug, Clone)]
struct Name {
    entry: u32,
    terms: std::ops::Range<u32>,
    /// How many of `terms` are parts.
    parts: u32,
}

/// A name of an entry that a question matches, and how well.
#[derive(Debug, Clone)]
pub struct NameMatch {
    /// Index of the entry.
    pub entry: u32,
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
    /// Index of the entry.
    pub entry: u32,
    /// BM25 score.
    pub score: f32,
}

/// BM25 parameters (Robertson's usual values).
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Names weigh this many times a description term in BM25.
const NAME_WEIGHT: f32 = 2.0;
/// A question part and a name part match by prefix when the shorter has this
/// many characters at least (`advis` ~ `advisor`, `teach` ~ `teacher`).
const MIN_PREFIX: usize = 4;
/// A prefix match counts this much of an exact one.
const PREFIX_WEIGHT: f32 = 0.8;
/// How a question part matches one name part, as [`Lexicon::matching_terms`]
/// would: 1 when equal, [`PREFIX_WEIGHT`] when one extends the other and the
/// shorter has [`MIN_PREFIX`] characters at least. Checked per name without
/// scanning the lexicon's terms: a common part such as `decod` extends thousands
/// of whole identifiers (`decodefee5897`), and scanning them for each of the
/// thousands of names it touches made linking quadratic in the lexicon's size.
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
/// Longest description text kept per entry for display.
const MAX_TEXT: usize = 1_500;

/// Name and description terms of every named node, each distinct term stored
/// once and every posting list in one array (a map of strings per list grew
/// the process by ~5 KiB a function; BENCHMARKS.md).
#[derive(Debug, Default)]
pub struct Lexicon {
    entries: Vec<Entry>,
    /// Entry indexes sorted by IRI, for [`Lexicon::find`].
    by_iri: Vec<u32>,
    /// By entry index: its place in [`Self::by_iri`], so that ties are broken
    /// by IRI without comparing strings ([`Lexicon::iri_order`]).
    iri_rank: Vec<u32>,
    /// Every term of every name and document.
    terms: Terms,
    names: Vec<Name>,
    /// The terms of every name, a name's in [`Name::terms`].
    name_terms: Vec<u32>,
    /// Name term -> names holding it (parts and wholes).
    name_postings: Lists<u32>,
    /// Terms some name holds, sorted by text for prefix scans.
    name_terms_sorted: Vec<u32>,
    /// Term -> number of entries whose names hold it.
    name_df: Vec<u32>,
    /// BM25 postings over entity documents: term -> (entry, weighted tf).
    postings: Lists<(u32, f32)>,
    doc_len: Vec<f32>,
    avg_len: f32,
    documents: u32,
}

/// Distinct terms, each held once, numbered in order of first use.
#[derive(Debug, Default)]
struct Terms {
    ids: HashMap<Arc<str>, u32>,
    texts: Vec<Arc<str>>,
}

impl Terms {
    /// The id of `text`, given it one if it has none.
    fn intern(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = u32::try_from(self.texts.len()).unwrap_or(u32::MAX);
        let text: Arc<str> = Arc::from(text);
        self.texts.push(Arc::clone(&text));
        self.ids.insert(text, id);
        id
    }

    fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    fn text(&self, id: u32) -> &str {
        &self.texts[id as usize]
    }

    fn len(&self) -> usize {
        self.texts.len()
    }
}

/// A list of items per term: one growable list each while the lexicon is built,
/// then all of them in one array ([`Lists::flatten`]).
#[derive(Debug)]
struct Lists<T> {
    building: Vec<Vec<T>>,
    /// Term `t`'s items are `items[starts[t]..starts[t + 1]]` once flattened.
    starts: Vec<usize>,
    items: Vec<T>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Self {
            building: Vec::new(),
            starts: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl<T: Copy + PartialEq> Lists<T> {
    /// Appends `item` to `term`'s list unless it is already its last one.
    fn push_new(&mut self, term: u32, item: T) {
        let term = term as usize;
        if self.building.len() <= term {
            self.building.resize_with(term + 1, Vec::new);
        }
        let list = &mut self.building[term];
        if list.last() != Some(&item) {
            list.push(item);
        }
    }

    /// Moves every list into one array, each list freed as it is moved.
    fn flatten(&mut self, terms: usize) {
        let building = std::mem::take(&mut self.building);
        self.starts = Vec::with_capacity(terms + 1);
        self.items = Vec::with_capacity(building.iter().map(Vec::len).sum());
        let mut lists = building.into_iter();
        for _ in 0..terms {
            self.starts.push(self.items.len());
            if let Some(list) = lists.next() {
                self.items.extend(list);
            }
        }
        self.starts.push(self.items.len());
    }

    /// `term`'s items (none before [`Lists::flatten`]).
    fn get(&self, term: u32) -> &[T] {
        let term = term as usize;
        match (self.starts.get(term), self.starts.get(term + 1)) {
            (Some(&start), Some(&end)) => &self.items[start..end],
            _ => &[],
        }
    }
}

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

/// What the graph holds for the lexicon, read with a few scans.
struct Harvest {
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
    let declared = sparql::run_whole_store(
        store,
        format!(
            "SELECT DISTINCT ?x ?kind WHERE {{ ?x a ?kind . VALUES ?kind {{ <{owl}Class> <{rdfs}Class> <{rdf}Property> <{owl}ObjectProperty> <{owl}DatatypeProperty> }} FILTER(isIRI(?x)) }}",
            owl = kgfuse_core::vocab::OWL,
            rdfs = kgfuse_core::vocab::RDFS,
            rdf = kgfuse_core::vocab::RDF,
        ),
    )?;
    let mut classes = Vec::new();
    for row in &declared.rows {
        let (Some(x), Some(kind)) = (cell_text(row.first()), cell_text(row.get(1))) else {
            continue;
        };
        if kind.ends_with("Class") {
            classes.push(x);
        } else {
            properties.push(x);
        }
    }
    let read = |iris: &[String]| -> Result<Vec<kgfuse_graph::TextLiteral>, RetrieveError> {
        let nodes: Vec<NamedNode> = iris
            .iter()
            .filter_map(|p| NamedNode::new(p.as_str()).ok())
            .collect();
        Ok(store.graph().text_literals(&nodes)?)
    };
    let names: Vec<(String, String, bool)> = read(&name_predicates)?
        .into_iter()
        .map(|l| {
            let primary = !SECONDARY_NAMES.contains(&name_predicates[l.predicate].as_str());
            (l.subject, l.value, primary)
        })
        .collect();
    let descriptions: Vec<(String, String)> = read(&description_predicates)?
        .into_iter()
        .map(|l| (l.subject, l.value))
        .collect();
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
        names,
        descriptions,
        types,
        classes,
        properties,
    })
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
fn place(parts: &[u32], matched: &HashMap<u32, (f32, Vec<usize>)>) -> Vec<(usize, usize)> {
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

impl Lexicon {
    /// The store's lexicon, built on first use after each write.
    pub fn of(store: &Store) -> Result<Arc<Self>, RetrieveError> {
        store.derived(|| Self::build(store))
    }

    fn build(store: &Store) -> Result<Self, RetrieveError> {
        let harvest = harvest(store)?;
        let mut lexicon = Self::default();
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
        // One shared list per distinct combination of types.
        let mut shared: HashMap<&[&str], Arc<[String]>> = HashMap::new();
        let no_kinds: Arc<[String]> = Arc::new([]);
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
            let entry_kinds = match kinds.get(iri) {
                Some(list) => Arc::clone(
                    shared
                        .entry(list.as_slice())
                        .or_insert_with(|| list.iter().map(|k| (*k).to_owned()).collect()),
                ),
                None => Arc::clone(&no_kinds),
            };
            let id = lexicon.add_entry(iri, role, entry_kinds, &names);
            if role == Role::Entity {
                lexicon.add_document(id, &names, descriptions);
            }
        }
        // Classes and properties without a label are named by their local names.
        let mut named: HashSet<&str> = texts.keys().copied().collect();
        for iri in harvest.classes.iter().chain(&harvest.properties) {
            if named.insert(iri.as_str()) {
                let role = role_of(iri);
                lexicon.add_entry(iri, role, Arc::clone(&no_kinds), &[local_name(iri)]);
            }
        }
        lexicon.finish();
        Ok(lexicon)
    }

    fn add_entry(&mut self, iri: &str, role: Role, kinds: Arc<[String]>, names: &[&str]) -> u32 {
        let id = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let first_name = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let mut seen_terms: Vec<u32> = Vec::new();
        for name in names {
            let terms = analyze(name);
            let mut parts: Vec<u32> = terms
                .iter()
                .filter(|t| !t.whole)
                .map(|t| self.terms.intern(&t.text))
                .collect();
            parts.dedup();
            let wholes: Vec<u32> = terms
                .iter()
                .filter(|t| t.whole)
                .map(|t| self.terms.intern(&t.text))
                .collect();
            if parts.is_empty() && wholes.is_empty() {
                continue;
            }
            let name_id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
            for &term in parts.iter().chain(&wholes) {
                self.name_postings.push_new(term, name_id);
                if !seen_terms.contains(&term) {
                    seen_terms.push(term);
                }
            }
            let start = u32::try_from(self.name_terms.len()).unwrap_or(u32::MAX);
            let parts_count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
            self.name_terms.extend(parts);
            self.name_terms.extend(wholes);
            self.names.push(Name {
                entry: id,
                terms: start..u32::try_from(self.name_terms.len()).unwrap_or(u32::MAX),
                parts: parts_count,
            });
        }
        for term in seen_terms {
            let term = term as usize;
            if self.name_df.len() <= term {
                self.name_df.resize(term + 1, 0);
            }
            self.name_df[term] += 1;
        }
        self.entries.push(Entry {
            iri: iri.to_owned(),
            role,
            kinds,
            name: names.first().map(|n| (*n).to_owned()).unwrap_or_default(),
            text: String::new(),
            names: first_name..u32::try_from(self.names.len()).unwrap_or(u32::MAX),
        });
        id
    }

    fn add_document(&mut self, id: u32, names: &[&str], descriptions: &[&str]) {
        let mut tf: HashMap<u32, f32> = HashMap::new();
        let mut length = 0.0;
        for (texts, weight) in [(names, NAME_WEIGHT), (descriptions, 1.0)] {
            for text in texts {
                for term in analyze(text) {
                    *tf.entry(self.terms.intern(&term.text)).or_default() += weight;
                    length += weight;
                }
            }
        }
        for (term, count) in tf {
            self.postings.push_new(term, (id, count));
        }
        let index = id as usize;
        if self.doc_len.len() <= index {
            self.doc_len.resize(index + 1, 0.0);
        }
        self.doc_len[index] = length;
        self.documents += 1;
        let mut text = names.join(" / ");
        for description in descriptions {
            if text.len() >= MAX_TEXT {
                break;
            }
            text.push('\n');
            text.push_str(description);
        }
        if text.len() > MAX_TEXT {
            let cut = (0..=MAX_TEXT)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text.truncate(cut);
        }
        text.shrink_to_fit();
        self.entries[index].text = text;
    }

    fn finish(&mut self) {
        self.doc_len.resize(self.entries.len(), 0.0);
        #[allow(clippy::cast_precision_loss)]
        let documents = self.documents.max(1) as f32;
        self.avg_len = self.doc_len.iter().sum::<f32>() / documents;
        let terms = self.terms.len();
        self.name_df.resize(terms, 0);
        self.name_postings.flatten(terms);
        self.postings.flatten(terms);
        let mut named: Vec<u32> = (0..u32::try_from(terms).unwrap_or(u32::MAX))
            .filter(|&t| !self.name_postings.get(t).is_empty())
            .collect();
        named.sort_unstable_by(|a, b| self.terms.text(*a).cmp(self.terms.text(*b)));
        self.name_terms_sorted = named;
        let mut by_iri: Vec<u32> =
            (0..u32::try_from(self.entries.len()).unwrap_or(u32::MAX)).collect();
        by_iri.sort_by(|a, b| self.entry(*a).iri.cmp(&self.entry(*b).iri));
        self.iri_rank = vec![0; by_iri.len()];
        for (rank, &entry) in (0u32..).zip(&by_iri) {
            self.iri_rank[entry as usize] = rank;
        }
        self.by_iri = by_iri;
        self.name_terms.shrink_to_fit();
        self.names.shrink_to_fit();
        self.entries.shrink_to_fit();
    }

    /// The indexes of the entries of one role.
    pub fn entries_of(&self, role: Role) -> impl Iterator<Item = u32> + '_ {
        (0..u32::try_from(self.entries.len()).unwrap_or(u32::MAX))
            .filter(move |&i| self.entry(i).role == role)
    }

    /// The entry at `index`.
    pub fn entry(&self, index: u32) -> &Entry {
        &self.entries[index as usize]
    }

    /// The parts, then the whole identifiers, of a name.
    fn terms_of(&self, name: &Name) -> (&[u32], &[u32]) {
        let terms = &self.name_terms[name.terms.start as usize..name.terms.end as usize];
        terms.split_at(name.parts as usize)
    }

    /// The name terms (parts and wholes) of an entry.
    pub fn name_terms(&self, index: u32) -> impl Iterator<Item = &str> {
        let range = self.entry(index).names.clone();
        self.names[range.start as usize..range.end as usize]
            .iter()
            .flat_map(|n| &self.name_terms[n.terms.start as usize..n.terms.end as usize])
            .map(|&t| self.terms.text(t))
    }

    /// The order of two entries' IRIs, from their ranks (ties among thousands of
    /// equally scored names compared strings for most of a question's time at a
    /// million functions).
    pub fn iri_order(&self, a: u32, b: u32) -> std::cmp::Ordering {
        self.iri_rank[a as usize].cmp(&self.iri_rank[b as usize])
    }

    /// The entry of an IRI.
    pub fn find(&self, iri: &str) -> Option<u32> {
        self.by_iri
            .binary_search_by(|&e| self.entry(e).iri.as_str().cmp(iri))
            .ok()
            .map(|at| self.by_iri[at])
    }

    /// Inverse document frequency of a name term among the entries' names.
    pub fn name_idf(&self, term: &str) -> f32 {
        self.idf_of(self.terms.id(term))
    }

    fn idf_of(&self, term: Option<u32>) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let n = self.entries.len().max(1) as f32;
        let df = term.and_then(|t| self.name_df.get(t as usize)).copied();
        #[allow(clippy::cast_precision_loss)]
        let df = df.unwrap_or(0) as f32;
        (1.0 + n / (df + 1.0)).ln()
    }

    /// The `k` entity entries that best match `text` by BM25, optionally only those
    /// `keep` accepts.
    pub fn bm25(&self, text: &str, k: usize, keep: &dyn Fn(&Entry) -> bool) -> Vec<LexicalHit> {
        let mut query: Vec<String> = analyze_question(text).into_iter().map(|t| t.text).collect();
        query.sort_unstable();
        query.dedup();
        #[allow(clippy::cast_precision_loss)]
        let n = self.documents.max(1) as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for term in &query {
            let posting = self
                .terms
                .id(term)
                .map_or(&[][..], |t| self.postings.get(t));
            if posting.is_empty() {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let df = posting.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in posting {
                let length = self.doc_len[doc as usize] / self.avg_len.max(f32::EPSILON);
                let score = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length));
                *scores.entry(doc).or_default() += score;
            }
        }
        let mut hits: Vec<LexicalHit> = scores
            .into_iter()
            .filter(|(doc, _)| keep(self.entry(*doc)))
            .map(|(entry, score)| LexicalHit { entry, score })
            .collect();
        let best_first = |a: &LexicalHit, b: &LexicalHit| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.iri_order(a.entry, b.entry))
        };
        if hits.len() > k && k > 0 {
            hits.select_nth_unstable_by(k - 1, best_first);
        }
        hits.truncate(k);
        hits.sort_by(best_first);
        hits
    }

    /// Name terms that match a question part: the part itself, and by prefix
    /// (either way) when both are long enough; with the weight of the match.
    fn matching_terms(&self, part: &str) -> Vec<(u32, f32)> {
        let named = |text: &str| {
            self.terms
                .id(text)
                .filter(|&t| !self.name_postings.get(t).is_empty())
        };
        let mut out: Vec<(u32, f32)> = Vec::new();
        if let Some(term) = named(part) {
            out.push((term, 1.0));
        }
        if part.chars().count() >= MIN_PREFIX {
            // Name terms extending the part (`teach` -> `teacher`).
            let sorted = &self.name_terms_sorted;
            let after = sorted.partition_point(|&t| self.terms.text(t) <= part);
            for &term in sorted[after..]
                .iter()
                .take_while(|&&t| self.terms.text(t).starts_with(part))
            {
                out.push((term, PREFIX_WEIGHT));
            }
            // Name terms the part extends (`advisor` -> `advis`).
            for (end, _) in part.char_indices().skip(MIN_PREFIX) {
                if let Some(term) = named(&part[..end]) {
                    out.push((term, PREFIX_WEIGHT));
                }
            }
        }
        out
    }

    /// Every name the question's terms touch, scored by coverage both ways; only
    /// entries of `role`.
    pub fn name_matches(&self, question: &[Term], role: Role) -> Vec<NameMatch> {
        // Question part -> (words it occurs in); whole identifiers separately.
        let mut parts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut wholes: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for term in question {
            let map = if term.whole { &mut wholes } else { &mut parts };
            map.entry(term.text.as_str())
                .or_default()
                .extend(term.word..term.word + term.span);
        }
        let mut out: Vec<NameMatch> = self
            .touched_names(&parts, role)
            .into_iter()
            .filter_map(|(name, matched)| self.name_match(name, &matched, question, &wholes))
            .collect();
        // One match per entry: its best name.
        out.sort_by(|a, b| {
            a.entry
                .cmp(&b.entry)
                .then_with(|| b.score().total_cmp(&a.score()))
        });
        out.dedup_by_key(|m| m.entry);
        out
    }

    /// Name -> (name term -> (match weight, question words)), for the names of
    /// `role` only: a common word touches thousands of names of other roles
    /// (every function named with "filter"), which would be gathered for nothing.
    fn touched_names(
        &self,
        parts: &BTreeMap<&str, Vec<usize>>,
        role: Role,
    ) -> BTreeMap<u32, HashMap<u32, (f32, Vec<usize>)>> {
        let mut touched: BTreeMap<u32, HashMap<u32, (f32, Vec<usize>)>> = BTreeMap::new();
        for (part, words) in parts {
            for (term, weight) in self.matching_terms(part) {
                for &name in self.name_postings.get(term) {
                    if self.entry(self.names[name as usize].entry).role != role {
                        continue;
                    }
                    let slot = touched
                        .entry(name)
                        .or_default()
                        .entry(term)
                        .or_insert((0.0, Vec::new()));
                    slot.0 = slot.0.max(weight);
                    slot.1.extend(words);
                }
            }
        }
        touched
    }

    /// One touched name scored: how much of the name the question covers, how
    /// much of the touched question words the name explains, and the words.
    fn name_match(
        &self,
        name_id: u32,
        matched: &HashMap<u32, (f32, Vec<usize>)>,
        question: &[Term],
        wholes: &BTreeMap<&str, Vec<usize>>,
    ) -> Option<NameMatch> {
        let name = &self.names[name_id as usize];
        let (name_parts, name_wholes) = self.terms_of(name);
        let whole_words: Vec<usize> = name_wholes
            .iter()
            .filter_map(|&w| wholes.get(self.terms.text(w)))
            .flatten()
            .copied()
            .collect();
        let total: f32 = name_parts.iter().map(|&p| self.idf_of(Some(p))).sum();
        let covered: f32 = name_parts
            .iter()
            .filter_map(|p| matched.get(p).map(|(w, _)| w * self.idf_of(Some(*p))))
            .sum();
        let placed = place(name_parts, matched);
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
        let last = name_parts.len().saturating_sub(1);
        let head_words: Vec<usize> = placed
            .iter()
            .filter(|(part, _)| *part == last)
            .map(|(_, w)| *w)
            .collect();
        let mut word_coverage = self.word_coverage(question, name_parts, &words);
        let (in_order, gap) = reading(question, &placed, &words, by_whole);
        if !in_order {
            word_coverage *= OUT_OF_ORDER;
        }
        if gap {
            word_coverage *= OUT_OF_ORDER;
        }
        Some(NameMatch {
            entry: name.entry,
            name_coverage,
            parts_coverage: if total > 0.0 { covered / total } else { 0.0 },
            word_coverage,
            words,
            head_words,
        })
    }

    /// How much of the touched question `words` a name of `name_parts` explains,
    /// weighted by the words' idf.
    fn word_coverage(&self, question: &[Term], name_parts: &[u32], words: &[usize]) -> f32 {
        let mut word_total = 0.0;
        let mut word_covered = 0.0;
        for term in question
            .iter()
            .filter(|t| !t.whole && words.contains(&t.word))
        {
            let idf = self.name_idf(&term.text);
            word_total += idf;
            if let Some(best) = name_parts
                .iter()
                .filter_map(|&p| part_match(&term.text, self.terms.text(p)))
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
        let mut lexicon = Lexicon::default();
        for (iri, role, names, descriptions) in entries {
            let id = lexicon.add_entry(iri, *role, Arc::new([]), names);
            if *role == Role::Entity {
                lexicon.add_document(id, names, descriptions);
            }
        }
        lexicon.finish();
        lexicon
    }

    fn best(lexicon: &Lexicon, question: &str, role: Role) -> Vec<(String, f32)> {
        let mut matches = lexicon.name_matches(&analyze(question), role);
        matches.sort_by(|a, b| b.score().total_cmp(&a.score()));
        matches
            .into_iter()
            .map(|m| (lexicon.entry(m.entry).iri.clone(), m.score()))
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
    fn a_part_matches_as_the_lexicon_scan_would() {
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
            let scanned = lexicon.matching_terms(question);
            for part in &parts {
                let expected = scanned
                    .iter()
                    .filter(|(t, _)| lexicon.terms.text(*t) == part)
                    .map(|(_, w)| *w)
                    .reduce(f32::max);
                assert_eq!(part_match(question, part), expected, "{question} ~ {part}");
            }
        }
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
        let hits = lexicon.bm25("content type of a message", 5, &|_| true);
        assert_eq!(lexicon.entry(hits[0].entry).iri, "urn:get_content_type");
        assert_eq!(hits.len(), 1);
    }
}
