//! Ingesting code and documents into the paired store.
//!
//! Extraction (kgfuse-ingest) is pure; this module decides what to write. Each
//! source file owns a named graph tagged with the hash of its extracted triples:
//! a file whose triples did not change is skipped, a changed one replaces its graph
//! and vector rows, and a file that disappeared from the ingested tree has its graph
//! and rows removed. Files are emitted and written in batches so memory stays bounded
//! on large trees.

use crate::{Engine, Error, Progress, QueryOutcome};
use kgfuse_core::vocab::kg;
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_graph::{SourceGraph, StoredSource};
use kgfuse_ingest::ExtractedSource;
use kgfuse_ingest::code::model::Language;
use kgfuse_ingest::code::resolve::{KnownSymbol, SymbolKind};
use kgfuse_ingest::code::{CODE_BASE, CodeOptions, CodeStats};
use kgfuse_ingest::docs::{DocsOptions, EntityLabel};
use kgfuse_store::SyncReport;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

pub use kgfuse_ingest::code::model::Language as CodeLanguage;

/// A batch is written when it holds this many files...
const BATCH_FILES: usize = 200;
/// ...or this many triples, whichever comes first, so a write's memory (its
/// triples, their entailments and vector rows) stays bounded.
const BATCH_TRIPLES: usize = 50_000;
/// Code files turned into triples at a time (in parallel) while a batch fills.
const EMIT_FILES: usize = 16;

/// How to ingest a source tree; see [`Engine::ingest_code`].
#[derive(Debug, Clone)]
pub struct IngestCodeOptions {
    /// Languages to ingest; both when empty.
    pub languages: Vec<Language>,
    /// Package (Python) or crate (Rust) name for files outside any package.
    pub package: Option<String>,
    /// Files above this many bytes are skipped with a note.
    pub max_file_bytes: u64,
    /// Knowledge file (TOML or Turtle) attaching domain rules and I/O tags to functions.
    pub knowledge_file: Option<PathBuf>,
}

impl Default for IngestCodeOptions {
    fn default() -> Self {
        let defaults = CodeOptions::default();
        Self {
            languages: Vec::new(),
            package: None,
            max_file_bytes: defaults.max_file_bytes,
            knowledge_file: None,
        }
    }
}

/// What an ingestion run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IngestReport {
    /// The ingested path (canonical).
    pub root: String,
    /// Source files extracted.
    pub files: usize,
    /// Files whose graph was written (new or changed).
    pub written: usize,
    /// Files whose triples did not change.
    pub unchanged: usize,
    /// Graphs removed because their file is gone.
    pub removed: usize,
    /// Triples extracted (metadata excluded).
    pub triples: usize,
    /// Resolved call edges.
    pub calls: usize,
    /// Call edges matched by name only.
    pub calls_by_name: usize,
    /// Code counts (for `ingest code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeStats>,
    /// Documents and chunks (for `ingest docs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
    /// Files skipped or only partly understood, as `file:line: message`.
    pub problems: Vec<String>,
    /// Vector rows changed.
    pub vectors: SyncReport,
}

fn merge(total: &mut SyncReport, part: &SyncReport) {
    total.added += part.added;
    total.updated += part.updated;
    total.deleted += part.deleted;
    total.unchanged += part.unchanged;
}

fn canonical(path: &Path) -> Result<PathBuf, Error> {
    std::fs::canonicalize(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

/// An ingest's failure, saying which files earlier batches left in the store
/// when there are any (`stored` of `files`).
fn stopped(error: Error, stored: usize, files: usize) -> Error {
    if stored == 0 {
        return error;
    }
    Error::IngestStopped {
        stored,
        files,
        cause: Box::new(error),
    }
}

/// True when `path` is `root` or lies below it.
fn is_under(path: &str, root: &Path) -> bool {
    Path::new(path).starts_with(root)
}

impl Engine {
    /// Parses the Python and/or Rust sources under `path` into the API hierarchy,
    /// call graph, cases, knowledge and I/O tags, and writes them, one named graph
    /// per file. Re-ingesting is incremental; see the module documentation.
    ///
    /// Parsing and resolution are CPU-bound (parallel through rayon) and block the
    /// calling worker thread while they run; a server should run ingestion on a
    /// runtime that has other workers for requests.
    pub async fn ingest_code(
        &self,
        path: &Path,
        options: &IngestCodeOptions,
        progress: &dyn Progress,
    ) -> Result<IngestReport, Error> {
        let languages = if options.languages.is_empty() {
            vec![Language::Python, Language::Rust]
        } else {
            options.languages.clone()
        };
        let root = canonical(path)?;
        let stored = self.store.graph().stored_sources()?;
        let extractors: Vec<&str> = languages
            .iter()
            .map(|l| match l {
                Language::Python => "code/python",
                Language::Rust => "code/rust",
            })
            .collect();
        // Symbols in graphs this run rewrites come from the run itself, not the store.
        let rewritten: HashSet<&NamedNode> = stored
            .iter()
            .filter(|(_, s)| extractors.contains(&s.extractor.as_str()) && is_under(&s.path, &root))
            .map(|(g, _)| g)
            .collect();
        let known_symbols = self.known_code_symbols(&rewritten)?;
        let code_options = CodeOptions {
            languages,
            package: options.package.clone(),
            max_file_bytes: options.max_file_bytes,
            knowledge_file: options.knowledge_file.clone(),
            known_symbols,
        };
        let extraction = kgfuse_ingest::code::extract_code(path, &code_options, progress)
            .map_err(Error::from)?;
        let mut report = IngestReport {
            root: root.display().to_string(),
            files: extraction.len(),
            code: Some(extraction.stats.clone()),
            problems: extraction
                .problems
                .iter()
                .map(ToString::to_string)
                .collect(),
            ..IngestReport::default()
        };
        let sources = (0..extraction.len())
            .step_by(EMIT_FILES)
            .flat_map(|start| extraction.emit(start..start + EMIT_FILES));
        self.write_in_batches(sources, &stored, &mut report, progress)
            .await?;
        let present: HashSet<NamedNode> = extraction
            .selected
            .iter()
            .map(|p| kgfuse_ingest::file_graph_iri(p))
            .collect();
        self.drop_missing(&stored, &root, &extractors, &present, &mut report, progress)
            .await
            .map_err(|e| stopped(e, extraction.len(), extraction.len()))?;
        Ok(report)
    }

    /// Splits the Markdown and text files under `path` into chunks linked to the
    /// entities they mention, and writes them, one named graph per file.
    pub async fn ingest_docs(
        &self,
        path: &Path,
        options: &DocsOptions,
        progress: &dyn Progress,
    ) -> Result<IngestReport, Error> {
        let root = canonical(path)?;
        let stored = self.store.graph().stored_sources()?;
        let entities = self.mentionable_entities()?;
        let extraction = kgfuse_ingest::docs::extract_docs(path, &entities, options, progress)
            .map_err(Error::from)?;
        let mut report = IngestReport {
            root: root.display().to_string(),
            files: extraction.sources.len(),
            chunks: Some(extraction.chunks),
            problems: extraction
                .problems
                .iter()
                .map(ToString::to_string)
                .collect(),
            ..IngestReport::default()
        };
        // Files that could not be read this time keep their previous graph.
        let mut present: HashSet<NamedNode> =
            extraction.sources.iter().map(|s| s.graph.clone()).collect();
        present.extend(
            extraction
                .problems
                .iter()
                .map(|p| kgfuse_ingest::file_graph_iri(&p.path)),
        );
        let files = report.files;
        self.write_in_batches(
            extraction.sources.into_iter(),
            &stored,
            &mut report,
            progress,
        )
        .await?;
        self.drop_missing(&stored, &root, &["docs"], &present, &mut report, progress)
            .await
            .map_err(|e| stopped(e, files, files))?;
        Ok(report)
    }

    /// Writes `sources` in batches of [`BATCH_FILES`] files or
    /// [`BATCH_TRIPLES`] triples, each one write of the store; a failure says
    /// which files earlier batches left in the store.
    async fn write_in_batches(
        &self,
        sources: impl Iterator<Item = ExtractedSource>,
        stored: &BTreeMap<NamedNode, StoredSource>,
        report: &mut IngestReport,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let files = report.files;
        let (mut batch, mut triples, mut done) = (Vec::new(), 0, 0);
        // A `None` after the last source writes what is left.
        for source in sources.map(Some).chain([None]) {
            if let Some(source) = source {
                triples += source.triples.len();
                batch.push(source);
                if batch.len() < BATCH_FILES && triples < BATCH_TRIPLES {
                    continue;
                }
            }
            if batch.is_empty() {
                break;
            }
            let written = batch.len();
            self.write_batch(std::mem::take(&mut batch), stored, report, progress)
                .await
                .map_err(|e| stopped(e, done, files))?;
            done += written;
            triples = 0;
            tracing::info!("ingested {done}/{files} files");
        }
        Ok(())
    }

    async fn write_batch(
        &self,
        sources: Vec<ExtractedSource>,
        stored: &BTreeMap<NamedNode, StoredSource>,
        report: &mut IngestReport,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let mut writes = Vec::new();
        for source in sources {
            report.triples += source.triples.len();
            for triple in &source.triples {
                match triple.predicate.as_str() {
                    kg::CALLS => report.calls += 1,
                    kg::CALLS_BY_NAME => report.calls_by_name += 1,
                    _ => {}
                }
            }
            let extraction_hash = source.extraction_hash();
            if stored
                .get(&source.graph)
                .is_some_and(|s| s.extraction_hash == extraction_hash)
            {
                report.unchanged += 1;
                continue;
            }
            writes.push(SourceGraph {
                graph: source.graph,
                path: source.path.display().to_string(),
                content_hash: source.content_hash,
                extraction_hash,
                extractor: source.extractor.to_owned(),
                triples: source.triples,
            });
        }
        report.written += writes.len();
        let vectors = self.store.write_sources(&writes, &[], progress).await?;
        merge(&mut report.vectors, &vectors);
        Ok(())
    }

    async fn drop_missing(
        &self,
        stored: &BTreeMap<NamedNode, StoredSource>,
        root: &Path,
        extractors: &[&str],
        present: &HashSet<NamedNode>,
        report: &mut IngestReport,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let gone: Vec<NamedNode> = stored
            .iter()
            .filter(|(graph, source)| {
                extractors.contains(&source.extractor.as_str())
                    && is_under(&source.path, root)
                    && !present.contains(*graph)
            })
            .map(|(graph, _)| graph.clone())
            .collect();
        report.removed = gone.len();
        let vectors = self.store.write_sources(&[], &gone, progress).await?;
        merge(&mut report.vectors, &vectors);
        Ok(())
    }

    /// Code definitions already in the store (outside `excluded` graphs), so calls
    /// from newly ingested code (tests, examples) resolve into them.
    fn known_code_symbols(
        &self,
        excluded: &HashSet<&NamedNode>,
    ) -> Result<Vec<KnownSymbol>, Error> {
        // A re-ingest of the same tree excludes every graph that names code:
        // a scan for the graphs (no join) says so before the query that reads
        // each symbol with its owner (5.8 s at 100,000 functions, dev build).
        let graphs = format!(
            "SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s <{}> ?q }} }}",
            kg::QUALIFIED_NAME
        );
        let QueryOutcome::Solutions { rows, .. } = self.sparql(&graphs)? else {
            return Ok(Vec::new());
        };
        let all_excluded = rows.iter().all(|row| match row.first() {
            Some(Some(Term::NamedNode(graph))) => excluded.contains(graph),
            _ => true,
        });
        if all_excluded {
            return Ok(Vec::new());
        }
        let query = format!(
            "SELECT ?g ?s ?q ?owner WHERE {{ GRAPH ?g {{ ?s <{q}> ?q }} \
             OPTIONAL {{ ?class <{has}> ?s . ?class <{q}> ?owner . \
                         FILTER(STRSTARTS(STR(?class), \"{CODE_BASE}\")) }} \
             FILTER(STRSTARTS(STR(?s), \"{CODE_BASE}\")) }}",
            q = kg::QUALIFIED_NAME,
            has = kg::HAS_FUNCTION,
        );
        let QueryOutcome::Solutions { rows, .. } = self.sparql(&query)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in rows {
            let (
                Some(Term::NamedNode(graph)),
                Some(Term::NamedNode(subject)),
                Some(Term::Literal(name)),
            ) = (&row[0], &row[1], &row[2])
            else {
                continue;
            };
            if excluded.contains(graph) {
                continue;
            }
            let Some((language, kind, _)) = kgfuse_ingest::code::split_code_iri(subject.as_str())
            else {
                continue;
            };
            let kind = match kind {
                "fn" => SymbolKind::Function,
                "class" => SymbolKind::Class,
                "mod" | "pkg" => SymbolKind::Module,
                _ => continue,
            };
            let owner = match &row[3] {
                Some(Term::Literal(owner)) if kind == SymbolKind::Function => {
                    Some(owner.value().to_owned())
                }
                _ => None,
            };
            out.push(KnownSymbol {
                language,
                qualified: name.value().to_owned(),
                kind,
                owner,
            });
        }
        Ok(out)
    }

    /// Labels and aliases of the entities documents may mention: everything with a
    /// label except documents' own parts, parameters, cases and methods (method names
    /// like `get` or `encode` are too generic to count as a mention).
    fn mentionable_entities(&self) -> Result<Vec<EntityLabel>, Error> {
        let query = format!(
            "SELECT DISTINCT ?s ?label WHERE {{ \
               ?s <http://www.w3.org/2000/01/rdf-schema#label>|<http://www.w3.org/2004/02/skos/core#prefLabel>|<http://www.w3.org/2004/02/skos/core#altLabel> ?label . \
               FILTER(isIRI(?s)) \
               FILTER NOT EXISTS {{ ?s a ?excluded . VALUES ?excluded {{ <{}> <{}> <{}> <{}> <{}> <{}> <{}> }} }} }}",
            kg::CHUNK,
            kg::PARAMETER,
            kg::CASE,
            kg::METHOD,
            kg::SOURCE_FILE,
            kg::KNOWLEDGE_UNIT,
            kg::DOCUMENT,
        );
        let QueryOutcome::Solutions { rows, .. } = self.sparql(&query)? else {
            return Ok(Vec::new());
        };
        Ok(rows
            .into_iter()
            .filter_map(|row| match (&row[0], &row[1]) {
                (Some(Term::NamedNode(s)), Some(Term::Literal(l))) => Some(EntityLabel {
                    iri: s.as_str().to_owned(),
                    label: l.value().to_owned(),
                }),
                _ => None,
            })
            .collect())
    }
}
