#![doc = include_str!("../README.md")]

pub use describe::{
    EntityCandidate, EntityDescription, EntityMatch, EntityStatus, IncomingTriple, MAX_CANDIDATES,
    MAX_DESCRIBED_TRIPLES, OutgoingTriple, TermKind,
};
pub use ingest::{CodeLanguage, IngestCodeOptions, IngestReport};
pub use kgfuse_answer::AskOptions;
pub use kgfuse_core::answer::{
    Answer, AnswerStatus, Citation, Contradiction, GroundingStatus, ModelUsage,
};
pub use kgfuse_core::config::{
    EmbedderConfig, EmbedderKind, Entailment, MiniLmBackend, RemoteAuth, RemoteGraphConfig,
    RemoteVectorsConfig, StoreConfig, VectorIndexConfig,
};
pub use kgfuse_core::context::{
    AnswerSet, CaseInfo, Dispatch, Dropped, Fact, FunctionInfo, FusedContext, SourceRef, TextHit,
    TraceStage,
};
pub use kgfuse_core::error_chain_mentions_disk_full;
pub use kgfuse_core::memory;
pub use kgfuse_core::progress::{NoProgress, Progress};
/// The text toolkit every part shares: IRIs' local names and prefixed forms,
/// identifier words, singulars, code fences, cosine and quantiles.
pub use kgfuse_core::{iri, math, text};
/// Fingerprints of loaded files' triples (RDFC-1.0).
pub use kgfuse_graph::fingerprint;
pub use kgfuse_graph::model;
pub use kgfuse_graph::templates::Template;
pub use kgfuse_graph::{
    DEMOTE_AFTER, GraphError, LimitedOutcome, QueryOptions, QueryOutcome, RdfFormat, RdfSource,
    ReadOnlyOptions, ResultsFormat, file_graph_iri, format_from_name,
};
pub use kgfuse_ingest::IngestError;
pub use kgfuse_ingest::docs::DocsOptions;
pub use kgfuse_llm::{
    Claim, Draft, LanguageModel, LlmError, OpenAiChat, OpenAiChatConfig, Passage, Relevance,
    RuleBased, SparqlRequest, Usage,
};
pub use kgfuse_retrieve::{
    CaseBaseOptions, CaseBaseReport, Depth, DomainOptions, Expander, NeighborhoodOptions,
    PathLimits, RetrieveOptions, Strategy, Understanding, UnknownStrategy,
};
pub use kgfuse_shacl::{
    KGFUSE_SHAPES, KGFUSE_SHAPES_NAME, Report as ValidationReport, ShaclError, Shapes,
    ValidationResult,
};
pub use kgfuse_store::{
    CheckReport, Derivation, FileFingerprint, FileValidation, LoadAction, LoadSummary, LoadedFile,
    Provenance, Question, StoreError, StoreStats, SyncReport,
};
pub use kgfuse_vector::{EmbedError, KindFilter, VectorHit, VectorIndexStatus};

/// The matrix kernels (BLAS) the MiniLM encoder multiplies with, for a binary to
/// set its process up before it does anything else.
pub mod blas {
    pub use kgfuse_vector::{
        blas_kernels as kernels, blas_kernels_to_request as kernels_to_request,
        restart_with_faster_blas_kernels as restart_with_faster_kernels,
    };
}

/// The vector table's rows and batch embedding, for benchmarks and tools that
/// write or time vectors themselves (the store does both on every load).
pub mod vectors {
    pub use kgfuse_vector::{VectorRow, embed_in_batches};
}

mod builder;
mod describe;
mod error;
mod ingest;

pub use builder::EngineBuilder;

/// What [`Engine::repair`] rewrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// The vector side.
    pub vectors: SyncReport,
    /// The lexicon's index.
    pub lexicon: kgfuse_retrieve::LexiconChanges,
    /// Edges of `paths`' data-flow graph written to its file anew.
    pub data_flow_edges: usize,
    /// Packages written to `domain`'s file anew.
    pub packages: usize,
}

impl std::fmt::Display for RepairReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; lexicon entries: {} written, {} removed, {} unchanged; data-flow graph: {} edges \
             written; packages: {} written",
            self.vectors,
            self.lexicon.written,
            self.lexicon.removed,
            self.lexicon.unchanged,
            self.data_flow_edges,
            self.packages
        )
    }
}
pub use error::Error;

use kgfuse_store::Store;
use std::path::Path;
use std::sync::Arc;

/// How to initialise a new data directory.
#[derive(Debug, Clone)]
pub struct EngineInit {
    config: StoreConfig,
}

impl EngineInit {
    /// Sets when the vector index is built and refreshed (default: built once a
    /// write leaves 50,000 rows; see [`VectorIndexConfig`]).
    #[must_use]
    pub fn vector_index(mut self, settings: VectorIndexConfig) -> Self {
        self.config.vector_index = settings;
        self
    }

    /// Which entailment the store materialises (default: RDFS; see
    /// [`Entailment`]).
    #[must_use]
    pub fn entailment(mut self, entailment: Entailment) -> Self {
        self.config.reasoning.entailment = entailment;
        self
    }

    /// Keeps the graph on a SPARQL 1.1 server instead of in the data directory
    /// (default: embedded Oxigraph; see [`RemoteGraphConfig`]).
    #[must_use]
    pub fn remote_graph(mut self, graph: RemoteGraphConfig) -> Self {
        self.config.graph = Some(graph);
        self
    }

    /// Keeps the vectors on S3-compatible object storage instead of in the data
    /// directory (see [`RemoteVectorsConfig`]).
    #[must_use]
    pub fn remote_vectors(mut self, vectors: RemoteVectorsConfig) -> Self {
        self.config.vectors = Some(vectors);
        self
    }

    /// The model-free hashing embedder with vectors of `dimension`.
    pub fn hash(dimension: usize) -> Self {
        Self {
            config: StoreConfig::new(EmbedderKind::Hash, dimension),
        }
    }

    /// all-MiniLM-L6-v2 from `model_dir` (default: where `make models` installs it).
    pub fn minilm(model_dir: Option<&Path>) -> Self {
        let mut config = StoreConfig::new(EmbedderKind::Minilm, 384);
        let dir = model_dir.map_or_else(kgfuse_vector::default_minilm_dir, Path::to_path_buf);
        config.embedder.model = Some("all-MiniLM-L6-v2".into());
        config.embedder.model_dir = Some(dir.display().to_string());
        Self { config }
    }

    /// A static embedder distilled from the all-MiniLM-L6-v2 in `model_dir`
    /// (default: where `make models` installs it): a token table, about a hundred
    /// times faster than MiniLM. The table is distilled once, the first time a
    /// store opens with it, and kept beside the model.
    pub fn distilled(model_dir: Option<&Path>) -> Self {
        let mut config = StoreConfig::new(EmbedderKind::Static, 384);
        let dir = model_dir.map_or_else(kgfuse_vector::default_minilm_dir, Path::to_path_buf);
        config.embedder.model = Some("all-MiniLM-L6-v2, distilled".into());
        config.embedder.model_dir = Some(dir.display().to_string());
        Self { config }
    }

    /// An OpenAI-compatible embeddings endpoint; base URL, model and key come from
    /// `KGFUSE_OPENAI_BASE_URL`, `KGFUSE_OPENAI_EMBED_MODEL`, `KGFUSE_OPENAI_API_KEY`
    /// when not given. The dimension is learned by probing the service once.
    pub fn openai(base_url: Option<&str>, model: Option<&str>) -> Result<Self, Error> {
        let mut settings = kgfuse_vector::OpenAiConfig::from_env();
        if let Some(url) = base_url {
            settings.base_url = url.to_owned();
        }
        if let Some(model) = model {
            settings.model = model.to_owned();
        }
        let probe = kgfuse_vector::OpenAiEmbedder::new(settings.clone())?;
        let mut config = StoreConfig::new(
            EmbedderKind::Openai,
            kgfuse_vector::Embedder::dimension(&probe),
        );
        config.embedder.base_url = Some(settings.base_url);
        config.embedder.model = Some(settings.model);
        Ok(Self { config })
    }

    /// Starts from a full configuration (text predicates, batch size...).
    pub fn from_config(config: StoreConfig) -> Self {
        Self { config }
    }
}

/// A kgfuse data directory opened for use, with the language model its judgement
/// steps call (the offline [`RuleBased`] unless [`Engine::with_model`] says
/// otherwise) and default retrieval and answering options. Made by
/// [`Engine::open`], [`Engine::init`] or [`Engine::builder`]. `Send + Sync` and
/// cheap to clone; clones share the stores, the model and the defaults.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    model: Arc<dyn LanguageModel>,
    defaults: Arc<builder::Defaults>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.store)
            .field("model", &self.model.name())
            .finish()
    }
}

impl Engine {
    /// Creates a new data directory.
    pub async fn init(dir: impl AsRef<Path>, init: EngineInit) -> Result<Self, Error> {
        Ok(Self::from_store(
            Store::init(dir.as_ref(), init.config).await?,
        ))
    }

    /// Creates a data directory that shares an existing store on a SPARQL server
    /// and object storage ([`Store::attach`]).
    pub async fn attach(dir: impl AsRef<Path>, init: EngineInit) -> Result<Self, Error> {
        Ok(Self::from_store(
            Store::attach(dir.as_ref(), init.config).await?,
        ))
    }

    /// Opens an existing data directory (repairing it after a crash if needed).
    pub async fn open(dir: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with_progress(dir, &NoProgress).await
    }

    /// Like [`Engine::open`], reporting repair progress.
    pub async fn open_with_progress(
        dir: impl AsRef<Path>,
        progress: &dyn Progress,
    ) -> Result<Self, Error> {
        Ok(Self::from_store(Store::open(dir.as_ref(), progress).await?))
    }

    fn from_store(store: Store) -> Self {
        Self {
            store,
            model: Arc::new(RuleBased::default()),
            defaults: Arc::default(),
        }
    }

    /// The same engine with another language model for dispatch, entity
    /// extraction, package choice, the refinement gate, query rewriting,
    /// text-to-SPARQL and answer drafting.
    #[must_use]
    pub fn with_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = model;
        self
    }

    /// The language model in use.
    pub fn model(&self) -> &dyn LanguageModel {
        self.model.as_ref()
    }

    /// The underlying paired store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Loads RDF files (format from the extension). Without `graph`, each file goes
    /// to its own named graph and replaces it when reloaded with other content.
    pub async fn load(
        &self,
        paths: &[impl AsRef<Path>],
        graph: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<LoadSummary, Error> {
        let sources: Vec<RdfSource> = paths.iter().map(|p| p.as_ref().into()).collect();
        self.load_sources(&sources, graph, progress).await
    }

    /// Loads RDF files with explicit formats.
    pub async fn load_sources(
        &self,
        sources: &[RdfSource],
        graph: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<LoadSummary, Error> {
        let graph = graph
            .map(|g| {
                model::NamedNode::new(g).map_err(|e| Error::Invalid(format!("graph <{g}>: {e}")))
            })
            .transpose()?;
        self.store
            .load_files(sources, graph, progress)
            .await
            .map_err(Error::from)
    }

    /// Checks files against SHACL `shapes` as they would be loaded by
    /// [`Engine::load_sources`], writing nothing: one report per file, about the
    /// nodes the file mentions (see [`Store::validate_load`]).
    pub fn validate_sources(
        &self,
        sources: &[RdfSource],
        graph: Option<&str>,
        shapes: &Shapes,
    ) -> Result<Vec<FileValidation>, Error> {
        let graph = graph
            .map(|g| {
                model::NamedNode::new(g).map_err(|e| Error::Invalid(format!("graph <{g}>: {e}")))
            })
            .transpose()?;
        let request = kgfuse_graph::LoadRequest {
            sources: sources.to_vec(),
            graph,
            replace: false,
            base_iri: None,
        };
        self.store
            .validate_load(&request, shapes)
            .map_err(Error::from)
    }

    /// Validates the whole store (asserted and inferred triples) against SHACL
    /// `shapes`.
    pub fn validate(&self, shapes: &Shapes) -> Result<ValidationReport, Error> {
        self.store.validate(shapes).map_err(Error::from)
    }

    /// Reads SHACL shapes: kgfuse's own (`ontology/kgfuse-shapes.ttl`) when
    /// `core` is set, then each Turtle file (relative IRIs resolve against the
    /// file).
    pub fn read_shapes(files: &[std::path::PathBuf], core: bool) -> Result<Shapes, Error> {
        let mut texts = Vec::new();
        if core {
            texts.push((KGFUSE_SHAPES_NAME.to_owned(), KGFUSE_SHAPES.to_owned()));
        }
        for path in files {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.display().to_string(),
                source,
            })?;
            texts.push((file_graph_iri(path)?.into_string(), text));
        }
        if texts.is_empty() {
            return Err(Error::Invalid(
                "no shapes: name a shapes file, or keep kgfuse's own shapes".into(),
            ));
        }
        let sources: Vec<(&str, &str)> = texts
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        Ok(Shapes::from_turtle(&sources)?)
    }

    /// Loads one RDF source into the named graph `graph`: added to what the graph
    /// holds, or replacing it when `replace` is set (the Graph Store Protocol's POST
    /// and PUT), in one write with the vectors following. Relative IRIs in the source
    /// resolve against `graph`.
    pub async fn load_into_graph(
        &self,
        source: RdfSource,
        graph: &str,
        replace: bool,
        progress: &dyn Progress,
    ) -> Result<LoadSummary, Error> {
        let graph = named_graph(graph)?;
        let request = kgfuse_graph::LoadRequest {
            sources: vec![source],
            graph: Some(graph.clone()),
            replace,
            base_iri: Some(graph),
        };
        self.store
            .load(&request, progress)
            .await
            .map_err(Error::from)
    }

    /// Whether the named graph `graph` holds at least one triple.
    pub fn has_graph(&self, graph: &str) -> Result<bool, Error> {
        Ok(self.store.graph().contains_graph(&named_graph(graph)?)?)
    }

    /// Removes the named graph `graph`; vector rows of nodes that lose their text
    /// go too.
    pub async fn drop_graph(
        &self,
        graph: &str,
        progress: &dyn Progress,
    ) -> Result<SyncReport, Error> {
        self.store
            .write_sources(&[], &[named_graph(graph)?], progress)
            .await
            .map_err(Error::from)
    }

    /// Runs a SPARQL query with the store's defaults.
    pub fn sparql(&self, query: &str) -> Result<QueryOutcome, Error> {
        self.sparql_with(query, &self.store.query_options())
    }

    /// Runs a SPARQL query with explicit options.
    pub fn sparql_with(&self, query: &str, options: &QueryOptions) -> Result<QueryOutcome, Error> {
        Ok(self.store.graph().query(query, options)?)
    }

    /// Runs a SPARQL query with variables bound to terms (never pasted into the text).
    pub fn sparql_bound(
        &self,
        query: &str,
        bindings: &[(String, model::Term)],
        options: &QueryOptions,
    ) -> Result<QueryOutcome, Error> {
        let parsed = kgfuse_graph::parse_query(query, options)?;
        Ok(self
            .store
            .graph()
            .query_algebra(parsed, bindings, options)?)
    }

    /// Runs a query from a caller not trusted with writes (an agent tool, an HTTP
    /// client): updates are refused, results are cut at `limits.max_rows`
    /// (`truncated` says so), the query is cancelled after `limits.timeout`, and the
    /// SPARQL Protocol's dataset, when given, replaces the query's own. Blocking:
    /// call it from `spawn_blocking` in async code.
    pub fn sparql_read_only(
        &self,
        query: &str,
        limits: &ReadOnlyOptions,
    ) -> Result<LimitedOutcome, Error> {
        Ok(self
            .store
            .graph()
            .query_read_only(query, &self.store.query_options(), limits)?)
    }

    /// Default query options of this store (prefixes, timeout, union default graph).
    pub fn query_options(&self) -> QueryOptions {
        self.store.query_options()
    }

    /// Runs a canned query from `queries/` with its variables bound.
    pub fn run_template(
        &self,
        template: Template,
        bindings: &[(&str, model::Term)],
    ) -> Result<QueryOutcome, Error> {
        Ok(self
            .store
            .graph()
            .run_template(template, bindings, &self.store.query_options())?)
    }

    /// Whether an update empties more than named graphs (`CLEAR`/`DROP` of
    /// `DEFAULT`, `NAMED` or `ALL`), read with this store's prefixes; nothing runs.
    pub fn update_clears_whole_store(&self, update: &str) -> Result<bool, Error> {
        Ok(kgfuse_graph::update_clears_whole_store(
            update,
            &self.store.query_options(),
        )?)
    }

    /// Runs a SPARQL Update and keeps the vectors in step.
    pub async fn update(&self, update: &str, progress: &dyn Progress) -> Result<SyncReport, Error> {
        self.store
            .update(update, progress)
            .await
            .map_err(Error::from)
    }

    /// Nearest nodes to a text by vector similarity.
    pub async fn search(&self, text: &str, k: usize) -> Result<Vec<VectorHit>, Error> {
        self.store
            .search(&Question::new(text), k, KindFilter::Any)
            .await
            .map_err(Error::from)
    }

    /// Retrieves a [`FusedContext`] for a question with the engine's model.
    pub async fn retrieve(
        &self,
        question: &str,
        options: &RetrieveOptions,
    ) -> Result<FusedContext, Error> {
        self.retrieve_with(question, options, self.model.as_ref())
            .await
    }

    /// Answers a question from the store with citations, or says the context is
    /// insufficient (the grounded answer loop). Never fails: problems end in
    /// [`AnswerStatus::Failure`] with the message in `errors`.
    pub async fn ask(&self, question: &str, options: &AskOptions) -> Answer {
        kgfuse_answer::ask(&self.store, self.model.as_ref(), question, options).await
    }

    /// The question worked out once, and nothing else of a retrieval: its
    /// words, linking, the query graphs, the offline planner and, with a real
    /// model, the model's one reading ([`kgfuse_retrieve::understand`]); its
    /// `answers` are the question's answer as rows. Blocking.
    pub fn understand(&self, question: &str) -> Result<Understanding, Error> {
        if question.trim().is_empty() {
            return Err(Error::Invalid("the question is empty".into()));
        }
        kgfuse_retrieve::understand(
            &self.store,
            self.model.as_ref(),
            Question::new(question),
            Depth::Graph,
        )
        .map_err(Error::from)
    }

    /// Retrieves a [`FusedContext`] with a given language model for the judgement steps.
    pub async fn retrieve_with(
        &self,
        question: &str,
        options: &RetrieveOptions,
        model: &dyn LanguageModel,
    ) -> Result<FusedContext, Error> {
        kgfuse_retrieve::retrieve(&self.store, model, question, options)
            .await
            .map_err(Error::from)
    }

    /// DomAgent's top-down tool: the `top_t` API functions for a task, with their
    /// package, module, parameters, return type, siblings and dependencies, after
    /// package choice and the refinement gate. Cases are left to
    /// [`Engine::search_case_base`], which an agent calls when it wants examples.
    /// Package and gate thresholds and exclusions come from
    /// [`Engine::retrieve_options`].
    pub async fn search_domain_kg(&self, query: &str, top_t: usize) -> Result<FusedContext, Error> {
        let defaults = self.retrieve_options();
        let options = RetrieveOptions {
            strategy: Strategy::Domain,
            top_k: top_t,
            domain: DomainOptions {
                max_cases: 0,
                ..defaults.domain
            },
            exclude: defaults.exclude.clone(),
            ..RetrieveOptions::default()
        };
        self.retrieve(query, &options).await
    }

    /// DomAgent's bottom-up tool: the `k` worked examples nearest to `query` among
    /// the case base's selected cases (all cases when no case base is built), each
    /// with its code and the functions it exercises.
    pub async fn search_case_base(&self, query: &str, k: usize) -> Result<Vec<CaseInfo>, Error> {
        let (cases, _) = kgfuse_retrieve::case_base::search(&self.store, query, k)
            .await
            .map_err(Error::from)?;
        Ok(cases)
    }

    /// Builds the DomAgent case base: K-means clusters of each package's functions,
    /// package centroids, and the cases selected to cover packages and clusters.
    /// Replaces the previous case base; run it again after ingesting or loading code.
    pub async fn build_case_base(
        &self,
        options: CaseBaseOptions,
        progress: &dyn Progress,
    ) -> Result<CaseBaseReport, Error> {
        kgfuse_retrieve::case_base::build(&self.store, options, progress)
            .await
            .map_err(Error::from)
    }

    /// Verifies that graph and vectors agree, and the lexicon's index,
    /// `paths`' data-flow graph and `domain`'s packages (when in step by their
    /// stamps) with the store.
    pub async fn check(&self) -> Result<CheckReport, Error> {
        let mut report = self.store.check().await?;
        let lexicon = kgfuse_retrieve::Lexicon::check(&self.store)?;
        if let Some(lexicon) = lexicon.filter(|l| l.written + l.removed > 0) {
            report.lexicon_problem = Some(format!(
                "the lexicon's index disagrees with the graph: {} entries to write, {} to \
                 remove, {} in step",
                lexicon.written, lexicon.removed, lexicon.unchanged
            ));
        }
        let flow = kgfuse_retrieve::check_data_flow(&self.store)?;
        if let Some(flow) = flow.filter(|f| f.missing + f.extra > 0) {
            report.data_flow_problem = Some(format!(
                "the data-flow graph kept for `paths` disagrees with the graph: {} edges or \
                 loaders missing, {} too many",
                flow.missing, flow.extra
            ));
        }
        let packages = kgfuse_retrieve::check_packages(&self.store).await?;
        if let Some(differ) = packages.filter(|differ| !differ.is_empty()) {
            report.packages_problem = Some(format!(
                "the packages kept for `domain` disagree with the store: {} differ, the first <{}>",
                differ.len(),
                differ[0]
            ));
        }
        Ok(report)
    }

    /// Rewrites whatever vector rows disagree with the graph, then brings the
    /// lexicon's index in step with it and writes `paths`' data-flow graph and
    /// `domain`'s packages anew.
    pub async fn repair(&self, progress: &dyn Progress) -> Result<RepairReport, Error> {
        let vectors = self.store.repair(progress).await?;
        let lexicon = kgfuse_retrieve::Lexicon::repair(&self.store)?;
        let data_flow_edges = kgfuse_retrieve::repair_data_flow(&self.store)?;
        let packages = kgfuse_retrieve::repair_packages(&self.store).await?;
        Ok(RepairReport {
            vectors,
            lexicon,
            data_flow_edges,
            packages,
        })
    }

    /// Builds (or rebuilds) the approximate nearest-neighbour index (IVF-RQ) over
    /// the vectors now. Stores build it by themselves once a write leaves
    /// `vector_index.auto_build_rows` rows (kgfuse.toml, 50,000 by default) and
    /// keep it up to date; this is for smaller stores or to retrain it after large
    /// changes.
    pub async fn build_vector_index(
        &self,
        progress: &dyn Progress,
    ) -> Result<VectorIndexStatus, Error> {
        self.store
            .build_vector_index(progress)
            .await
            .map_err(Error::from)
    }

    /// Sizes of both sides.
    pub async fn stats(&self) -> Result<StoreStats, Error> {
        self.store.stats().await.map_err(Error::from)
    }

    /// Writes every quad as N-Quads or TriG.
    pub fn dump(&self, writer: impl std::io::Write, format: RdfFormat) -> Result<(), Error> {
        Ok(self.store.graph().dump(writer, format)?)
    }
}

/// A graph name given by a caller, checked to be an absolute IRI.
fn named_graph(graph: &str) -> Result<model::NamedNode, Error> {
    model::NamedNode::new(graph).map_err(|e| Error::Invalid(format!("graph <{graph}>: {e}")))
}
