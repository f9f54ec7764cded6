//! The command line, as clap reads it: every command, its flags and their help.
//! Each command's work lives in `commands/`; rendering in `render.rs`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `kgfuse`: knowledge-graph + vector fusion for LLM agents.
#[derive(Parser)]
#[command(
    name = "kgfuse",
    version,
    about = "Knowledge-graph + vector fusion for LLM agents"
)]
pub(crate) struct Cli {
    /// Data directory (graph/, vectors/, kgfuse.toml).
    #[arg(
        long,
        global = true,
        env = "KGFUSE_DATA",
        default_value = "kgfuse-data"
    )]
    pub(crate) data: PathBuf,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// How a report is printed: every command that reports takes `--format text|json`
/// (`--json` is kept, hidden, for the scripts that used it).
#[derive(clap::Args, Clone, Copy)]
pub(crate) struct Output {
    /// text (for people) or json (for machines).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The same as --format json.
    #[arg(long, hide = true)]
    json: bool,
}

impl Output {
    /// Whether the report goes out as JSON.
    pub(crate) fn is_json(self) -> bool {
        self.json || self.format == Format::Json
    }
}

/// A report's format.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    /// For people (`table` is the same).
    #[value(alias = "table")]
    Text,
    /// For machines.
    Json,
}

/// `kgfuse sparql --format`: a table for people or a SPARQL results format.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    /// Aligned columns with compact IRIs (`text` is the same).
    #[value(alias = "text")]
    Table,
    Json,
    Csv,
    Tsv,
    Xml,
    Turtle,
    Ntriples,
}

/// `kgfuse dump --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum DumpFormat {
    /// N-Quads (`nquads` is the same).
    #[value(alias = "nquads")]
    Nq,
    /// TriG.
    Trig,
}

/// `kgfuse init --embedder`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum EmbedderKind {
    /// all-MiniLM-L6-v2 with candle (needs `make models`).
    Minilm,
    /// Deterministic feature hashing, no model.
    Hash,
    /// A token table distilled from MiniLM (model2vec), built once from the
    /// model `make models` installs: about a hundred times faster than MiniLM.
    Static,
    /// OpenAI-compatible /v1/embeddings endpoint.
    Openai,
}

/// `kgfuse init --entailment`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum EntailmentKind {
    /// RDFS entailment, materialised in a derived graph.
    Rdfs,
    /// Nothing inferred.
    None,
}

/// `kgfuse init --graph-auth`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum GraphAuthKind {
    /// No Authorization header.
    None,
    /// HTTP Basic from $KGFUSE_GRAPH_USER and $KGFUSE_GRAPH_PASSWORD.
    Basic,
    /// Bearer token from $KGFUSE_GRAPH_TOKEN.
    Bearer,
}

/// A retrieval strategy, as the command line names it.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum StrategyChoice {
    /// The default: `unified`, one ranking fused from the lexical, graph-walk,
    /// query-answer, domain and path channels (code only for code questions).
    Auto,
    /// BM25 over names and descriptions only, no vectors, no graph (the lexical
    /// baseline).
    Bm25,
    /// Vector top-k over every embedded node (the baseline).
    Flat,
    /// BM25 full-text + vector, fused by reciprocal rank.
    Hybrid,
    /// Entity linking + generated SPARQL + paths between entities + one fused node
    /// ranking.
    Unified,
    /// SGKR: dependency paths from the question's input tags to its output tags.
    Paths,
    /// Graph-RAG: neighbourhood of the linked entities scored by distance and
    /// similarity, with evidence paths.
    Neighborhood,
    /// DomAgent: package classification, functions ranked inside the packages, a
    /// refinement gate, and coverage-selected cases (`kgfuse index cases`).
    Domain,
}

impl StrategyChoice {
    /// The library's strategy.
    pub(crate) fn strategy(self) -> kgfuse::Strategy {
        match self {
            Self::Auto => kgfuse::Strategy::Auto,
            Self::Bm25 => kgfuse::Strategy::Bm25,
            Self::Flat => kgfuse::Strategy::Flat,
            Self::Hybrid => kgfuse::Strategy::Hybrid,
            Self::Unified => kgfuse::Strategy::Unified,
            Self::Paths => kgfuse::Strategy::Paths,
            Self::Neighborhood => kgfuse::Strategy::Neighborhood,
            Self::Domain => kgfuse::Strategy::Domain,
        }
    }
}

/// `kgfuse ingest code --lang`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum LangChoice {
    /// Both Python and Rust files.
    Auto,
    /// Python files only.
    Python,
    /// Rust files only.
    Rust,
}

/// The commands, one module each under `commands/`.
#[derive(Subcommand)]
pub(crate) enum Command {
    /// Create a data directory.
    Init(InitArgs),
    /// Load RDF files (.ttl .nt .nq .trig .rdf/.owl .jsonld); atomic per call.
    Load(LoadArgs),
    /// Run a SPARQL query (or update with --update).
    Sparql(SparqlArgs),
    /// Interactive SPARQL console.
    Console,
    /// Verify that every text-bearing node has exactly one current vector row and
    /// every row has its node; exits 1 naming each orphan.
    Check(CheckArgs),
    /// Triples, graphs, nodes by class, vector rows, embedder.
    Stats(StatsArgs),
    /// Check the store against SHACL shapes: kgfuse's own (ontology/kgfuse-shapes.ttl)
    /// and any --shapes; exits 1 when a result has severity sh:Violation (warnings
    /// are listed), naming focus node, path and message.
    Validate(ValidateArgs),
    /// Say why a triple holds: the graphs asserting it, or the RDFS rule and the
    /// asserted triple each derivation of an inferred triple comes from.
    Why(WhyArgs),
    /// Write every quad to stdout.
    Dump(DumpArgs),
    /// Build the graph from source code (Python, Rust) or documents (Markdown, text).
    #[command(subcommand)]
    Ingest(IngestCommand),
    /// Retrieve context for a question as a FusedContext (text with sources, facts,
    /// functions, cases, paths, executed SPARQL and a trace of every stage).
    Retrieve(RetrieveArgs),
    /// Answer a question from the store with citations, or say the context is
    /// insufficient. Uses the OpenAI-compatible model named by KGFUSE_LLM_BASE_URL
    /// and KGFUSE_LLM_MODEL when both are set, else the offline rule-based model
    /// (extractive answers).
    Ask(AskArgs),
    /// Serve the store to agents over MCP (Model Context Protocol) on stdin/stdout:
    /// tools search_domain_kg, search_case_base, retrieve_context, sparql_query,
    /// describe_entity and ask, all read-only. Logs go to stderr.
    Mcp(McpArgs),
    /// Serve the store over HTTP: SPARQL 1.1 Protocol at /sparql, Graph Store
    /// Protocol at /store, JSON API (POST /retrieve, POST /ask, GET /stats,
    /// GET /health) and a web console at /. Read-only unless --allow-updates.
    /// Prints the address it listens on; stops on Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Manage the bearer tokens of a shared server (`kgfuse serve --tokens FILE`):
    /// add one (its text is printed once; the file keeps only its SHA-256), list
    /// them, or revoke one (a running server refuses it at its next request).
    /// Needs no data directory.
    Token(TokenArgs),
    /// Build derived indexes over what is in the store.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Evaluate retrieval strategies on a question set: recall@k, precision@k, MRR,
    /// nDCG@k, nodes and tokens of context, answer-in-context, package accuracy,
    /// latency. `kgfuse eval make-loo ...` builds a leave-one-out set.
    Eval(EvalArgs),
    /// Build a demo store from the bundled ontology and fixtures and query it.
    Demo(DemoArgs),
}

/// `kgfuse init` options.
#[derive(clap::Args)]
pub(crate) struct InitArgs {
    /// Embedder used for every vector of this store.
    #[arg(long, value_enum, default_value = "minilm")]
    pub(crate) embedder: EmbedderKind,
    /// Vector dimension of the hash embedder.
    #[arg(long, default_value_t = 384)]
    pub(crate) dimension: usize,
    /// MiniLM model directory, for `minilm` and the teacher of `static` (default:
    /// where `make models` installs it).
    #[arg(long)]
    pub(crate) model_dir: Option<PathBuf>,
    /// OpenAI-compatible base URL (default: $KGFUSE_OPENAI_BASE_URL).
    #[arg(long)]
    pub(crate) base_url: Option<String>,
    /// OpenAI-compatible embedding model (default: $KGFUSE_OPENAI_EMBED_MODEL).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// What the store infers: `rdfs` (types through subclasses, domains and
    /// ranges; super-properties), kept in a derived graph, or `none`.
    #[arg(long, value_enum, default_value = "rdfs")]
    pub(crate) entailment: EntailmentKind,
    /// Keep the graph on this SPARQL 1.1 query endpoint instead of in the
    /// data directory (Virtuoso, Oxigraph server, GraphDB, …).
    #[arg(long, value_name = "URL")]
    pub(crate) graph: Option<String>,
    /// The server's SPARQL Update endpoint (default: --graph).
    #[arg(long, value_name = "URL", requires = "graph")]
    pub(crate) graph_update: Option<String>,
    /// The server's Graph Store HTTP Protocol endpoint, for fast bulk loads
    /// (e.g. Oxigraph's /store, Virtuoso's /sparql-graph-crud).
    #[arg(long, value_name = "URL", requires = "graph")]
    pub(crate) graph_store: Option<String>,
    /// How to sign requests: basic ($KGFUSE_GRAPH_USER, $KGFUSE_GRAPH_PASSWORD)
    /// or bearer ($KGFUSE_GRAPH_TOKEN); secrets are never written to kgfuse.toml.
    #[arg(long, value_enum, requires = "graph", default_value = "none")]
    pub(crate) graph_auth: GraphAuthKind,
    /// Keep the vectors on S3-compatible object storage, `s3://bucket/prefix`
    /// (the bucket must exist; credentials from the AWS_* environment).
    #[arg(long, value_name = "URI")]
    pub(crate) vectors: Option<String>,
    /// A LanceDB storage option for --vectors, e.g. aws_endpoint=http://host:7480,
    /// aws_region=us-east-1, allow_http=true; repeatable; no secrets.
    #[arg(long, value_name = "KEY=VALUE", requires = "vectors")]
    pub(crate) vectors_option: Vec<String>,
    /// Share the store already on --graph and --vectors from this data
    /// directory (another server of the same store) instead of creating one;
    /// nothing is written to either.
    #[arg(long, requires_all = ["graph", "vectors"])]
    pub(crate) attach: bool,
}

/// `kgfuse load` options.
#[derive(clap::Args)]
pub(crate) struct LoadArgs {
    /// Files to load.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Add every triple to this named graph instead of one graph per file.
    #[arg(long)]
    pub(crate) graph: Option<String>,
    /// Format of all files (turtle, ntriples, nquads, trig, rdfxml, jsonld);
    /// guessed from extensions otherwise.
    #[arg(long)]
    pub(crate) format: Option<String>,
    /// Check each file against kgfuse's SHACL shapes (and --shapes) first;
    /// a file whose nodes violate them is refused and nothing is written.
    #[arg(long)]
    pub(crate) validate: bool,
    /// Also check against these SHACL shapes (Turtle); implies --validate.
    #[arg(long, value_name = "FILE.ttl")]
    pub(crate) shapes: Vec<PathBuf>,
}

/// `kgfuse sparql` options.
#[derive(clap::Args)]
pub(crate) struct SparqlArgs {
    /// Query text; read from stdin when absent and no --file.
    pub(crate) query: Option<String>,
    /// Read the query from a file (e.g. queries/describe.rq); relative IRIs in it
    /// resolve against the file's own `file://` IRI.
    #[arg(long, short)]
    pub(crate) file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: OutputFormat,
    /// Cancel the query after this many seconds (0 = no limit).
    #[arg(long)]
    pub(crate) timeout: Option<u64>,
    /// Run a SPARQL Update; vectors are kept in step.
    #[arg(long)]
    pub(crate) update: bool,
    /// Bind a variable: --bind entity=<IRI> | prefix:name | "text" | 42.
    #[arg(long = "bind", value_name = "VAR=VALUE")]
    pub(crate) bindings: Vec<String>,
    /// Match the default graph only, not the union of all graphs.
    #[arg(long)]
    pub(crate) no_union: bool,
}

/// `kgfuse check` options.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// Rewrite disagreeing vector rows instead of only reporting them.
    #[arg(long)]
    pub(crate) repair: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse stats` options.
#[derive(clap::Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse validate` options.
#[derive(clap::Args)]
pub(crate) struct ValidateArgs {
    /// SHACL shapes (Turtle) to check besides kgfuse's own.
    #[arg(long, value_name = "FILE.ttl")]
    pub(crate) shapes: Vec<PathBuf>,
    /// Check only the --shapes files, not kgfuse's own shapes.
    #[arg(long)]
    pub(crate) no_core_shapes: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse why` options.
#[derive(clap::Args)]
pub(crate) struct WhyArgs {
    /// Subject, predicate and object: <IRI>, prefix:name (the store's
    /// prefixes), "text" or a number; `a` for rdf:type.
    #[arg(num_args = 3, value_names = ["SUBJECT", "PREDICATE", "OBJECT"], required = true)]
    pub(crate) triple: Vec<String>,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse dump` options.
#[derive(clap::Args)]
pub(crate) struct DumpArgs {
    /// nq (N-Quads) or trig.
    #[arg(long, value_enum, default_value = "nq")]
    pub(crate) format: DumpFormat,
}

/// `kgfuse retrieve` options.
#[derive(clap::Args)]
pub(crate) struct RetrieveArgs {
    /// The question.
    pub(crate) question: String,
    /// Retrieval strategy.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) strategy: StrategyChoice,
    /// Most items to return.
    #[arg(long, default_value_t = 8)]
    pub(crate) top_k: usize,
    /// paths: most edges on one dependency path.
    #[arg(long, default_value_t = 6)]
    pub(crate) max_depth: usize,
    /// paths: most dependency paths kept.
    #[arg(long, default_value_t = 12)]
    pub(crate) max_paths: usize,
    /// neighborhood: largest graph distance from a linked entity.
    #[arg(long, default_value_t = 3)]
    pub(crate) max_distance: usize,
    /// neighborhood: weight of closeness against similarity, in [0, 1].
    #[arg(long, default_value_t = 0.6)]
    pub(crate) alpha: f32,
    /// domain: most packages chosen by the classifier.
    #[arg(long, default_value_t = 3)]
    pub(crate) max_packages: usize,
    /// domain: the gate drops functions scoring this much (cosine) below the best.
    #[arg(long, default_value_t = 0.15)]
    pub(crate) gate_margin: f32,
    /// A node (IRI) that must neither appear in the context nor inform it, e.g. a
    /// worked example that holds the answer (repeatable).
    #[arg(long, value_name = "IRI")]
    pub(crate) exclude: Vec<String>,
    /// Model-assisted retrieval: first ask the configured LLM (KGFUSE_LLM_*) for a
    /// hypothetical snippet that would answer the question, and search with both;
    /// with --offline the other stages still use the offline model.
    #[arg(long)]
    pub(crate) expand: bool,
    /// unified: when the configured LLM's plan does not answer, also ask it for a
    /// SPARQL query of its own (text-to-SPARQL: up to three more requests).
    #[arg(long)]
    pub(crate) model_query: bool,
    /// Use the offline rule-based model even when an LLM is configured
    /// (KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL).
    #[arg(long)]
    pub(crate) offline: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse ask` options.
#[derive(clap::Args)]
pub(crate) struct AskArgs {
    /// The question.
    pub(crate) question: String,
    /// Retrieval strategy for the candidates.
    #[arg(long, value_enum, default_value = "hybrid")]
    pub(crate) strategy: StrategyChoice,
    /// Candidates per retrieval.
    #[arg(long, default_value_t = 10)]
    pub(crate) top_k: usize,
    /// Drop candidates whose cosine similarity to the question is below this.
    #[arg(long, default_value_t = 0.15)]
    pub(crate) min_relevance: f32,
    /// Retrievals at most (the first one plus query rewrites).
    #[arg(long, default_value_t = 2)]
    pub(crate) max_attempts: usize,
    /// Use the offline rule-based model even when an LLM is configured.
    #[arg(long)]
    pub(crate) offline: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse mcp` options.
#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// Use the offline rule-based model even when an LLM is configured
    /// (KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL).
    #[arg(long)]
    pub(crate) offline: bool,
}

/// `kgfuse demo` options.
#[derive(clap::Args)]
pub(crate) struct DemoArgs {
    /// Folder with the ontology files.
    #[arg(long, default_value = "ontology")]
    pub(crate) ontology: PathBuf,
    /// Folder with the fixtures.
    #[arg(long, default_value = "fixtures")]
    pub(crate) fixtures: PathBuf,
}

/// `kgfuse token` options.
#[derive(clap::Args)]
pub(crate) struct TokenArgs {
    /// The token file (SHA-256 digests of the tokens, never the tokens; keep it
    /// outside the data directory).
    #[arg(long, global = true, env = "KGFUSE_TOKENS", value_name = "FILE")]
    pub(crate) tokens: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: TokenCommand,
}

#[derive(Subcommand)]
pub(crate) enum TokenCommand {
    /// Add a token and print it on stdout, once: only its digest is kept. Creates
    /// the file (and its directory) when missing.
    Add(TokenAddArgs),
    /// List the tokens: id, scope, stores and when each was made (never digests).
    List(TokenListArgs),
    /// Revoke a token: a running server refuses it at its next request.
    Revoke(TokenRevokeArgs),
}

/// A token's scope; each includes the ones before it.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum ScopeChoice {
    /// Queries, retrieval and answers.
    Read,
    /// Also SPARQL Update and Graph Store writes.
    Write,
    /// Also administration of the server.
    Admin,
}

impl ScopeChoice {
    /// The library's scope.
    pub(crate) fn scope(self) -> kgfuse_http::tokens::Scope {
        match self {
            Self::Read => kgfuse_http::tokens::Scope::Read,
            Self::Write => kgfuse_http::tokens::Scope::Write,
            Self::Admin => kgfuse_http::tokens::Scope::Admin,
        }
    }
}

/// `kgfuse token add` options.
#[derive(clap::Args)]
pub(crate) struct TokenAddArgs {
    /// The token's name, for people and the audit log: letters, digits, '.', '_'
    /// and '-', up to 64.
    pub(crate) id: String,
    /// What the token may do.
    #[arg(long, value_enum)]
    pub(crate) scope: ScopeChoice,
    /// A store the token may use (repeatable); without it, every store.
    #[arg(long = "store", value_name = "NAME")]
    pub(crate) stores: Vec<String>,
}

/// `kgfuse token list` options.
#[derive(clap::Args)]
pub(crate) struct TokenListArgs {
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse token revoke` options.
#[derive(clap::Args)]
pub(crate) struct TokenRevokeArgs {
    /// The id of the token to revoke.
    pub(crate) id: String,
}

#[derive(Subcommand)]
pub(crate) enum IngestCommand {
    /// Parse Python/Rust sources into packages, modules, classes, functions,
    /// parameters, call edges, cases, knowledge and I/O tags (one graph per file;
    /// re-ingesting rewrites only what changed and removes deleted files).
    Code(IngestCodeArgs),
    /// Split Markdown and text files into chunks (by heading, bounded size) linked to
    /// the entities they mention.
    Docs(IngestDocsArgs),
}

/// `kgfuse ingest code` options.
#[derive(clap::Args)]
pub(crate) struct IngestCodeArgs {
    /// A source file or directory.
    pub(crate) path: PathBuf,
    /// Which languages to ingest.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) lang: LangChoice,
    /// Package (Python) or crate (Rust) name for files outside any package.
    #[arg(long)]
    pub(crate) package: Option<String>,
    /// Knowledge file (TOML or Turtle) attaching domain rules and I/O tags to functions.
    #[arg(long)]
    pub(crate) knowledge: Option<PathBuf>,
    /// Skip files larger than this many MiB (noted, not fatal).
    #[arg(long, default_value_t = 2.0)]
    pub(crate) max_file_size: f64,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse ingest docs` options.
#[derive(clap::Args)]
pub(crate) struct IngestDocsArgs {
    /// A document file or directory.
    pub(crate) path: PathBuf,
    /// Largest chunk, in characters.
    #[arg(long, default_value_t = 1500)]
    pub(crate) max_chunk_chars: usize,
    /// Skip files larger than this many MiB (noted, not fatal).
    #[arg(long, default_value_t = 4.0)]
    pub(crate) max_file_size: f64,
    #[command(flatten)]
    pub(crate) output: Output,
}

#[derive(Subcommand)]
pub(crate) enum IndexCommand {
    /// The DomAgent case base: K-means clusters of each package's functions, package
    /// centroids, and the cases selected (greedily, by new coverage) until the
    /// package and cluster coverage thresholds are reached. Replaces the last one.
    Cases(IndexCasesArgs),
    /// The approximate nearest-neighbour index (IVF-RQ, cosine) over the vectors:
    /// builds it, or rebuilds it with fresh partitions. Stores build it by
    /// themselves once a write leaves `vector_index.auto_build_rows` rows
    /// (kgfuse.toml, 50,000 by default) and fold new rows into it; this is for
    /// smaller stores or to retrain it after large changes.
    Vectors(IndexVectorsArgs),
}

/// `kgfuse index cases` options.
#[derive(clap::Args)]
pub(crate) struct IndexCasesArgs {
    /// Stop once this share of packages is covered (and of clusters).
    #[arg(long, default_value_t = 0.9)]
    pub(crate) package_coverage: f64,
    /// Stop once this share of clusters is covered (and of packages).
    #[arg(long, default_value_t = 0.9)]
    pub(crate) cluster_coverage: f64,
    /// Most clusters per package.
    #[arg(long, default_value_t = 8)]
    pub(crate) max_clusters: usize,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `kgfuse index vectors` options.
#[derive(clap::Args)]
pub(crate) struct IndexVectorsArgs {
    #[command(flatten)]
    pub(crate) output: Output,
}

#[derive(Subcommand)]
pub(crate) enum EvalMake {
    /// Build a leave-one-out case retrieval set from the store: each case of the
    /// package's tests becomes a question (docstring, else name), gold = the package
    /// functions it calls, the case itself excluded. Ingest the package and its tests
    /// first.
    MakeLoo(MakeLooArgs),
}

/// `kgfuse eval make-loo` options.
#[derive(clap::Args)]
pub(crate) struct MakeLooArgs {
    /// Package whose functions are the gold (e.g. json).
    #[arg(long)]
    pub(crate) package: String,
    /// Only cases from files under this directory (e.g. .../test/test_json).
    #[arg(long)]
    pub(crate) tests: Option<PathBuf>,
    /// Write the JSONL here instead of stdout.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// `kgfuse eval` options.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct EvalArgs {
    #[command(subcommand)]
    pub(crate) make: Option<EvalMake>,
    /// Question set, JSON Lines: {"id", "query", "gold": [IRIs or names],
    /// "gold_answers"?, "package"?, "exclude"?}.
    pub(crate) file: Option<PathBuf>,
    /// Strategy to evaluate; repeat for several (default: all).
    #[arg(long = "strategy", value_enum)]
    pub(crate) strategies: Vec<StrategyChoice>,
    /// Cut-off for recall, precision and nDCG, and the retrieval budget (top-k).
    #[arg(long, default_value_t = 5)]
    pub(crate) k: usize,
    #[command(flatten)]
    pub(crate) output: Output,
    /// Also write a recall-vs-context-size chart (SVG).
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Model-assisted retrieval: each question is searched with the configured
    /// LLM's (KGFUSE_LLM_*) hypothetical snippet; every other stage stays offline.
    #[arg(long)]
    pub(crate) expand: bool,
}

/// `NAME=DIR` of `serve --store`.
fn parse_named_store(text: &str) -> Result<(String, PathBuf), String> {
    let (name, dir) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: write NAME=DIR"))?;
    if !kgfuse_http::is_store_name(name) {
        return Err(format!(
            "store name {name:?}: use 1 to 64 letters, digits, '_' or '-'"
        ));
    }
    if dir.is_empty() {
        return Err(format!("{text:?}: the directory is missing"));
    }
    Ok((name.to_owned(), PathBuf::from(dir)))
}

/// `kgfuse serve` options.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address and port to listen on (port 0 picks a free one). Anything but a
    /// loopback address makes the store reachable from other machines.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub(crate) bind: std::net::SocketAddr,
    /// Serve these stores, each under /s/NAME/ (repeatable); without it, the
    /// --data store, under / and /s/default/.
    #[arg(long = "store", value_name = "NAME=DIR", value_parser = parse_named_store)]
    pub(crate) stores: Vec<(String, PathBuf)>,
    /// Serve the stores a TOML file lists, each with its own model and limits
    /// ([stores.NAME] data, offline, llm_base_url, llm_model, llm_api_key_env,
    /// query_timeout_secs, request_timeout_secs, max_rows, max_concurrent,
    /// datasets); the flags give the server's settings and every store's defaults.
    #[arg(long, value_name = "FILE", conflicts_with = "stores")]
    pub(crate) config: Option<PathBuf>,
    /// Bearer tokens with scopes (read, write, admin) and stores, as `kgfuse
    /// token add` writes them: every request then needs one. Re-read when the
    /// file changes, so a revoked token stops working at once.
    #[arg(long, env = "KGFUSE_TOKENS", value_name = "FILE")]
    pub(crate) tokens: Option<PathBuf>,
    /// Allow SPARQL Update and Graph Store writes: to write tokens of --tokens,
    /// or, without a token file, to requests carrying the token (16+ characters)
    /// in KGFUSE_HTTP_TOKEN.
    #[arg(long)]
    pub(crate) allow_updates: bool,
    /// Serve on an address other machines reach without a token file: says the
    /// data is public (without it, such an address is refused).
    #[arg(long)]
    pub(crate) public: bool,
    /// Audit log, one JSON line per request: a file to append to, or - for
    /// stderr. Default: stderr with --tokens, off without.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) audit: Option<String>,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Largest request body in MiB.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_body_mib: u64,
    /// SPARQL queries are cancelled after this many seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) query_timeout: u64,
    /// /retrieve and /ask are cancelled after this many seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_timeout: u64,
    /// Most rows or triples a query returns (the response says when it was cut).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) max_rows: usize,
    /// Requests working on the store at once; others wait.
    #[arg(long, default_value_t = 16)]
    pub(crate) max_concurrent: usize,
    /// Allow browser pages from this origin (e.g. http://localhost:3000) to call
    /// the server (CORS); repeatable. Off by default.
    #[arg(long = "cors-origin")]
    pub(crate) cors_origins: Vec<String>,
    /// The dataset IRI `GET /text2sparql` answers for with this store
    /// (repeatable); without one it answers for any.
    #[arg(long = "dataset")]
    pub(crate) datasets: Vec<String>,
    /// Use the offline rule-based model even when an LLM is configured.
    #[arg(long)]
    pub(crate) offline: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `kgfuse ...` command lines of a Markdown text's shell blocks:
    /// continuation lines joined, split as a shell would, cut at a redirection
    /// or pipe.
    fn command_lines(markdown: &str) -> Vec<(usize, Vec<String>)> {
        let mut out = Vec::new();
        let mut in_shell = false;
        let mut pending: Option<(usize, String)> = None;
        for (number, line) in markdown.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") {
                in_shell = !in_shell && matches!(trimmed, "```sh" | "```bash" | "```shell");
                continue;
            }
            if !in_shell {
                continue;
            }
            let (start, mut text) = match pending.take() {
                Some((start, text)) => (start, text + " " + trimmed),
                None if trimmed.starts_with("kgfuse ") => (number + 1, trimmed.to_owned()),
                None => continue,
            };
            if let Some(stripped) = text.strip_suffix('\\') {
                text = stripped.to_owned();
                pending = Some((start, text));
                continue;
            }
            let words = shlex::split(&text).unwrap_or_else(|| panic!("line {start}: {text}"));
            let words: Vec<String> = words
                .into_iter()
                .take_while(|w| !matches!(w.as_str(), ">" | ">>" | "2>" | "|" | "&&" | ";" | "&"))
                .take_while(|w| !w.starts_with('#'))
                .collect();
            out.push((start, words));
        }
        out
    }

    /// Every `kgfuse ...` line of the README parses with today's flags, so the
    /// tour cannot drift from the command line.
    #[test]
    fn every_command_in_the_readme_parses() {
        let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
        let text = std::fs::read_to_string(&readme).expect("README.md");
        let lines = command_lines(&text);
        assert!(lines.len() > 40, "only {} kgfuse lines found", lines.len());
        let failures: Vec<String> = lines
            .iter()
            .filter_map(|(line, words)| {
                Cli::try_parse_from(words)
                    .err()
                    .map(|e| format!("README.md:{line}: {}: {}", words.join(" "), e.kind()))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn json_is_a_hidden_alias_of_format_json() {
        for words in [
            ["kgfuse", "stats", "--json"],
            ["kgfuse", "stats", "--format=json"],
        ] {
            let Command::Stats(args) = Cli::try_parse_from(words).expect("parses").command else {
                panic!("stats");
            };
            assert!(args.output.is_json(), "{words:?}");
        }
        let Command::Eval(args) =
            Cli::try_parse_from(["kgfuse", "eval", "set.jsonl", "--format", "table"])
                .expect("table still names the text format")
                .command
        else {
            panic!("eval");
        };
        assert!(!args.output.is_json());
        assert!(Cli::try_parse_from(["kgfuse", "dump", "--format", "rdfxml"]).is_err());
    }

    /// `kgfuse token`: the file from --tokens before or after the subcommand,
    /// repeatable --store, a required scope from the three words.
    #[test]
    fn token_commands_parse() {
        let Command::Token(args) = Cli::try_parse_from([
            "kgfuse",
            "token",
            "add",
            "ci-reader",
            "--scope",
            "read",
            "--store",
            "docs",
            "--store",
            "code",
            "--tokens",
            "t.toml",
        ])
        .expect("parses")
        .command
        else {
            panic!("token");
        };
        assert_eq!(args.tokens.as_deref(), Some(std::path::Path::new("t.toml")));
        let TokenCommand::Add(add) = args.command else {
            panic!("add");
        };
        assert_eq!(add.id, "ci-reader");
        assert!(add.scope == ScopeChoice::Read);
        assert_eq!(add.stores, ["docs", "code"]);

        let Command::Token(args) =
            Cli::try_parse_from(["kgfuse", "token", "--tokens", "t.toml", "revoke", "ci"])
                .expect("parses")
                .command
        else {
            panic!("token");
        };
        assert!(matches!(args.command, TokenCommand::Revoke(r) if r.id == "ci"));
        assert!(Cli::try_parse_from(["kgfuse", "token", "list", "--format", "json"]).is_ok());
        assert!(Cli::try_parse_from(["kgfuse", "token", "add", "ci"]).is_err());
        assert!(Cli::try_parse_from(["kgfuse", "token", "add", "ci", "--scope", "owner"]).is_err());
        assert!(Cli::try_parse_from(["kgfuse", "token", "revoke"]).is_err());
    }
}
