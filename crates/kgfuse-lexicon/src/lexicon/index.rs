//! The lexicon on disk: one tantivy document per entry in `<store>/lexicon/`,
//! brought in step with the graph by differences (an entry is rewritten only
//! when what it is made of changed) and stamped with the store's content
//! version ([`Store::content_version`]), so a process that opens an unchanged
//! store reads the index as it is.
//!
//! kgfuse analyses the text itself ([`super::analyze`]) and hands tantivy the
//! terms joined by spaces; tantivy keeps the terms, postings, field lengths and
//! stored entries, and scores BM25.
//!
//! [`Store::content_version`]: kgfuse_store::Store::content_version

use super::Role;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tantivy::directory::MmapDirectory;
use tantivy::directory::error::LockError;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

/// The index's directory inside the store's.
pub const LEXICON_DIR: &str = "lexicon";
/// Bumped when the fields or what goes into them change: an index of another
/// format is rebuilt.
const FORMAT: u32 = 2;
/// Memory the writer may fill before it writes a segment.
const WRITER_MEMORY: usize = 64 * 1024 * 1024;
/// How long a write waits for another process's writer to finish.
const LOCK_WAIT: Duration = Duration::from_secs(60);
/// Longest term indexed, in bytes (tantivy's own limit is 65,530).
const MAX_TERM: usize = 256;

/// The lexicon's index failed: its files, or tantivy under them.
#[derive(Debug, thiserror::Error)]
#[error("the lexicon's index at {path}: {source}")]
pub struct LexiconError {
    /// The index's directory (`in memory` when it has none).
    pub path: String,
    /// What tantivy said.
    #[source]
    pub source: tantivy::TantivyError,
}

/// The fields of an entry's document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// The node's IRI (indexed whole: the key for updates and lookups).
    pub iri: Field,
    /// [`Role`] as a number.
    pub role: Field,
    /// The hash of what the entry is made of ([`Source::hash`]).
    pub hash: Field,
    /// Local names of its types.
    pub kinds: Field,
    /// Its names, as written.
    pub names: Field,
    /// Names and descriptions as one text, for display.
    pub text: Field,
    /// The terms of its names: parts and whole identifiers (document
    /// frequency = how many entries' names hold a term).
    pub name_terms: Field,
    /// BM25's document: name terms twice, description terms once (entities only).
    pub body: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let terms = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("whitespace")
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        iri: builder.add_text_field("iri", STRING | STORED | FAST),
        role: builder.add_u64_field("role", INDEXED | FAST | STORED),
        hash: builder.add_u64_field("hash", FAST),
        kinds: builder.add_text_field("kinds", STORED),
        names: builder.add_text_field("names", STORED),
        text: builder.add_text_field("text", STORED),
        name_terms: builder.add_text_field("name_terms", terms.clone()),
        body: builder.add_text_field("body", terms),
    };
    (builder.build(), fields)
}

/// A role as stored.
pub(crate) fn role_number(role: Role) -> u64 {
    match role {
        Role::Entity => 0,
        Role::Class => 1,
        Role::Property => 2,
    }
}

/// A stored role.
pub(crate) fn role_of_number(number: u64) -> Role {
    match number {
        1 => Role::Class,
        2 => Role::Property,
        _ => Role::Entity,
    }
}

/// What one entry is made of, read from the graph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Source {
    pub iri: String,
    pub role: Role,
    /// Local names of its types.
    pub kinds: Vec<String>,
    /// Its names, first the one to display.
    pub names: Vec<String>,
    /// Its descriptions (entities only).
    pub descriptions: Vec<String>,
}

impl Source {
    /// A hash of everything the entry's document is made of, whatever the
    /// order its types and descriptions were read in (a whole-graph scan and a
    /// read of a few nodes give them in different orders).
    pub fn hash(&self) -> u64 {
        let mut hasher = Sha256::new();
        hasher.update(self.iri.as_bytes());
        hasher.update([0xFF, u8::try_from(role_number(self.role)).unwrap_or(0)]);
        fn sorted(list: &[String]) -> Vec<&str> {
            let mut list: Vec<&str> = list.iter().map(String::as_str).collect();
            list.sort_unstable();
            list
        }
        for (list, mark) in [
            (sorted(&self.kinds), 1u8),
            (sorted(&self.names), 2),
            (sorted(&self.descriptions), 3),
        ] {
            for item in list {
                hasher.update([0xFF, mark]);
                hasher.update(item.as_bytes());
            }
        }
        let digest = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }
}

/// The terms of `texts` as tantivy's whitespace tokenizer reads them, each
/// text `repeat` times.
fn joined_terms<'a>(texts: impl Iterator<Item = &'a str>, repeat: usize) -> String {
    let mut out = String::new();
    for text in texts {
        for term in super::analyze::analyze(text) {
            if term.text.len() > MAX_TERM {
                continue;
            }
            for _ in 0..repeat {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&term.text);
            }
        }
    }
    out
}

/// The predicates whose literals name or describe nodes, as the last reading
/// of the whole graph found them (a read of a few nodes adds the new ones it
/// meets).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub(crate) struct Predicates {
    pub names: Vec<String>,
    pub descriptions: Vec<String>,
}

/// What the index's last commit recorded.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) struct Stamp {
    format: u32,
    /// The store's content version the index was brought in step with.
    pub content_version: Option<u64>,
    /// The name and description predicates of the graph at that version
    /// (absent from the first format's stamps, which are then rebuilt).
    #[serde(default)]
    pub predicates: Predicates,
}

impl Stamp {
    /// A stamp of this format.
    pub fn new(content_version: Option<u64>, predicates: Predicates) -> Self {
        Self {
            format: FORMAT,
            content_version,
            predicates,
        }
    }
}

/// How a write went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    /// Entries written (new or changed).
    pub written: usize,
    /// Entries removed (gone from the graph, or changed).
    pub removed: usize,
    /// Entries found unchanged.
    pub unchanged: usize,
}

/// The entries to remove and to add to bring some of the index in step.
#[derive(Default)]
struct Plan<'a> {
    remove: Vec<String>,
    /// Each with its hash.
    add: Vec<(&'a Source, u64)>,
    changes: Changes,
}

impl<'a> Plan<'a> {
    /// Notes the entry of `iri`: the hash the index keeps for it, if any, and
    /// what the graph now makes of it, if anything.
    fn note(&mut self, iri: &str, kept: Option<u64>, source: Option<&'a Source>) {
        let hash = source.map(Source::hash);
        if kept.is_some() && kept == hash {
            self.changes.unchanged += 1;
            return;
        }
        if kept.is_some() {
            self.remove.push(iri.to_owned());
            self.changes.removed += 1;
        }
        if let (Some(source), Some(hash)) = (source, hash) {
            self.add.push((source, hash));
            self.changes.written += 1;
        }
    }
}

/// The index, open.
pub(crate) struct LexiconIndex {
    index: Index,
    reader: IndexReader,
    pub fields: Fields,
    /// Where it lives (`None`: in memory).
    dir: Option<PathBuf>,
}

impl LexiconIndex {
    /// Opens the index in `dir`, creating it (or replacing one of another
    /// format) as needed.
    pub fn open(dir: &Path) -> Result<Self, LexiconError> {
        let error = |source| LexiconError {
            path: dir.display().to_string(),
            source,
        };
        let (schema, fields) = schema();
        let index = match open_current(dir, &schema) {
            Ok(Some(index)) => index,
            outcome => {
                if let Err(e) = outcome {
                    tracing::warn!(dir = %dir.display(), "the lexicon's index cannot be read ({e}); it is rebuilt");
                } else if dir.join("meta.json").exists() {
                    tracing::info!(dir = %dir.display(), "the lexicon's index has another format; it is rebuilt");
                }
                // The index is derived from the graph: what cannot be read is
                // rebuilt rather than repaired.
                if dir.exists() {
                    std::fs::remove_dir_all(dir).map_err(|e| error(e.into()))?;
                }
                std::fs::create_dir_all(dir).map_err(|e| error(e.into()))?;
                Index::create_in_dir(dir, schema).map_err(error)?
            }
        };
        Self::with(index, fields, Some(dir.to_owned()))
    }

    /// A new index in memory (for stores whose directory cannot hold one, and
    /// for tests).
    pub fn in_memory() -> Result<Self, LexiconError> {
        let (schema, fields) = schema();
        Self::with(Index::create_in_ram(schema), fields, None)
    }

    fn with(index: Index, fields: Fields, dir: Option<PathBuf>) -> Result<Self, LexiconError> {
        let path = location(dir.as_deref());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|source| LexiconError { path, source })?;
        Ok(Self {
            index,
            reader,
            fields,
            dir,
        })
    }

    /// `source` as this index's error.
    pub fn failed(&self, source: tantivy::TantivyError) -> LexiconError {
        LexiconError {
            path: location(self.dir.as_deref()),
            source,
        }
    }

    /// What the index's last commit recorded.
    pub fn stamp(&self) -> Stamp {
        stamp_of(&self.index)
    }

    /// A snapshot to read from.
    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Every entry's IRI and hash.
    fn hashes(&self) -> Result<HashMap<String, u64>, LexiconError> {
        let searcher = self.searcher();
        let mut out = HashMap::new();
        let mut iri = String::new();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let Some(iris) = fast.str("iri").map_err(|e| self.failed(e))? else {
                continue;
            };
            let hashes = fast.u64("hash").map_err(|e| self.failed(e))?;
            for doc in segment.doc_ids_alive() {
                let Some(ord) = iris.term_ords(doc).next() else {
                    continue;
                };
                iri.clear();
                if iris
                    .ord_to_str(ord, &mut iri)
                    .map_err(|e| self.failed(e.into()))?
                {
                    out.insert(iri.clone(), hashes.first(doc).unwrap_or(0));
                }
            }
        }
        Ok(out)
    }

    /// What [`LexiconIndex::write`] would change, written nowhere.
    pub fn differences(&self, sources: &[Source]) -> Result<Changes, LexiconError> {
        Ok(self.plan(sources)?.changes)
    }

    /// What bringing the index in step with `sources` (every entry the graph
    /// makes) takes.
    fn plan<'a>(&self, sources: &'a [Source]) -> Result<Plan<'a>, LexiconError> {
        let mut old = self.hashes()?;
        let mut plan = Plan::default();
        for source in sources {
            plan.note(&source.iri, old.remove(&source.iri), Some(source));
        }
        for (gone, kept) in old {
            plan.note(&gone, Some(kept), None);
        }
        Ok(plan)
    }

    /// The hash of the entry of `iri`, if the index holds one.
    fn hash_of(&self, searcher: &Searcher, iri: &str) -> Result<Option<u64>, LexiconError> {
        let query = tantivy::query::TermQuery::new(
            Term::from_field_text(self.fields.iri, iri),
            IndexRecordOption::Basic,
        );
        let found = searcher
            .search(
                &query,
                &tantivy::collector::TopDocs::with_limit(1).order_by_score(),
            )
            .map_err(|e| self.failed(e))?;
        let Some((_, address)) = found.first() else {
            return Ok(None);
        };
        let hashes = searcher
            .segment_reader(address.segment_ord)
            .fast_fields()
            .u64("hash")
            .map_err(|e| self.failed(e))?;
        Ok(Some(hashes.first(address.doc_id).unwrap_or(0)))
    }

    /// Brings the entries of `nodes` in step with `sources` (what the graph now
    /// makes of those nodes: a node without a source has no entry), leaving
    /// every other entry as it is, and records `stamp`.
    pub fn write_nodes(
        &self,
        nodes: &std::collections::BTreeSet<String>,
        sources: &[Source],
        stamp: &Stamp,
    ) -> Result<Changes, LexiconError> {
        let searcher = self.searcher();
        let by_iri: HashMap<&str, &Source> = sources.iter().map(|s| (s.iri.as_str(), s)).collect();
        let mut plan = Plan::default();
        for node in nodes {
            let kept = self.hash_of(&searcher, node)?;
            plan.note(node, kept, by_iri.get(node.as_str()).copied());
        }
        self.apply(plan, stamp)
    }

    /// Commits `writer`'s changes with `stamp`, waits for its merges, and reads
    /// the result.
    fn commit(
        &self,
        mut writer: IndexWriter<TantivyDocument>,
        stamp: &Stamp,
    ) -> Result<(), LexiconError> {
        let payload = serde_json::to_string(stamp).unwrap_or_default();
        let mut commit = writer.prepare_commit().map_err(|e| self.failed(e))?;
        commit.set_payload(&payload);
        commit.commit().map_err(|e| self.failed(e))?;
        writer.wait_merging_threads().map_err(|e| self.failed(e))?;
        self.reader.reload().map_err(|e| self.failed(e))?;
        Ok(())
    }

    /// Brings the index in step with `sources` (every entry the graph makes),
    /// rewriting only the entries that changed, and records `stamp`.
    pub fn write(&self, sources: &[Source], stamp: &Stamp) -> Result<Changes, LexiconError> {
        let plan = self.plan(sources)?;
        self.apply(plan, stamp)
    }

    /// Removes and adds what `plan` says, in one commit with `stamp`.
    fn apply(&self, plan: Plan<'_>, stamp: &Stamp) -> Result<Changes, LexiconError> {
        let writer = self.writer()?;
        for iri in &plan.remove {
            writer.delete_term(Term::from_field_text(self.fields.iri, iri));
        }
        for (source, hash) in plan.add {
            writer
                .add_document(self.document(source, hash))
                .map_err(|e| self.failed(e))?;
        }
        self.commit(writer, stamp)?;
        Ok(plan.changes)
    }

    /// The index's writer, waiting for another process's to finish.
    fn writer(&self) -> Result<IndexWriter<TantivyDocument>, LexiconError> {
        let started = std::time::Instant::now();
        loop {
            match self.index.writer_with_num_threads(1, WRITER_MEMORY) {
                Err(tantivy::TantivyError::LockFailure(LockError::LockBusy, _))
                    if started.elapsed() < LOCK_WAIT =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => return other.map_err(|e| self.failed(e)),
            }
        }
    }

    fn document(&self, source: &Source, hash: u64) -> TantivyDocument {
        let f = &self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.iri, &source.iri);
        doc.add_u64(f.role, role_number(source.role));
        doc.add_u64(f.hash, hash);
        for kind in &source.kinds {
            doc.add_text(f.kinds, kind);
        }
        for name in &source.names {
            doc.add_text(f.names, name);
        }
        doc.add_text(f.name_terms, name_terms(&source.names));
        if source.role == Role::Entity {
            doc.add_text(
                f.body,
                format!(
                    "{} {}",
                    joined_terms(source.names.iter().map(String::as_str), 2),
                    joined_terms(source.descriptions.iter().map(String::as_str), 1)
                ),
            );
            doc.add_text(f.text, display_text(&source.names, &source.descriptions));
        }
        doc
    }
}

/// The distinct terms of each name (a term in two names counts twice: its
/// document frequency is what matters, and a name's length).
fn name_terms(names: &[String]) -> String {
    let mut out = String::new();
    for name in names {
        let mut seen: Vec<String> = Vec::new();
        for term in super::analyze::analyze(name) {
            if term.text.len() <= MAX_TERM && !seen.contains(&term.text) {
                seen.push(term.text);
            }
        }
        for term in seen {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&term);
        }
    }
    out
}

/// Longest description text kept per entry for display.
const MAX_TEXT: usize = 1_500;

/// Names and descriptions as one text, cut at [`MAX_TEXT`] bytes.
fn display_text(names: &[String], descriptions: &[String]) -> String {
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
    text
}

/// Where an index lives, for its errors.
fn location(dir: Option<&Path>) -> String {
    dir.map_or_else(|| "in memory".to_owned(), |d| d.display().to_string())
}

/// The index in `dir` when there is one of this schema and format.
fn open_current(dir: &Path, schema: &Schema) -> tantivy::Result<Option<Index>> {
    std::fs::create_dir_all(dir)?;
    let directory = MmapDirectory::open(dir)?;
    if !Index::exists(&directory)? {
        return Ok(None);
    }
    let index = Index::open(directory)?;
    let current = index.schema() == *schema && stamp_of(&index).format == FORMAT;
    Ok(current.then_some(index))
}

fn stamp_of(index: &Index) -> Stamp {
    index
        .load_metas()
        .ok()
        .and_then(|metas| metas.payload)
        .and_then(|payload| serde_json::from_str(&payload).ok())
        .unwrap_or_else(|| Stamp::new(None, Predicates::default()))
}

/// BM25's statistics over entity documents only: classes and properties have
/// no BM25 document, and counting them would lower the average length.
pub(crate) struct EntityStatistics<'a> {
    pub searcher: &'a Searcher,
    /// [`entity_documents`].
    pub entities: u64,
}

impl Bm25StatisticsProvider for EntityStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Bm25StatisticsProvider::total_num_tokens(self.searcher, field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.entities.max(1))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searcher.doc_freq(term)
    }
}

/// How many entity documents the index holds, deleted ones included until
/// they are merged away (as tantivy counts tokens and document frequencies).
pub(crate) fn entity_documents(searcher: &Searcher, fields: &Fields) -> tantivy::Result<u64> {
    searcher.doc_freq(&Term::from_field_u64(
        fields.role,
        role_number(Role::Entity),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(kinds: &[&str], names: &[&str], descriptions: &[&str]) -> Source {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        Source {
            iri: "urn:x:valve".into(),
            role: Role::Entity,
            kinds: owned(kinds),
            names: owned(names),
            descriptions: owned(descriptions),
        }
    }

    /// A whole-graph scan and a read of a few nodes give types and
    /// descriptions in different orders: the hash must not see it, and must see
    /// every change of content.
    #[test]
    fn the_hash_ignores_order_and_sees_content() {
        let one = source(&["Valve", "Part"], &["valve"], &["Opens.", "Closes."]);
        let reordered = source(&["Part", "Valve"], &["valve"], &["Closes.", "Opens."]);
        assert_eq!(one.hash(), reordered.hash());
        for changed in [
            source(&["Valve"], &["valve"], &["Opens.", "Closes."]),
            source(
                &["Valve", "Part"],
                &["relief valve"],
                &["Opens.", "Closes."],
            ),
            source(&["Valve", "Part"], &["valve"], &["Opens."]),
            // A description moved into the names is another document.
            source(&["Valve", "Part"], &["valve", "Opens."], &["Closes."]),
        ] {
            assert_ne!(one.hash(), changed.hash(), "{changed:?}");
        }
        let class = Source {
            role: Role::Class,
            ..one.clone()
        };
        assert_ne!(one.hash(), class.hash());
    }
}
