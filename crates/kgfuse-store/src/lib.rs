//! The paired kgfuse store: an Oxigraph graph and a LanceDB table kept in step.
//!
//! A data directory holds `graph/` (Oxigraph, RocksDB), `vectors/` (LanceDB) and
//! `kgfuse.toml`. The invariant, checked by [`Store::check`]: every IRI node that
//! carries a literal of a text predicate (rdfs:label, rdfs:comment, ... see
//! [`kgfuse_core::config::default_text_predicates`]) has exactly one vector row with
//! the same IRI and the hash of its current text, and every row has such a node.
//!
//! Every write follows the same order: write `journal.json`, change the graph
//! (atomically), bring the affected vector rows in step, delete the journal. A
//! process killed anywhere in between leaves the journal behind, and the next
//! [`Store::open`] repairs the vector side from the graph before doing anything else.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kgfuse_store::StoreError> {
//! use kgfuse_core::{config::StoreConfig, progress::NoProgress};
//! use kgfuse_store::Store;
//! use std::path::Path;
//!
//! let store = Store::init(Path::new("kgfuse-data"), StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 384)).await?;
//! store.load_files(&[Path::new("ontology/examples/support.ttl").into()], None, &NoProgress).await?;
//! assert!(store.check().await?.is_ok());
//! # Ok(()) }
//! ```

mod changes;
mod derived;
mod edge_index;
mod entailment;
mod journal;
mod ontology;
mod phases;
mod question;
mod stream_facts;
mod sync;
mod validation;
mod vector_index;

pub use derived::WholeStore;
pub use entailment::{Derivation, Provenance};
pub use kgfuse_graph::fingerprint::FileFingerprint;
pub use kgfuse_vector::{KindFilter, VectorHit, VectorIndexStatus, exact_score};
pub use ontology::OntologyStatus;
pub use question::Question;
pub use sync::{CheckReport, SyncReport};
pub use validation::FileValidation;

use journal::Journal;
use kgfuse_core::config::{CONFIG_FILE, ConfigError, StoreConfig};
use kgfuse_core::progress::Progress;
use kgfuse_graph::model::{NamedNode, Quad, Triple};
use kgfuse_graph::{Graph, GraphError, LoadRequest, QueryOptions, RdfSource, SourceGraph};
use kgfuse_vector::{EmbedError, Embedder, VectorError, VectorLocation, VectorStore};
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use stream_facts::StreamFacts;

/// Errors of the paired store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Graph side.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// Vector side.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// Embedding.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// SHACL shapes that cannot be read or evaluated.
    #[error(transparent)]
    Shacl(#[from] kgfuse_shacl::ShaclError),
    /// `kgfuse.toml`.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No store in this directory.
    #[error("no kgfuse store in {0}")]
    NotInitialised(String),
    /// `init` on a directory that already holds a store.
    #[error("{0} already holds a kgfuse store")]
    AlreadyInitialised(String),
    /// `init` against object storage that already holds another store's vectors.
    #[error(
        "{0} already holds a kgfuse store's vectors: attach to share that store (the same graph, embedder and dimension), or pick another prefix"
    )]
    VectorsInUse(String),
    /// File system trouble outside the two stores.
    #[error("{path}: {source}")]
    Io {
        /// Path concerned.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// Invalid input from the caller.
    #[error("{0}")]
    Invalid(String),
    /// A write whose storage failed before its graph change committed: the store
    /// is as it was (embedded; a remote write cut short is repaired on the next
    /// open, as after a crash).
    #[error("{operation} failed before its commit and changed nothing: {cause}")]
    NothingWritten {
        /// `load`, `ingest`, `update` or `repair`.
        operation: &'static str,
        /// The storage failure.
        cause: Box<StoreError>,
    },
    /// A write whose graph change committed and whose next step failed. The
    /// journal stays, so the next open of the store (any command, or `kgfuse
    /// check --repair`) rebuilds the derived graph and the vector rows from the
    /// committed graph: nothing is lost, the rest of the write is only delayed.
    #[error(
        "{operation}: the graph change is committed ({committed}), but {step} failed: {cause}; \
         the store is marked for repair, which its next open or write carries out"
    )]
    PartlyWritten {
        /// `load`, `ingest`, `update` or `repair`.
        operation: &'static str,
        /// What the store now holds, in words.
        committed: String,
        /// The step that failed.
        step: &'static str,
        /// Its failure.
        cause: Box<StoreError>,
    },
}

impl StoreError {
    /// Whether the disk ran out of space somewhere in this error's causes (the
    /// wrappers above carry their cause's words, so its text tells too).
    pub fn is_disk_full(&self) -> bool {
        kgfuse_core::error_chain_mentions_disk_full(self)
    }

    /// A failed graph write as the caller should read it: a failure of the
    /// storage underneath (RocksDB, the disk) says the store is unchanged; an
    /// input error (a parse error, a file that cannot be read) keeps its kind.
    fn before_commit(self, operation: &'static str, remote: bool) -> Self {
        if remote || !matches!(self, Self::Graph(GraphError::Storage(_))) {
            return self;
        }
        Self::NothingWritten {
            operation,
            cause: Box::new(self),
        }
    }
}

/// The triples a source's graph held before a write replaces it, against what
/// the source writes: which of its quads are new, and which old triples go.
struct HeldTriples {
    old: HashSet<Triple>,
    /// Old triples the source does not write again.
    removed: Vec<Triple>,
}

impl HeldTriples {
    fn new(old: Vec<Triple>, source: &SourceGraph) -> Self {
        if old.is_empty() {
            return Self {
                old: HashSet::new(),
                removed: Vec::new(),
            };
        }
        let new: HashSet<Triple> = source.quads().map(Triple::from).collect();
        let removed = old.iter().filter(|t| !new.contains(*t)).cloned().collect();
        Self {
            old: old.into_iter().collect(),
            removed,
        }
    }

    /// Whether the graph did not hold `quad`'s triple before the write.
    fn is_new(&self, quad: &Quad) -> bool {
        self.old.is_empty()
            || !self.old.contains(&Triple::new(
                quad.subject.clone(),
                quad.predicate.clone(),
                quad.object.clone(),
            ))
    }
}

/// Names the committed part of a write when a step after its graph commit fails.
fn after_commit<T>(
    result: Result<T, StoreError>,
    operation: &'static str,
    committed: &str,
    step: &'static str,
) -> Result<T, StoreError> {
    result.map_err(|cause| StoreError::PartlyWritten {
        operation,
        committed: committed.to_owned(),
        step,
        cause: Box::new(cause),
    })
}

/// What a load did.
#[derive(Debug, Clone, Default)]
pub struct LoadSummary {
    /// What happened to each file, in the order given.
    pub files: Vec<LoadedFile>,
    /// Quads written to the graph.
    pub quads: u64,
    /// Vector rows changed.
    pub vectors: SyncReport,
}

/// What a load did with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedFile {
    /// The file.
    pub path: PathBuf,
    /// The named graph that holds its triples.
    pub graph: String,
    /// What the load did with it.
    pub action: LoadAction,
    /// Quads written from it.
    pub quads: u64,
}

/// What a load did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadAction {
    /// A new graph.
    Inserted,
    /// The file changed: its graph was replaced.
    Replaced,
    /// The file's content was already loaded: nothing written.
    Unchanged,
    /// The text of the kgfuse vocabulary, which the store already carries: not
    /// loaded again.
    Carried,
}

impl LoadAction {
    /// The action as one lowercase word (`inserted`, `replaced`, `unchanged`,
    /// `carried`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inserted => "inserted",
            Self::Replaced => "replaced",
            Self::Unchanged => "unchanged",
            Self::Carried => "carried",
        }
    }
}

impl std::fmt::Display for LoadAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so that `{:<9}` aligns the word.
        f.pad(self.as_str())
    }
}

/// Size of a store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStats {
    /// Quads in the graph (the derived graph's included).
    pub triples: usize,
    /// Quads in the derived graph of entailed triples.
    pub inferred_triples: usize,
    /// Named graphs.
    pub graphs: usize,
    /// Typed IRI nodes per class IRI, largest first.
    pub nodes_by_class: Vec<(String, u64)>,
    /// Rows in the vector table.
    pub vector_rows: usize,
    /// Embedder kind.
    pub embedder: String,
    /// Vector dimension.
    pub dimension: usize,
    /// How much of the vector table the approximate index covers (`null`: no index,
    /// searches scan every row).
    pub vector_index: Option<VectorIndexStatus>,
    /// The fingerprint each file graph records (files loaded into graphs of their
    /// own), sorted by graph; see [`kgfuse_graph::fingerprint`].
    pub fingerprints: Vec<FileFingerprint>,
}

/// What building [`Store::edge_index`] costs per quad of the graph (measured on
/// LUBM-1 and LUBM-10 in release: 6.3 and 7.2 µs).
pub const INDEX_COST_PER_QUAD: Duration = Duration::from_micros(7);

/// The graph's quads, as counted for the edge index's cost (kept until a write).
struct QuadCount(usize);

impl WholeStore for QuadCount {}

/// Walk time below which [`Store::edge_index`] does not even count the quads.
const MIN_WALK_BEFORE_INDEXING: Duration = Duration::from_millis(50);

/// File bytes a load must bring per quad already in the store for
/// [`Store::stream_facts_for`] to list the store's subjects first. Listing costs
/// about a microsecond a quad; the passes the noted facts replace decode every
/// text and `rdf:type` quad afterwards (LUBM-10: 7.7 s for 86 MB of N-Triples, some
/// 90 ns a byte), so at 32 bytes a quad the listing is a small share of the saving.
const BYTES_PER_PRIOR_QUAD: u64 = 32;

/// Cumulative wall time inside each external component (see [`Store::time_spent`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeSplit {
    /// Inside Oxigraph: SPARQL evaluation and graph walks.
    pub graph: Duration,
    /// How many graph queries and walks.
    pub graph_calls: u64,
    /// Inside LanceDB: nearest-neighbour and full-text searches, vector reads.
    pub vectors: Duration,
    /// How many LanceDB searches and reads.
    pub vector_calls: u64,
    /// Embedding query texts.
    pub embedding: Duration,
    /// How many query texts were embedded.
    pub embeddings: u64,
}

/// An Oxigraph graph and a LanceDB vector table kept in step.
#[derive(Clone)]
pub struct Store {
    dir: PathBuf,
    config: Arc<StoreConfig>,
    graph: Graph,
    vectors: VectorStore,
    embedder: Arc<dyn Embedder>,
    /// Time spent embedding query texts.
    embedding_spent: kgfuse_core::timing::TimeSpent,
    /// Values computed from the whole store, dropped on every write.
    derived: derived::Derived,
    /// The walks' edge index being built, if it is.
    edge_index_build: Arc<edge_index::Background>,
    text_predicates: Arc<Vec<NamedNode>>,
    /// Prefixes learned from loads; starts as `config.prefixes`, grows as files load.
    prefixes: Arc<RwLock<BTreeMap<String, String>>>,
    /// Held for the whole of each write: one write at a time per store, so writes
    /// from tasks sharing clones (a server's handlers) never interleave their
    /// journal entries or vector syncs. Reads never wait for it.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// Triples an insert-only write notes for its entailments before it closes
    /// a chunk of them ([`entailment::MAX_TOUCHED`]; smaller in tests).
    entailment_chunk: usize,
    /// The touched nodes whose derived triples one transaction replaces
    /// ([`entailment::NODES_PER_TRANSACTION`]; smaller in tests).
    entailment_nodes_per_transaction: usize,
}

/// What a write holds until it is done (see [`Store::begin_write`]).
struct WriteGuard {
    _scope: derived::WriteScope,
    _lock: tokio::sync::OwnedMutexGuard<()>,
    /// Told at the end of the write, for readers in other processes.
    graph: Graph,
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        // What the write left in RocksDB's memtables goes to disk now: closing
        // does not, and the next process to open the store would replay the
        // write-ahead log first (44 s and 1.4 GiB after a case base over
        // 100,000 functions, dev build).
        if let Err(error) = self.graph.flush() {
            tracing::warn!("the write is in the store's log but not flushed: {error}");
        }
        if let Err(error) = self.graph.mark_changed() {
            tracing::warn!(
                "other processes reading this graph may not notice this write for a while: {error}"
            );
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("embedder", &self.config.embedder.kind)
            .finish_non_exhaustive()
    }
}

fn graph_dir(dir: &Path) -> PathBuf {
    dir.join("graph")
}

/// The store's graph: on the SPARQL server `[graph]` names, else in `dir/graph`.
fn open_graph(dir: &Path, config: &StoreConfig) -> Result<Graph, StoreError> {
    Ok(match &config.graph {
        Some(remote) => Graph::connect(remote.clone())?,
        None => Graph::open(&graph_dir(dir))?,
    })
}

fn vector_dir(dir: &Path) -> PathBuf {
    dir.join("vectors")
}

/// Where the store's vectors are: on the object storage `[vectors]` names, else
/// in `dir/vectors`.
fn vector_location(dir: &Path, config: &StoreConfig) -> VectorLocation {
    match &config.vectors {
        Some(remote) => VectorLocation {
            uri: remote.uri.clone(),
            storage: remote
                .storage
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
        None => vector_dir(dir).as_path().into(),
    }
}

fn parse_predicates(config: &StoreConfig) -> Result<Vec<NamedNode>, StoreError> {
    config
        .text_predicates
        .iter()
        .map(|p| {
            NamedNode::new(p).map_err(|e| {
                StoreError::Invalid(format!(
                    "{CONFIG_FILE}: text predicate <{p}> is not an IRI: {e}"
                ))
            })
        })
        .collect()
}

/// What a load's quads tell the store as they are written: the text-bearing
/// subjects to embed again, and what the write touches or entails.
struct LoadWatch<'a> {
    touched: &'a mut entailment::Touched,
    changed: &'a mut changes::ChangedNodes,
    entailments: &'a mut entailment::NewEntailments,
    affected: &'a mut BTreeSet<String>,
    text_predicates: &'a [NamedNode],
    /// The subjects' text and types, noted when the store held little before.
    facts: Option<&'a mut StreamFacts>,
}

impl kgfuse_graph::LoadObserver for LoadWatch<'_> {
    fn quad(&mut self, quad: kgfuse_graph::model::QuadRef<'_>) {
        self.touched.quad(quad);
        self.changed.quad(quad);
        self.entailments.quad(quad);
        let text_predicate = self
            .text_predicates
            .iter()
            .position(|p| p.as_ref() == quad.predicate);
        if let kgfuse_graph::model::NamedOrBlankNodeRef::NamedNode(s) = quad.subject
            && text_predicate.is_some()
        {
            self.affected.insert(s.as_str().to_owned());
        }
        if let Some(facts) = self.facts.as_deref_mut() {
            facts.quad(quad, text_predicate);
        }
    }

    fn due_quads(&mut self, graph: &Graph) -> Result<Vec<Quad>, GraphError> {
        let derived = self.entailments.due_quads(graph)?;
        for quad in &derived {
            self.changed.quad(quad.as_ref());
        }
        if let Some(facts) = self.facts.as_deref_mut() {
            facts.derived(&derived);
        }
        Ok(derived)
    }

    fn closing_quads(&mut self, graph: &Graph) -> Result<Vec<Quad>, GraphError> {
        let derived = self.entailments.closing_quads(graph)?;
        for quad in &derived {
            self.changed.quad(quad.as_ref());
        }
        if let Some(facts) = self.facts.as_deref_mut() {
            facts.derived(&derived);
        }
        Ok(derived)
    }
}

impl Store {
    /// Creates a store in `dir` with the given configuration. The embedder is built
    /// first, so a missing model fails before anything is written.
    pub async fn init(dir: &Path, config: StoreConfig) -> Result<Self, StoreError> {
        if dir.join(CONFIG_FILE).exists() {
            return Err(StoreError::AlreadyInitialised(dir.display().to_string()));
        }
        let embedder: Arc<dyn Embedder> =
            Arc::from(kgfuse_vector::build_embedder(&config.embedder)?);
        let text_predicates = parse_predicates(&config)?;
        // Object storage that would lose a second writer's commits, or a missing
        // bucket, fails before anything is written.
        let location = vector_location(dir, &config);
        location.check_for_writers().await?;
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let graph = open_graph(dir, &config)?;
        // An interrupted earlier init may have left an empty table behind.
        let vectors = match VectorStore::open(&location, config.embedder.dimension, &config.memory)
            .await
        {
            Ok(v) if v.is_empty().await? => v,
            Ok(_) => {
                let _ = std::fs::remove_dir(dir);
                return Err(match &config.vectors {
                    Some(remote) => StoreError::VectorsInUse(remote.uri.clone()),
                    None => StoreError::AlreadyInitialised(dir.display().to_string()),
                });
            }
            Err(_) => {
                VectorStore::create(&location, config.embedder.dimension, &config.memory).await?
            }
        };
        // Its presence marks a complete store. The vocabulary is loaded after it:
        // a store left without one (a crash in between) gets it on the next open.
        config.write(dir)?;
        let store = Self::assemble(dir, config, graph, vectors, embedder, text_predicates);
        store
            .carry_ontology(&kgfuse_core::progress::NoProgress)
            .await?;
        Ok(store)
    }

    /// Creates a data directory that shares an existing store whose graph is on a
    /// SPARQL server and whose vectors are on object storage (another server
    /// behind the same load balancer, say): nothing is written to either, the
    /// vector table must exist with this embedder's dimension, and each data
    /// directory keeps its own journal. Concurrent writers are as safe as the
    /// object store's conditional PUT (checked here as at `init`).
    pub async fn attach(dir: &Path, config: StoreConfig) -> Result<Self, StoreError> {
        if dir.join(CONFIG_FILE).exists() {
            return Err(StoreError::AlreadyInitialised(dir.display().to_string()));
        }
        let (Some(_), Some(remote)) = (&config.graph, &config.vectors) else {
            return Err(StoreError::Invalid(
                "attaching shares a store whose graph is on a SPARQL server and whose vectors are on object storage".into(),
            ));
        };
        let embedder: Arc<dyn Embedder> =
            Arc::from(kgfuse_vector::build_embedder(&config.embedder)?);
        let text_predicates = parse_predicates(&config)?;
        let location = vector_location(dir, &config);
        location.check_for_writers().await?;
        let vectors = match VectorStore::open(&location, config.embedder.dimension, &config.memory)
            .await
        {
            Ok(vectors) => vectors,
            Err(VectorError::DimensionMismatch { expected, found }) => {
                return Err(StoreError::Invalid(format!(
                    "{} holds {found}-dimensional vectors; this embedder gives {expected}: attach with the embedder and dimension the store was made with",
                    remote.uri
                )));
            }
            Err(error) => {
                return Err(StoreError::Invalid(format!(
                    "there is no kgfuse store to attach to at {} ({error}): initialise one first",
                    remote.uri
                )));
            }
        };
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let graph = open_graph(dir, &config)?;
        config.write(dir)?;
        Ok(Self::assemble(
            dir,
            config,
            graph,
            vectors,
            embedder,
            text_predicates,
        ))
    }

    fn assemble(
        dir: &Path,
        config: StoreConfig,
        graph: Graph,
        vectors: VectorStore,
        embedder: Arc<dyn Embedder>,
        text_predicates: Vec<NamedNode>,
    ) -> Self {
        Self {
            dir: dir.to_owned(),
            prefixes: Arc::new(RwLock::new(config.prefixes.clone())),
            config: Arc::new(config),
            graph,
            vectors,
            embedder,
            embedding_spent: kgfuse_core::timing::TimeSpent::default(),
            derived: derived::Derived::default(),
            edge_index_build: Arc::default(),
            text_predicates: Arc::new(text_predicates),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            entailment_chunk: entailment::MAX_TOUCHED,
            entailment_nodes_per_transaction: entailment::NODES_PER_TRANSACTION,
        }
    }

    /// After a graph write failed. Embedded, it wrote nothing (one transaction)
    /// and the journal goes. Remote, a write cut short by the server or the
    /// network may have left part of itself behind, so the journal stays and the
    /// next open repairs, as after a crash.
    fn abandon(&self, journal: Journal) -> Result<(), StoreError> {
        if self.graph.is_remote() {
            tracing::warn!("the graph write failed part way; the next open repairs the store");
            return Ok(());
        }
        journal.finish_with(&changes::ChangedNodes::default())
    }

    /// When a journal is pending (a process died in the middle of a write, or a
    /// write of this one failed after its graph commit), rebuilds the derived
    /// graph and brings the vectors in step with the graph. Run by `open` and,
    /// under the write lock, before each write, so no later write removes the
    /// mark of an unfinished one.
    async fn finish_interrupted_write(&self, progress: &dyn Progress) -> Result<(), StoreError> {
        let Some(interrupted) = Journal::pending(&self.dir)? else {
            return Ok(());
        };
        tracing::warn!(
            "the previous {} did not finish ({}); bringing vectors in step with the graph",
            interrupted.operation,
            interrupted.detail
        );
        let journal = Journal::begin(&self.dir, "repair", "after an interrupted write")?;
        let inferred = self.entail_all()?;
        tracing::warn!("derived graph rebuilt: {inferred} inferred triples");
        let report = self.reconcile_all(progress).await?;
        journal.finish()?;
        tracing::warn!("repair done: {report}");
        Ok(())
    }

    /// Waits for earlier writes to finish, then clears the derived values; the
    /// guard is kept until this write is done.
    async fn begin_write(&self) -> WriteGuard {
        let lock = Arc::clone(&self.writer).lock_owned().await;
        WriteGuard {
            _scope: self.derived.write_scope(),
            _lock: lock,
            graph: self.graph.clone(),
        }
    }

    /// Opens the store in `dir`, repairing the vector side first if an earlier
    /// process died in the middle of a write, then bringing the kgfuse vocabulary
    /// it carries up to this build's.
    pub async fn open(dir: &Path, progress: &dyn Progress) -> Result<Self, StoreError> {
        if !dir.join(CONFIG_FILE).exists() {
            return Err(StoreError::NotInitialised(dir.display().to_string()));
        }
        let config = StoreConfig::read(dir)?;
        let text_predicates = parse_predicates(&config)?;
        let graph = open_graph(dir, &config)?;
        let vectors = VectorStore::open(
            &vector_location(dir, &config),
            config.embedder.dimension,
            &config.memory,
        )
        .await?;
        let embedder: Arc<dyn Embedder> =
            Arc::from(kgfuse_vector::build_embedder(&config.embedder)?);
        let store = Self::assemble(dir, config, graph, vectors, embedder, text_predicates);
        store.finish_interrupted_write(progress).await?;
        // A store made by another kgfuse (or before stores carried the
        // vocabulary) gets this build's, in place.
        if store.carry_ontology(progress).await? {
            tracing::info!(
                "the store now carries <{}>",
                kgfuse_core::ontology::graph_iri()
            );
        }
        Ok(store)
    }

    /// The version of the graph's content, for values kept on disk beside it
    /// (the lexicon's index): the count of writes finished in this directory, so
    /// an equal count means the graph has not changed since. `None` on a SPARQL
    /// server, where other clients write without counting.
    pub fn content_version(&self) -> Result<Option<u64>, StoreError> {
        if self.graph.is_remote() {
            return Ok(None);
        }
        journal::finished_writes(&self.dir).map(Some)
    }

    /// The IRIs the writes after content version `after` up to `upto` may
    /// have changed (subjects, predicates and IRI objects of the triples they
    /// added or removed), so a value kept beside the graph can read those
    /// again; `None` when it must read everything: one of them was a SPARQL
    /// update, a repair or a schema change, touched too many nodes, or its
    /// record is gone; and on a SPARQL server.
    pub fn changed_between(
        &self,
        after: u64,
        upto: u64,
    ) -> Result<Option<BTreeSet<String>>, StoreError> {
        if self.graph.is_remote() {
            return Ok(None);
        }
        changes::changed_between(&self.dir, after, upto)
    }

    /// Data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration read from `kgfuse.toml`.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The graph side (read access for queries; write through the store).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The vector side.
    pub fn vectors(&self) -> &VectorStore {
        &self.vectors
    }

    /// The store's embedder.
    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// Query options from the configuration: union default graph, default timeout,
    /// well-known prefixes plus prefixes learned from loaded files.
    pub fn query_options(&self) -> QueryOptions {
        let mut options = QueryOptions {
            union_default_graph: self.config.sparql.union_default_graph,
            timeout: (self.config.sparql.timeout_secs > 0)
                .then(|| Duration::from_secs(self.config.sparql.timeout_secs)),
            ..QueryOptions::default()
        };
        if let Ok(learned) = self.prefixes.read() {
            for (prefix, iri) in learned.iter() {
                if !options.prefixes.iter().any(|(p, _)| p == prefix) {
                    options.prefixes.push((prefix.clone(), iri.clone()));
                }
            }
        }
        options
    }

    /// Facts to note during an insert-only load, when the store holds few enough
    /// quads to list their subjects first: at most one per [`BYTES_PER_PRIOR_QUAD`]
    /// bytes of the files to load, so listing them costs less than the reads the
    /// noted facts save (`None` otherwise, on a SPARQL server, and for a store
    /// that embeds no text).
    fn stream_facts_for(
        &self,
        plan: &kgfuse_graph::LoadPlan,
    ) -> Result<Option<StreamFacts>, StoreError> {
        if self.text_predicates.is_empty() {
            return Ok(None);
        }
        let bytes: u64 = plan
            .files
            .iter()
            .filter(|f| f.action == kgfuse_graph::LoadAction::Insert)
            .filter_map(|f| std::fs::metadata(&f.path).ok())
            .map(|m| m.len())
            .sum();
        let limit = usize::try_from(bytes / BYTES_PER_PRIOR_QUAD).unwrap_or(usize::MAX);
        Ok(self
            .graph
            .all_subjects_if_at_most(limit)?
            .map(StreamFacts::new))
    }

    /// Loads RDF files; see [`kgfuse_graph::LoadRequest`] for graph placement.
    /// Atomic against bad input: a file that fails to parse leaves both sides untouched.
    pub async fn load_files(
        &self,
        sources: &[RdfSource],
        graph: Option<NamedNode>,
        progress: &dyn Progress,
    ) -> Result<LoadSummary, StoreError> {
        let request = LoadRequest {
            sources: sources.to_vec(),
            graph,
            replace: false,
            base_iri: None,
        };
        self.load(&request, progress).await
    }

    /// Loads what `request` says (with `replace`, one file replaces the content of
    /// its target graph: the Graph Store Protocol's PUT). Atomic against bad input.
    pub async fn load(
        &self,
        request: &LoadRequest,
        progress: &dyn Progress,
    ) -> Result<LoadSummary, StoreError> {
        let _write = self.begin_write().await;
        self.finish_interrupted_write(progress).await?;
        let mut phases = phases::Phases::start("load");
        let sources = &request.sources;
        let mut plan = self.graph.plan_load(request)?;
        // The store already carries kgfuse's own vocabulary: loading the same text
        // again into a graph of its own would only repeat every triple.
        let mut carried = Vec::new();
        if plan.own_graphs {
            plan.files.retain(|file| {
                let same = file.content_hash == kgfuse_core::ontology::content_hash();
                if same {
                    carried.push(file.path.clone());
                }
                !same
            });
        }
        // Subjects whose text may change: text-bearing subjects of replaced graphs
        // (before) and of every parsed quad (after).
        let mut affected = BTreeSet::new();
        // An insert-only load writes what its triples entail in its own commit;
        // one that replaces graphs recomputes the nodes it touched afterwards.
        let insert_only = plan.replaced_graphs().next().is_none();
        let (mut touched, mut entailments) = if insert_only {
            (entailment::Touched::default(), self.new_entailments()?)
        } else {
            (self.touched()?, entailment::NewEntailments::default())
        };
        let mut changed = changes::ChangedNodes::default();
        for replaced in plan.replaced_graphs() {
            affected.extend(
                self.graph
                    .text_subjects_in_graph(replaced, &self.text_predicates)?,
            );
            let old = self.graph.graph_triples(replaced)?;
            changed.triples(&old);
            touched.triples(&old);
        }
        let detail = sources
            .iter()
            .map(|s| s.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let journal = Journal::begin(&self.dir, "load", &detail)?;
        let mut facts = if insert_only {
            self.stream_facts_for(&plan)?
        } else {
            None
        };
        phases.lap("plan (file hashes, replaced graphs' text subjects)");
        let report = self.graph.execute_load(
            &plan,
            &mut LoadWatch {
                touched: &mut touched,
                changed: &mut changed,
                entailments: &mut entailments,
                affected: &mut affected,
                text_predicates: &self.text_predicates,
                facts: facts.as_mut(),
            },
            progress,
        );
        let report = match report {
            Ok(report) => report,
            Err(e) => {
                self.abandon(journal)?;
                return Err(StoreError::from(e).before_commit("load", self.graph.is_remote()));
            }
        };
        fault_point("after-graph-commit");
        phases.lap("graph write (parse, bulk load)");
        let committed = format!("{} quads from {} files", report.quads, sources.len());
        let step = |result, step| after_commit(result, "load", &committed, step);
        step(self.entail_touched(&touched), "the derived graph's update")?;
        step(
            self.finish_new_entailments(&entailments),
            "the derived graph's update",
        )?;
        if entailments.needs_rebuild()
            && let Some(facts) = facts.as_mut()
        {
            facts.types_incomplete();
        }
        phases.lap("entailment");
        let affected: Vec<String> = affected.into_iter().collect();
        let vectors = after_commit(
            self.sync_subjects_knowing(&affected, facts.as_ref(), progress)
                .await,
            "load",
            &committed,
            "writing the vector rows",
        )?;
        phases.lap("vectors (text, embedding, LanceDB)");
        step(
            self.remember_prefixes(&report.prefixes),
            "remembering the prefixes",
        )?;
        step(journal.finish_with(&changed), "removing the journal")?;
        self.maintain_vector_index(progress).await;
        phases.lap("prefixes, journal, vector index");
        phases.finish();
        let vocabulary = kgfuse_core::ontology::graph_iri();
        Ok(LoadSummary {
            files: report
                .files
                .into_iter()
                .map(|(path, graph, action, quads)| LoadedFile {
                    path,
                    graph: graph.into_string(),
                    action: match action {
                        kgfuse_graph::LoadAction::Insert => LoadAction::Inserted,
                        kgfuse_graph::LoadAction::Replace => LoadAction::Replaced,
                        kgfuse_graph::LoadAction::SkipUnchanged => LoadAction::Unchanged,
                    },
                    quads,
                })
                .chain(carried.into_iter().map(|path| LoadedFile {
                    path,
                    graph: vocabulary.clone(),
                    action: LoadAction::Carried,
                    quads: 0,
                }))
                .collect(),
            quads: report.quads,
            vectors,
        })
    }

    /// Writes extracted sources, each replacing its own graph, drops the graphs in
    /// `drop`, then brings the vector rows of every touched node in step. The graph
    /// side is one commit (the bulk loader's when every graph is new, else a
    /// transaction); a crash before the vectors are done is repaired on the next
    /// open, like any other write.
    pub async fn write_sources(
        &self,
        sources: &[SourceGraph],
        drop: &[NamedNode],
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        if sources.is_empty() && drop.is_empty() {
            return Ok(SyncReport::default());
        }
        let _write = self.begin_write().await;
        self.finish_interrupted_write(progress).await?;
        let mut phases = phases::Phases::start("ingest");
        // Text-bearing subjects before (old graphs) and after (new triples).
        let mut affected = BTreeSet::new();
        let mut touched = self.touched()?;
        let mut changed = changes::ChangedNodes::default();
        let mut replaces = !drop.is_empty();
        for graph in drop {
            affected.extend(
                self.graph
                    .text_subjects_in_graph(graph, &self.text_predicates)?,
            );
            let old = self.graph.graph_triples(graph)?;
            replaces |= !old.is_empty();
            changed.triples(&old);
            touched.triples(&old);
        }
        // What each source's graph held: a triple it held and holds again
        // changes neither what is derived nor the lexicon (a case base rebuilt
        // with the same clusters touches nothing).
        let mut held = Vec::with_capacity(sources.len());
        for source in sources {
            affected.extend(
                self.graph
                    .text_subjects_in_graph(&source.graph, &self.text_predicates)?,
            );
            let old = self.graph.graph_triples(&source.graph)?;
            replaces |= !old.is_empty();
            let before = HeldTriples::new(old, source);
            changed.triples(&before.removed);
            touched.triples(&before.removed);
            for quad in source.quads().filter(|q| before.is_new(q)) {
                changed.quad(quad.as_ref());
            }
            held.push(before);
        }
        for triple in sources.iter().flat_map(|s| &s.triples) {
            if let kgfuse_graph::model::NamedOrBlankNode::NamedNode(subject) = &triple.subject
                && self.text_predicates.contains(&triple.predicate)
            {
                affected.insert(subject.as_str().to_owned());
            }
        }
        let insert_only = !replaces && !self.graph.is_remote();
        let mut entailments = self.note_source_quads(sources, &held, insert_only, &mut touched)?;
        std::mem::drop(held);
        let detail = format!("{} sources written, {} dropped", sources.len(), drop.len());
        let journal = Journal::begin(&self.dir, "ingest", &detail)?;
        phases.lap("plan (old graphs' text subjects)");
        if let Err(e) = self.commit_sources(sources, drop, insert_only, &mut entailments) {
            self.abandon(journal)?;
            return Err(StoreError::from(e).before_commit("ingest", self.graph.is_remote()));
        }
        fault_point("after-graph-commit");
        phases.lap("graph write");
        let step = |result, step| after_commit(result, "ingest", &detail, step);
        step(self.entail_touched(&touched), "the derived graph's update")?;
        step(
            self.finish_new_entailments(&entailments),
            "the derived graph's update",
        )?;
        phases.lap("entailment");
        let affected: Vec<String> = affected.into_iter().collect();
        let report = after_commit(
            self.sync_subjects(&affected, progress).await,
            "ingest",
            &detail,
            "writing the vector rows",
        )?;
        phases.lap("vectors (text, embedding, LanceDB)");
        step(journal.finish_with(&changed), "removing the journal")?;
        self.maintain_vector_index(progress).await;
        phases.lap("journal, vector index");
        phases.finish();
        Ok(report)
    }

    /// What a write of `sources` entails: new graphs only (`insert_only`, a first
    /// ingest) have their entailments found now, for the bulk commit; otherwise
    /// their new quads (`held` tells them) note the nodes whose entailments are
    /// recomputed after it.
    fn note_source_quads(
        &self,
        sources: &[SourceGraph],
        held: &[HeldTriples],
        insert_only: bool,
        touched: &mut entailment::Touched,
    ) -> Result<entailment::NewEntailments, StoreError> {
        if !insert_only {
            for (source, held) in sources.iter().zip(held) {
                for quad in source.quads().filter(|q| held.is_new(q)) {
                    touched.quad(quad.as_ref());
                }
            }
            return Ok(entailment::NewEntailments::default());
        }
        let mut entailments = self.new_entailments()?;
        for quad in sources.iter().flat_map(SourceGraph::quads) {
            entailments.quad(quad.as_ref());
            entailments.close_if_full(&self.graph)?;
        }
        Ok(entailments)
    }

    /// The graph side of [`Store::write_sources`], one commit: the bulk loader
    /// with the derived triples for new graphs only, else a transaction.
    fn commit_sources(
        &self,
        sources: &[SourceGraph],
        drop: &[NamedNode],
        insert_only: bool,
        entailments: &mut entailment::NewEntailments,
    ) -> Result<(), GraphError> {
        if insert_only {
            let derived = entailments.closing_quads(&self.graph)?;
            self.graph.insert_new_sources(sources, derived)?;
        } else {
            self.graph.write_sources(sources, drop)?;
        }
        Ok(())
    }

    /// Runs a SPARQL Update and brings the vectors in step with its effect.
    pub async fn update(
        &self,
        sparql: &str,
        progress: &dyn Progress,
    ) -> Result<SyncReport, StoreError> {
        let _write = self.begin_write().await;
        self.finish_interrupted_write(progress).await?;
        let journal = Journal::begin(
            &self.dir,
            "update",
            &sparql.chars().take(200).collect::<String>(),
        )?;
        if let Err(e) = self.graph.update(sparql, &self.query_options()) {
            self.abandon(journal)?;
            return Err(StoreError::from(e).before_commit("update", self.graph.is_remote()));
        }
        // An update can touch anything: the derived graph is rebuilt.
        let committed = "the SPARQL update";
        after_commit(
            self.entail_all(),
            "update",
            committed,
            "the derived graph's rebuild",
        )?;
        let report = after_commit(
            self.reconcile_all(progress).await,
            "update",
            committed,
            "writing the vector rows",
        )?;
        after_commit(
            journal.finish(),
            "update",
            committed,
            "removing the journal",
        )?;
        self.maintain_vector_index(progress).await;
        Ok(report)
    }

    /// Brings every vector row in step with the graph (what `open` does after a crash)
    /// and restores the kgfuse vocabulary graph when it is missing.
    pub async fn repair(&self, progress: &dyn Progress) -> Result<SyncReport, StoreError> {
        let report = {
            let _write = self.begin_write().await;
            let journal = Journal::begin(&self.dir, "repair", "requested")?;
            self.entail_all()?;
            let report = self.reconcile_all(progress).await?;
            journal.finish()?;
            self.maintain_vector_index(progress).await;
            report
        };
        // A vocabulary graph dropped by hand comes back (a write of its own).
        self.carry_ontology(progress).await?;
        Ok(report)
    }

    /// The `k` rows nearest to `question` among the kinds `filter` admits, none
    /// it holds out ([`Question::holding_out`]); embeds the question unless it
    /// was embedded already.
    pub async fn search(
        &self,
        question: &Question,
        k: usize,
        filter: KindFilter<'_>,
    ) -> Result<Vec<VectorHit>, StoreError> {
        let vector = self.vector_of(question)?;
        let held_out = question.held_out();
        let mut hits = self
            .vectors
            .search(vector, k + held_out.len(), filter)
            .await?;
        hits.retain(|hit| !held_out.contains(&hit.iri));
        hits.truncate(k);
        Ok(hits)
    }

    /// The `k` rows whose text best matches `text` by BM25 full-text search.
    pub async fn full_text(&self, text: &str, k: usize) -> Result<Vec<VectorHit>, StoreError> {
        Ok(self.vectors.full_text(text, k).await?)
    }

    /// The embedding of `text` with the store's embedder (unit length).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, StoreError> {
        self.embedding_spent
            .measure(|| self.embedder.embed(&[text.to_owned()]))?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::Invalid("the embedder returned no vector".into()))
    }

    /// The embedding of `question`: computed with the store's embedder the first
    /// time, then the kept one.
    pub fn vector_of<'q>(&self, question: &'q Question) -> Result<&'q [f32], StoreError> {
        match question.vector_if_embedded() {
            Some(vector) => Ok(vector),
            None => Ok(question.keep(self.embed(question.text())?)),
        }
    }

    /// The store's value of type `T`, computed from the whole store: built by
    /// `build` on first use and kept until the next write through this store
    /// (`load_files`, `write_sources`, `update`, `repair`) or, on a SPARQL
    /// server, by another process. One value per type ([`WholeStore`]).
    pub fn derived<T: WholeStore, E>(
        &self,
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        self.derived.follow(self.graph.changes_elsewhere());
        self.derived.get_or_build(build)
    }

    /// [`Store::derived`] for a value whose build awaits (reads vector rows,
    /// say). Two questions that find it absent at once may both build it; the
    /// one finished last is kept.
    pub async fn derived_async<T: WholeStore, E, F>(
        &self,
        build: impl FnOnce() -> F,
    ) -> Result<Arc<T>, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        self.derived.follow(self.graph.changes_elsewhere());
        if let Some(value) = self.derived.get::<T>() {
            return Ok(value);
        }
        let generation = self.derived.generation();
        let value = Arc::new(build().await?);
        self.derived.keep(generation, Arc::clone(&value));
        Ok(value)
    }

    /// The graph's edges in memory for walks ([`kgfuse_graph::EdgeIndex`]), once
    /// walks on this store have spent about as long reading from the graph as
    /// building the index takes ([`INDEX_COST_PER_QUAD`] a quad); kept until the
    /// next write. The build runs on a thread of its own, started by the first
    /// call that finds it worth it; `None` until it is done, on a SPARQL server,
    /// and for a graph of more edges than `[memory] edge_index_mib` holds
    /// ([`Store::max_indexed_edges`]).
    pub fn edge_index(&self) -> Result<Option<Arc<kgfuse_graph::EdgeIndex>>, StoreError> {
        let walked = self.graph.walk_read_time();
        if self.graph.is_remote() || walked < MIN_WALK_BEFORE_INDEXING {
            return Ok(None);
        }
        let quads = self.derived(|| self.graph.len().map(QuadCount))?;
        let building =
            INDEX_COST_PER_QUAD.saturating_mul(u32::try_from(quads.0).unwrap_or(u32::MAX));
        if walked < building {
            return Ok(None);
        }
        self.derived.follow(self.graph.changes_elsewhere());
        if let Some(index) = self.derived.get::<edge_index::KeptIndex>() {
            return Ok(index.0.clone());
        }
        self.edge_index_build
            .start(&self.graph, &self.derived, self.max_indexed_edges());
        Ok(None)
    }

    /// Most edges the walks' edge index may hold: what `[memory] edge_index_mib`
    /// in kgfuse.toml holds (2,097,152 by default).
    pub fn max_indexed_edges(&self) -> usize {
        self.config.memory.edge_index_edges()
    }

    /// Blocks until the work this store started in the background is done (the
    /// walks' edge index, see [`Store::edge_index`]); returns at once when none
    /// runs. For measurements of a steady state, such as benchmarks: requests
    /// never need to wait for it.
    pub fn wait_for_background_work(&self) {
        self.edge_index_build.wait();
    }

    /// Where time went since the store was opened: inside Oxigraph, inside LanceDB,
    /// and embedding query texts. The rest of a request is kgfuse's own code.
    pub fn time_spent(&self) -> TimeSplit {
        TimeSplit {
            graph: self.graph.time_spent(),
            graph_calls: self.graph.calls(),
            vectors: self.vectors.time_spent(),
            vector_calls: self.vectors.calls(),
            embedding: self.embedding_spent.total(),
            embeddings: self.embedding_spent.calls(),
        }
    }

    /// The stored vectors of these nodes (those that have a row).
    pub async fn vectors_of(&self, iris: &[String]) -> Result<Vec<(String, Vec<f32>)>, StoreError> {
        Ok(self.vectors.vectors_of(iris).await?)
    }

    /// Similarity of `question` to each of the given nodes it does not hold
    /// out, best first.
    pub async fn search_among(
        &self,
        question: &Question,
        iris: &[String],
    ) -> Result<Vec<VectorHit>, StoreError> {
        self.nearest_among(question, iris, iris.len()).await
    }

    /// The `k` nodes among `iris` (those `question` does not hold out) most
    /// similar to it, best first.
    pub async fn nearest_among(
        &self,
        question: &Question,
        iris: &[String],
        k: usize,
    ) -> Result<Vec<VectorHit>, StoreError> {
        let vector = self.vector_of(question)?;
        let held_out = question.held_out();
        let iris: Vec<String> = iris
            .iter()
            .filter(|iri| !held_out.contains(*iri))
            .cloned()
            .collect();
        Ok(self.vectors.nearest_among(vector, &iris, k).await?)
    }

    /// Sizes of both sides.
    pub async fn stats(&self) -> Result<StoreStats, StoreError> {
        let graph = self.graph.stats()?;
        Ok(StoreStats {
            triples: graph.quads,
            inferred_triples: self.graph.inferred_len()?,
            graphs: graph.graphs,
            nodes_by_class: graph.classes,
            vector_rows: self.vectors.len().await?,
            embedder: self.config.embedder.kind.to_string(),
            dimension: self.config.embedder.dimension,
            vector_index: self.vectors.vector_index_status().await?,
            fingerprints: self.graph.file_fingerprints()?,
        })
    }

    fn remember_prefixes(&self, prefixes: &[(String, String)]) -> Result<(), StoreError> {
        let known = self.prefixes.read().map(|p| p.clone()).unwrap_or_default();
        let fresh: Vec<&(String, String)> = prefixes
            .iter()
            .filter(|(p, _)| !p.is_empty() && !known.contains_key(p))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        // Re-read so concurrent edits of kgfuse.toml by hand are not lost.
        let mut config = StoreConfig::read(&self.dir)?;
        for (prefix, iri) in &fresh {
            config
                .prefixes
                .entry(prefix.clone())
                .or_insert_with(|| iri.clone());
        }
        config.write(&self.dir)?;
        // And offer them to queries of this process at once, not only after a reopen.
        if let Ok(mut learned) = self.prefixes.write() {
            for (prefix, iri) in fresh {
                learned.entry(prefix.clone()).or_insert_with(|| iri.clone());
            }
        }
        Ok(())
    }
}

/// Test hook: `KGFUSE_FAULT=<name>` aborts the process (like `kill -9`) at the
/// named point, so crash recovery can be tested deterministically.
fn fault_point(name: &str) {
    if std::env::var("KGFUSE_FAULT").is_ok_and(|v| v == name) {
        eprintln!("KGFUSE_FAULT: aborting at {name}");
        std::process::abort();
    }
}

/// What the unit tests of several modules share.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::{LoadSummary, Store};
    use kgfuse_core::progress::NoProgress;
    use std::path::Path;

    /// A new store in a scratch directory, with the hash embedder at 32
    /// dimensions (kept alive by the returned directory).
    pub(crate) async fn hash_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(
            &dir.path().join("store"),
            kgfuse_core::config::StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 32),
        )
        .await
        .expect("init");
        (dir, store)
    }

    /// Writes `text` to `dir/name` and loads that file into `store`.
    pub(crate) async fn load_text(
        store: &Store,
        dir: &Path,
        name: &str,
        text: &str,
    ) -> LoadSummary {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write");
        store
            .load_files(&[file.as_path().into()], None, &NoProgress)
            .await
            .expect("load")
    }
}
