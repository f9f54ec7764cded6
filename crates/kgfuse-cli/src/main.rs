//! `kgfuse`: the command-line interface to a kgfuse data directory.
//!
//! Results go to stdout, logs and progress bars to stderr; every failure exits
//! non-zero with a message on stderr.
#![allow(clippy::print_stdout)]

mod console;
mod demo;
mod progress;
mod render;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use kgfuse::model::{Literal, NamedNode, Term, Triple};
use kgfuse::{Engine, EngineInit, QueryOptions, QueryOutcome, RdfSource, ResultsFormat};
use progress::TerminalProgress;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// jemalloc instead of the system's allocator: a retrieval builds and drops many
/// small strings (IRIs, terms, query rows), and glibc's malloc took 14% of the
/// CPU samples of `unified` retrievals (`perf`, BENCHMARKS.md). Its thread
/// caches keep blocks of up to 1 MiB (`tcache_max`, set for the build in
/// `.cargo/config.toml`), so the encoder's buffers stay cached between
/// questions. The library crates leave the choice of allocator to the program
/// that links them.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "kgfuse",
    version,
    about = "Knowledge-graph + vector fusion for LLM agents"
)]
struct Cli {
    /// Data directory (graph/, vectors/, kgfuse.toml).
    #[arg(
        long,
        global = true,
        env = "KGFUSE_DATA",
        default_value = "kgfuse-data"
    )]
    data: PathBuf,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum EmbedderKind {
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

#[derive(Clone, Copy, ValueEnum)]
enum EntailmentKind {
    /// RDFS entailment, materialised in a derived graph.
    Rdfs,
    /// Nothing inferred.
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum GraphAuthKind {
    /// No Authorization header.
    None,
    /// HTTP Basic from $KGFUSE_GRAPH_USER and $KGFUSE_GRAPH_PASSWORD.
    Basic,
    /// Bearer token from $KGFUSE_GRAPH_TOKEN.
    Bearer,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum OutputFormat {
    Table,
    Json,
    Csv,
    Tsv,
    Xml,
    Turtle,
    Ntriples,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ReportFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Create a data directory.
    Init {
        /// Embedder used for every vector of this store.
        #[arg(long, value_enum, default_value = "minilm")]
        embedder: EmbedderKind,
        /// Vector dimension of the hash embedder.
        #[arg(long, default_value_t = 384)]
        dimension: usize,
        /// MiniLM model directory, for `minilm` and the teacher of `static` (default:
        /// where `make models` installs it).
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// OpenAI-compatible base URL (default: $KGFUSE_OPENAI_BASE_URL).
        #[arg(long)]
        base_url: Option<String>,
        /// OpenAI-compatible embedding model (default: $KGFUSE_OPENAI_EMBED_MODEL).
        #[arg(long)]
        model: Option<String>,
        /// What the store infers: `rdfs` (types through subclasses, domains and
        /// ranges; super-properties), kept in a derived graph, or `none`.
        #[arg(long, value_enum, default_value = "rdfs")]
        entailment: EntailmentKind,
        /// Keep the graph on this SPARQL 1.1 query endpoint instead of in the
        /// data directory (Virtuoso, Oxigraph server, GraphDB, …).
        #[arg(long, value_name = "URL")]
        graph: Option<String>,
        /// The server's SPARQL Update endpoint (default: --graph).
        #[arg(long, value_name = "URL", requires = "graph")]
        graph_update: Option<String>,
        /// The server's Graph Store HTTP Protocol endpoint, for fast bulk loads
        /// (e.g. Oxigraph's /store, Virtuoso's /sparql-graph-crud).
        #[arg(long, value_name = "URL", requires = "graph")]
        graph_store: Option<String>,
        /// How to sign requests: basic ($KGFUSE_GRAPH_USER, $KGFUSE_GRAPH_PASSWORD)
        /// or bearer ($KGFUSE_GRAPH_TOKEN); secrets are never written to kgfuse.toml.
        #[arg(long, value_enum, requires = "graph", default_value = "none")]
        graph_auth: GraphAuthKind,
        /// Keep the vectors on S3-compatible object storage, `s3://bucket/prefix`
        /// (the bucket must exist; credentials from the AWS_* environment).
        #[arg(long, value_name = "URI")]
        vectors: Option<String>,
        /// A LanceDB storage option for --vectors, e.g. aws_endpoint=http://host:7480,
        /// aws_region=us-east-1, allow_http=true; repeatable; no secrets.
        #[arg(long, value_name = "KEY=VALUE", requires = "vectors")]
        vectors_option: Vec<String>,
        /// Share the store already on --graph and --vectors from this data
        /// directory (another server of the same store) instead of creating one;
        /// nothing is written to either.
        #[arg(long, requires_all = ["graph", "vectors"])]
        attach: bool,
    },
    /// Load RDF files (.ttl .nt .nq .trig .rdf/.owl .jsonld); atomic per call.
    Load {
        /// Files to load.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Add every triple to this named graph instead of one graph per file.
        #[arg(long)]
        graph: Option<String>,
        /// Format of all files (turtle, ntriples, nquads, trig, rdfxml, jsonld);
        /// guessed from extensions otherwise.
        #[arg(long)]
        format: Option<String>,
        /// Check each file against kgfuse's SHACL shapes (and --shapes) first;
        /// a file whose nodes violate them is refused and nothing is written.
        #[arg(long)]
        validate: bool,
        /// Also check against these SHACL shapes (Turtle); implies --validate.
        #[arg(long, value_name = "FILE.ttl")]
        shapes: Vec<PathBuf>,
    },
    /// Run a SPARQL query (or update with --update).
    Sparql {
        /// Query text; read from stdin when absent and no --file.
        query: Option<String>,
        /// Read the query from a file (e.g. queries/describe.rq); relative IRIs in it
        /// resolve against the file's own `file://` IRI.
        #[arg(long, short)]
        file: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: OutputFormat,
        /// Cancel the query after this many seconds (0 = no limit).
        #[arg(long)]
        timeout: Option<u64>,
        /// Run a SPARQL Update; vectors are kept in step.
        #[arg(long)]
        update: bool,
        /// Bind a variable: --bind entity=<IRI> | prefix:name | "text" | 42.
        #[arg(long = "bind", value_name = "VAR=VALUE")]
        bindings: Vec<String>,
        /// Match the default graph only, not the union of all graphs.
        #[arg(long)]
        no_union: bool,
    },
    /// Interactive SPARQL console.
    Console,
    /// Verify that every text-bearing node has exactly one current vector row and
    /// every row has its node; exits 1 naming each orphan.
    Check {
        /// Rewrite disagreeing vector rows instead of only reporting them.
        #[arg(long)]
        repair: bool,
        /// Machine-readable report.
        #[arg(long)]
        json: bool,
    },
    /// Triples, graphs, nodes by class, vector rows, embedder.
    Stats {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Check the store against SHACL shapes: kgfuse's own (ontology/kgfuse-shapes.ttl)
    /// and any --shapes; exits 1 when a result has severity sh:Violation (warnings
    /// are listed), naming focus node, path and message.
    Validate {
        /// SHACL shapes (Turtle) to check besides kgfuse's own.
        #[arg(long, value_name = "FILE.ttl")]
        shapes: Vec<PathBuf>,
        /// Check only the --shapes files, not kgfuse's own shapes.
        #[arg(long)]
        no_core_shapes: bool,
        /// text (one line per result) or json (the report).
        #[arg(long, value_enum, default_value = "text")]
        format: ReportFormat,
    },
    /// Say why a triple holds: the graphs asserting it, or the RDFS rule and the
    /// asserted triple each derivation of an inferred triple comes from.
    Why {
        /// Subject, predicate and object: <IRI>, prefix:name (the store's
        /// prefixes), "text" or a number; `a` for rdf:type.
        #[arg(num_args = 3, value_names = ["SUBJECT", "PREDICATE", "OBJECT"], required = true)]
        triple: Vec<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Write every quad to stdout.
    Dump {
        /// nq (N-Quads) or trig.
        #[arg(long, default_value = "nq")]
        format: String,
    },
    /// Build the graph from source code (Python, Rust) or documents (Markdown, text).
    #[command(subcommand)]
    Ingest(IngestCommand),
    /// Retrieve context for a question as a FusedContext (text with sources, facts,
    /// functions, cases, paths, executed SPARQL and a trace of every stage).
    Retrieve {
        /// The question.
        question: String,
        /// Retrieval strategy.
        #[arg(long, value_enum, default_value = "auto")]
        strategy: StrategyChoice,
        /// Most items to return.
        #[arg(long, default_value_t = 8)]
        top_k: usize,
        /// paths: most edges on one dependency path.
        #[arg(long, default_value_t = 6)]
        max_depth: usize,
        /// paths: most dependency paths kept.
        #[arg(long, default_value_t = 12)]
        max_paths: usize,
        /// neighborhood: largest graph distance from a linked entity.
        #[arg(long, default_value_t = 3)]
        max_distance: usize,
        /// neighborhood: weight of closeness against similarity, in [0, 1].
        #[arg(long, default_value_t = 0.6)]
        alpha: f32,
        /// domain: most packages chosen by the classifier.
        #[arg(long, default_value_t = 3)]
        max_packages: usize,
        /// domain: the gate drops functions scoring this much (cosine) below the best.
        #[arg(long, default_value_t = 0.15)]
        gate_margin: f32,
        /// Use the offline rule-based model even when an LLM is configured
        /// (KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL).
        #[arg(long)]
        offline: bool,
        /// json (the FusedContext) or text (readable summary).
        #[arg(long, value_enum, default_value = "text")]
        format: ContextFormat,
    },
    /// Answer a question from the store with citations, or say the context is
    /// insufficient. Uses the OpenAI-compatible model named by KGFUSE_LLM_BASE_URL
    /// and KGFUSE_LLM_MODEL when both are set, else the offline rule-based model
    /// (extractive answers).
    Ask {
        /// The question.
        question: String,
        /// Retrieval strategy for the candidates.
        #[arg(long, value_enum, default_value = "hybrid")]
        strategy: StrategyChoice,
        /// Candidates per retrieval.
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        /// Drop candidates whose cosine similarity to the question is below this.
        #[arg(long, default_value_t = 0.15)]
        min_relevance: f32,
        /// Retrievals at most (the first one plus query rewrites).
        #[arg(long, default_value_t = 2)]
        max_attempts: usize,
        /// Use the offline rule-based model even when an LLM is configured.
        #[arg(long)]
        offline: bool,
        /// json (the full answer with its context and trace) or text.
        #[arg(long, value_enum, default_value = "text")]
        format: ContextFormat,
    },
    /// Serve the store to agents over MCP (Model Context Protocol) on stdin/stdout:
    /// tools search_domain_kg, search_case_base, retrieve_context, sparql_query,
    /// describe_entity and ask, all read-only. Logs go to stderr.
    Mcp {
        /// Use the offline rule-based model even when an LLM is configured
        /// (KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL).
        #[arg(long)]
        offline: bool,
    },
    /// Serve the store over HTTP: SPARQL 1.1 Protocol at /sparql, Graph Store
    /// Protocol at /store, JSON API (POST /retrieve, POST /ask, GET /stats,
    /// GET /health) and a web console at /. Read-only unless --allow-updates.
    /// Prints the address it listens on; stops on Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Build derived indexes over what is in the store.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Evaluate retrieval strategies on a question set: recall@k, precision@k, MRR,
    /// nDCG@k, nodes and tokens of context, answer-in-context, package accuracy,
    /// latency. `kgfuse eval make-loo ...` builds a leave-one-out set.
    Eval(EvalArgs),
    /// Build a demo store from the bundled ontology and fixtures and query it.
    Demo {
        /// Folder with the ontology files.
        #[arg(long, default_value = "ontology")]
        ontology: PathBuf,
        /// Folder with the fixtures.
        #[arg(long, default_value = "fixtures")]
        fixtures: PathBuf,
    },
}

impl StrategyChoice {
    fn strategy(self) -> kgfuse::Strategy {
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

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct EvalArgs {
    #[command(subcommand)]
    make: Option<EvalMake>,
    /// Question set, JSON Lines: {"id", "query", "gold": [IRIs or names],
    /// "gold_answers"?, "package"?, "exclude"?}.
    file: Option<PathBuf>,
    /// Strategy to evaluate; repeat for several (default: all).
    #[arg(long = "strategy", value_enum)]
    strategies: Vec<StrategyChoice>,
    /// Cut-off for recall, precision and nDCG, and the retrieval budget (top-k).
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// table (aligned, for people) or json (for machines).
    #[arg(long, value_enum, default_value = "table")]
    format: EvalFormat,
    /// Also write a recall-vs-context-size chart (SVG).
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(Subcommand)]
enum EvalMake {
    /// Build a leave-one-out case retrieval set from the store: each case of the
    /// package's tests becomes a question (docstring, else name), gold = the package
    /// functions it calls, the case itself excluded. Ingest the package and its tests
    /// first.
    MakeLoo {
        /// Package whose functions are the gold (e.g. json).
        #[arg(long)]
        package: String,
        /// Only cases from files under this directory (e.g. .../test/test_json).
        #[arg(long)]
        tests: Option<PathBuf>,
        /// Write the JSONL here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EvalFormat {
    Table,
    Json,
}

#[derive(Subcommand)]
enum IndexCommand {
    /// The DomAgent case base: K-means clusters of each package's functions, package
    /// centroids, and the cases selected (greedily, by new coverage) until the
    /// package and cluster coverage thresholds are reached. Replaces the last one.
    Cases {
        /// Stop once this share of packages is covered (and of clusters).
        #[arg(long, default_value_t = 0.9)]
        package_coverage: f64,
        /// Stop once this share of clusters is covered (and of packages).
        #[arg(long, default_value_t = 0.9)]
        cluster_coverage: f64,
        /// Most clusters per package.
        #[arg(long, default_value_t = 8)]
        max_clusters: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The approximate nearest-neighbour index (IVF-RQ, cosine) over the vectors:
    /// builds it, or rebuilds it with fresh partitions. Stores build it by
    /// themselves once a write leaves `vector_index.auto_build_rows` rows
    /// (kgfuse.toml, 50,000 by default) and fold new rows into it; this is for
    /// smaller stores or to retrain it after large changes.
    Vectors {
        /// Print the index status as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum StrategyChoice {
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

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ContextFormat {
    /// The FusedContext as JSON.
    Json,
    /// A readable summary.
    Text,
}

/// Prints an answer for people: status, answer, sources, contradictions, gaps.
fn print_answer(answer: &kgfuse::Answer) {
    let status = match answer.status {
        kgfuse::AnswerStatus::Answered => "answered",
        kgfuse::AnswerStatus::InsufficientContext => "insufficient context",
        kgfuse::AnswerStatus::Failure => "failure",
    };
    println!(
        "{status} (confidence {:.2}, {} retrieval attempt(s), grounding {:?})",
        answer.confidence, answer.retrieval_attempts, answer.grounding_status
    );
    if let Some(text) = &answer.answer {
        println!("\n{text}\n");
    }
    for (i, citation) in answer.citations.iter().enumerate() {
        println!("[{}] {citation}", i + 1);
    }
    if let Some(gap) = &answer.knowledge_gap {
        println!("knowledge gap: {gap}");
    }
    for contradiction in &answer.contradictions {
        println!(
            "contradiction: \"{}\" ({}) -> {}",
            contradiction.claim,
            contradiction.sources.join(" vs "),
            contradiction.resolution
        );
    }
    println!(
        "model {}: {} call(s), {} prompt + {} completion tokens",
        answer.usage.model,
        answer.usage.calls,
        answer.usage.prompt_tokens,
        answer.usage.completion_tokens
    );
}

/// Prints a FusedContext as a readable summary.
fn print_context(context: &kgfuse::FusedContext) {
    println!(
        "strategy {}, dispatch {:?}: {}",
        context.strategy, context.dispatch, context.query
    );
    if let Some(answers) = &context.answers {
        print_answers(answers);
    }
    for (i, hit) in context.unstructured.iter().enumerate() {
        let mut source = hit.source.id.clone();
        if let Some(title) = &hit.source.title {
            source = format!("{title} <{source}>");
        }
        if let Some(chunk) = &hit.source.chunk_id {
            source.push_str(&format!(" [{chunk}]"));
        }
        let first_line = hit.text.lines().next().unwrap_or_default();
        println!(
            "{:>2}. {:.3}  {}
      {first_line}
      from {source}",
            i + 1,
            hit.score,
            hit.iri
        );
    }
    if let Some(status) = &context.status {
        println!("status: {status}");
    }
    for (i, function) in context.functions.iter().enumerate() {
        println!(
            "{:>2}. {:.3}  {}  ({})",
            i + 1,
            function.score,
            function.signature.as_deref().unwrap_or(&function.name),
            function.module.as_deref().unwrap_or_default()
        );
        for knowledge in &function.knowledge {
            println!("      knowledge: {knowledge}");
        }
    }
    for path in &context.paths {
        let names: Vec<&str> = path
            .iter()
            .map(|iri| kgfuse::iri::local_name(iri))
            .collect();
        println!("path: {}", names.join(" -> "));
    }
    for fact in &context.structured_facts {
        println!("fact: {} {} {}", fact.subject, fact.predicate, fact.object);
    }
    // Results first, then the trace on stderr, without interleaving.
    let _ = std::io::stdout().flush();
    for stage in &context.trace {
        eprintln!(
            "trace {}: kept {}, dropped {}",
            stage.stage,
            stage.kept.len(),
            stage.dropped.len()
        );
    }
}

/// Most answer rows `--format text` prints (the JSON has them all).
const ANSWER_ROWS_SHOWN: usize = 20;

/// The answer first: a yes or no, or the rows under their columns, then the
/// query that gave them.
fn print_answers(answers: &kgfuse::AnswerSet) {
    match answers.boolean {
        Some(yes) => println!("answer: {}", if yes { "yes" } else { "no" }),
        None => {
            println!(
                "answer ({} row{}{}): {}",
                answers.rows.len(),
                if answers.rows.len() == 1 { "" } else { "s" },
                if answers.truncated {
                    ", more not shown"
                } else {
                    ""
                },
                answers.columns.join(" | ")
            );
            for row in answers.rows.iter().take(ANSWER_ROWS_SHOWN) {
                let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
                println!("  {}", cells.join(" | "));
            }
            if answers.rows.len() > ANSWER_ROWS_SHOWN {
                println!("  ... {} more", answers.rows.len() - ANSWER_ROWS_SHOWN);
            }
        }
    }
    println!("  from the {} query: {}", answers.source, answers.query);
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum LangChoice {
    /// Both Python and Rust files.
    Auto,
    /// Python files only.
    Python,
    /// Rust files only.
    Rust,
}

#[derive(Subcommand)]
enum IngestCommand {
    /// Parse Python/Rust sources into packages, modules, classes, functions,
    /// parameters, call edges, cases, knowledge and I/O tags (one graph per file;
    /// re-ingesting rewrites only what changed and removes deleted files).
    Code {
        /// A source file or directory.
        path: PathBuf,
        /// Which languages to ingest.
        #[arg(long, value_enum, default_value = "auto")]
        lang: LangChoice,
        /// Package (Python) or crate (Rust) name for files outside any package.
        #[arg(long)]
        package: Option<String>,
        /// Knowledge file (TOML or Turtle) attaching domain rules and I/O tags to functions.
        #[arg(long)]
        knowledge: Option<PathBuf>,
        /// Skip files larger than this many MiB (noted, not fatal).
        #[arg(long, default_value_t = 2.0)]
        max_file_size: f64,
        /// Machine-readable report.
        #[arg(long)]
        json: bool,
    },
    /// Split Markdown and text files into chunks (by heading, bounded size) linked to
    /// the entities they mention.
    Docs {
        /// A document file or directory.
        path: PathBuf,
        /// Largest chunk, in characters.
        #[arg(long, default_value_t = 1500)]
        max_chunk_chars: usize,
        /// Skip files larger than this many MiB (noted, not fatal).
        #[arg(long, default_value_t = 4.0)]
        max_file_size: f64,
        /// Machine-readable report.
        #[arg(long)]
        json: bool,
    },
}

fn mib_to_bytes(mib: f64) -> Result<u64> {
    if !(mib.is_finite() && mib > 0.0) {
        bail!("--max-file-size must be a positive number of MiB, not {mib}");
    }
    // Truncation is intended: sizes are whole bytes.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((mib * 1_048_576.0) as u64)
}

/// Prints an ingestion report: a summary on stdout, problems on stderr.
fn print_ingest_report(report: &kgfuse::IngestReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    for problem in &report.problems {
        eprintln!("warning: {problem}");
    }
    if let Some(code) = &report.code {
        println!(
            "{} files: {} modules, {} classes, {} functions, {} cases; {} calls resolved, {} by name",
            report.files,
            code.modules,
            code.classes,
            code.functions,
            code.cases,
            report.calls,
            report.calls_by_name
        );
    }
    if let Some(chunks) = report.chunks {
        println!("{} documents, {chunks} chunks", report.files);
    }
    println!(
        "{} written, {} unchanged, {} removed; {} triples; {}",
        report.written, report.unchanged, report.removed, report.triples, report.vectors
    );
    if !report.problems.is_empty() {
        eprintln!(
            "{} files had problems (listed above)",
            report.problems.len()
        );
    }
    Ok(())
}

/// `kgfuse ... | head` closes stdout early: end quietly with the status a shell
/// gives a process killed by SIGPIPE (141), instead of a panic and a backtrace.
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // Before any thread starts: OpenBLAS picks its kernels as the process loads.
    let restart_failed = kgfuse::restart_with_faster_blas_kernels();
    exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KGFUSE_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(format!("kgfuse={level},{level}"))
            }),
        )
        .init();
    if let Some(e) = restart_failed {
        tracing::warn!("could not restart with faster OpenBLAS kernels: {e}");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) if is_closed_stdout(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line, each cause once: many errors already
/// carry their cause's words (`graph storage: IO error: ...`), and printing
/// the cause again would repeat them. A full disk gets a hint on its own line.
fn error_text(error: &anyhow::Error) -> String {
    let disk_full = kgfuse::error_chain_mentions_disk_full(error.as_ref());
    let mut text = String::new();
    for cause in error.chain() {
        let words = cause.to_string();
        if text.contains(&words) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&words);
    }
    if disk_full {
        text.push_str(
            "\nhint: the disk holding the store is full; free space, then run the command again",
        );
    }
    text
}

/// Whether writing results failed because the reader of stdout went away (some
/// writers report it as text: serialisation errors carry the io error's message).
fn is_closed_stdout(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.to_string().ends_with("Broken pipe (os error 32)")
    })
}

/// The OpenAI-compatible model configured by `KGFUSE_LLM_*`, else the offline one.
fn language_model(offline: bool) -> Result<std::sync::Arc<dyn kgfuse::LanguageModel>> {
    if !offline && let Some(config) = kgfuse::OpenAiChatConfig::from_env() {
        let model = kgfuse::OpenAiChat::new(config)?;
        tracing::info!("language model: {}", kgfuse::LanguageModel::name(&model));
        return Ok(std::sync::Arc::new(model));
    }
    Ok(std::sync::Arc::new(kgfuse::RuleBased::default()))
}

/// `kgfuse serve` options.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address and port to listen on (port 0 picks a free one). Anything but a
    /// loopback address makes the store reachable from other machines.
    #[arg(long, default_value = "127.0.0.1:7878")]
    bind: std::net::SocketAddr,
    /// Allow SPARQL Update and Graph Store writes to requests carrying
    /// `Authorization: Bearer <token>`; the token (16+ characters) is read from
    /// KGFUSE_HTTP_TOKEN.
    #[arg(long)]
    allow_updates: bool,
    /// Largest request body in MiB.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    max_body_mib: u64,
    /// SPARQL queries are cancelled after this many seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    query_timeout: u64,
    /// /retrieve and /ask are cancelled after this many seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    request_timeout: u64,
    /// Most rows or triples a query returns (the response says when it was cut).
    #[arg(long, default_value_t = 10_000)]
    max_rows: usize,
    /// Requests working on the store at once; others wait.
    #[arg(long, default_value_t = 16)]
    max_concurrent: usize,
    /// Allow browser pages from this origin (e.g. http://localhost:3000) to call
    /// the server (CORS); repeatable. Off by default.
    #[arg(long = "cors-origin")]
    cors_origins: Vec<String>,
    /// The dataset IRI `GET /text2sparql` answers for with this store
    /// (repeatable); without one it answers for any.
    #[arg(long = "dataset")]
    datasets: Vec<String>,
    /// Use the offline rule-based model even when an LLM is configured.
    #[arg(long)]
    offline: bool,
}

/// Runs the HTTP server until Ctrl-C or SIGTERM.
async fn serve(engine: Engine, args: ServeArgs) -> Result<()> {
    let update_token = if args.allow_updates {
        let token = std::env::var(kgfuse_http::TOKEN_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty());
        let Some(token) = token else {
            bail!(
                "--allow-updates needs a bearer token in {} (16 or more characters)",
                kgfuse_http::TOKEN_ENV
            );
        };
        Some(token)
    } else {
        None
    };
    let config = kgfuse_http::ServerConfig {
        bind: args.bind,
        max_body_bytes: usize::try_from(args.max_body_mib.saturating_mul(1024 * 1024))
            .unwrap_or(usize::MAX),
        query_timeout: Duration::from_secs(args.query_timeout),
        request_timeout: Duration::from_secs(args.request_timeout),
        max_rows: args.max_rows,
        max_concurrent: args.max_concurrent,
        update_token,
        cors_origins: args.cors_origins,
        datasets: args.datasets,
    };
    let server = kgfuse_http::Server::bind(engine, config).await?;
    let addr = server.local_addr()?;
    // The address on stdout (scripts and tests read it: the port may be chosen);
    // everything else goes to stderr.
    println!("listening on http://{addr}");
    std::io::stdout().flush()?;
    eprintln!("kgfuse serve: console http://{addr}/ , SPARQL http://{addr}/sparql ; Ctrl-C stops");
    server.run(shutdown_signal()).await?;
    eprintln!("kgfuse serve: stopped");
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

async fn open(data: &Path) -> Result<Engine> {
    Ok(Engine::open_with_progress(data, &TerminalProgress::new()).await?)
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let progress = TerminalProgress::new();
    match cli.command {
        Command::Init {
            embedder,
            dimension,
            model_dir,
            base_url,
            model,
            entailment,
            graph,
            graph_update,
            graph_store,
            graph_auth,
            vectors,
            vectors_option,
            attach,
        } => {
            let init = match embedder {
                EmbedderKind::Hash => EngineInit::hash(dimension),
                EmbedderKind::Minilm => EngineInit::minilm(model_dir.as_deref()),
                EmbedderKind::Static => EngineInit::distilled(model_dir.as_deref()),
                EmbedderKind::Openai => EngineInit::openai(base_url.as_deref(), model.as_deref())?,
            };
            let init = init.entailment(match entailment {
                EntailmentKind::Rdfs => kgfuse::Entailment::Rdfs,
                EntailmentKind::None => kgfuse::Entailment::None,
            });
            let init = match graph {
                Some(query) => init.remote_graph(kgfuse::RemoteGraphConfig {
                    query,
                    update: graph_update,
                    store: graph_store,
                    auth: match graph_auth {
                        GraphAuthKind::None => kgfuse::RemoteAuth::None,
                        GraphAuthKind::Basic => kgfuse::RemoteAuth::Basic,
                        GraphAuthKind::Bearer => kgfuse::RemoteAuth::Bearer,
                    },
                }),
                None => init,
            };
            let init = match vectors {
                Some(uri) => {
                    let mut storage = std::collections::BTreeMap::new();
                    for option in vectors_option {
                        let Some((key, value)) = option.split_once('=') else {
                            anyhow::bail!("--vectors-option {option}: expected KEY=VALUE");
                        };
                        storage.insert(key.trim().to_owned(), value.trim().to_owned());
                    }
                    init.remote_vectors(kgfuse::RemoteVectorsConfig { uri, storage })
                }
                None => init,
            };
            let engine = if attach {
                Engine::attach(&cli.data, init).await?
            } else {
                Engine::init(&cli.data, init).await?
            };
            let config = engine.store().config();
            let mut graph = match &config.graph {
                Some(remote) => format!(", graph on {}", remote.query),
                None => String::new(),
            };
            if let Some(vectors) = &config.vectors {
                graph.push_str(&format!(", vectors on {}", vectors.uri));
            }
            println!(
                "{} {} (embedder {}, {} dimensions, entailment {:?}{graph})",
                if attach { "attached" } else { "initialised" },
                cli.data.display(),
                config.embedder.kind,
                config.embedder.dimension,
                config.reasoning.entailment
            );
        }
        Command::Load {
            files,
            graph,
            format,
            validate,
            shapes,
        } => {
            let engine = open(&cli.data).await?;
            let format = format
                .map(|f| kgfuse::format_from_name(&f).map_err(|e| anyhow::anyhow!(e)))
                .transpose()?;
            let sources: Vec<RdfSource> = files
                .iter()
                .map(|path| RdfSource {
                    path: path.clone(),
                    format,
                })
                .collect();
            if validate || !shapes.is_empty() {
                let shapes = Engine::read_shapes(&shapes, true)?;
                let checked = engine.validate_sources(&sources, graph.as_deref(), &shapes)?;
                let prefixes = engine.query_options().prefixes;
                let mut refused = 0;
                for file in &checked {
                    for result in &file.report.results {
                        eprintln!(
                            "{}: {}",
                            file.file.display(),
                            render::validation_result(result, &prefixes)
                        );
                    }
                    refused += usize::from(file.report.has_violations());
                }
                if refused > 0 {
                    eprintln!(
                        "error: {refused} of {} file(s) violate the shapes ({}); nothing was loaded",
                        checked.len(),
                        shapes.sources().join(", ")
                    );
                    return Ok(ExitCode::FAILURE);
                }
            }
            let summary = engine
                .load_sources(&sources, graph.as_deref(), &progress)
                .await?;
            for (path, graph, action, quads) in &summary.files {
                println!(
                    "{action:<9} {} ({quads} quads) -> <{graph}>",
                    path.display()
                );
            }
            println!("{} quads written; {}", summary.quads, summary.vectors);
        }
        Command::Sparql {
            query,
            file,
            format,
            timeout,
            update,
            bindings,
            no_union,
        } => {
            let engine = open(&cli.data).await?;
            let (text, origin) = read_query(query, file.as_deref())?;
            if update {
                if !bindings.is_empty() {
                    bail!("--bind applies to queries, not updates");
                }
                let report = engine
                    .update(&text, &progress)
                    .await
                    .with_context(|| origin.clone())?;
                println!("update done; {report}");
                return Ok(ExitCode::SUCCESS);
            }
            let mut options = engine.query_options();
            if let Some(secs) = timeout {
                options.timeout = (secs > 0).then(|| Duration::from_secs(secs));
            }
            options.union_default_graph &= !no_union;
            if let Some(path) = &file {
                // Relative IRIs in a query file name files beside it, as in
                // `FROM <data.ttl>` (the query's own BASE still wins).
                options.base_iri = Some(kgfuse::file_graph_iri(path)?.into_string());
            }
            let bindings = bindings
                .iter()
                .map(|b| parse_binding(b, &options.prefixes))
                .collect::<Result<Vec<_>>>()?;
            let outcome = engine
                .sparql_bound(&text, &bindings, &options)
                .with_context(|| origin.clone())?;
            write_outcome(&outcome, format, &options, &mut std::io::stdout().lock())?;
        }
        Command::Console => {
            let engine = open(&cli.data).await?;
            console::run(&engine, &cli.data).await?;
        }
        Command::Check { repair, json } => {
            let engine = open(&cli.data).await?;
            if repair {
                let report = engine.repair(&progress).await?;
                eprintln!("repair: {report}");
            }
            let report = engine.check().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for (label, list) in [
                    ("missing vector row for node", &report.missing_rows),
                    ("orphan vector row (no node)", &report.orphan_rows),
                    ("stale vector row (text changed)", &report.stale_rows),
                    ("duplicate vector rows", &report.duplicate_rows),
                ] {
                    for iri in list {
                        println!("{label}: <{iri}>");
                    }
                }
                if let Some(problem) = &report.ontology_problem {
                    println!("{problem}");
                }
                let verdict = if report.is_ok() { "ok" } else { "FAILED" };
                println!(
                    "check {verdict}: {} embeddable nodes, {} vector rows",
                    report.nodes, report.rows
                );
            }
            if !report.is_ok() {
                eprintln!(
                    "error: the store is not consistent; `kgfuse check --repair` rewrites the vector \
                     side and restores the kgfuse vocabulary"
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Validate {
            shapes,
            no_core_shapes,
            format,
        } => {
            let engine = open(&cli.data).await?;
            let shapes = Engine::read_shapes(&shapes, !no_core_shapes)?;
            let report = engine.validate(&shapes)?;
            match format {
                ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                ReportFormat::Text => {
                    let prefixes = engine.query_options().prefixes;
                    for result in &report.results {
                        println!("{}", render::validation_result(result, &prefixes));
                    }
                    let violations = report.violations().count();
                    println!(
                        "validate {}: {violations} violation(s), {} other result(s) against {}",
                        if report.has_violations() {
                            "FAILED"
                        } else {
                            "ok"
                        },
                        report.results.len() - violations,
                        shapes.sources().join(", ")
                    );
                }
            }
            if report.has_violations() {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Why { triple, json } => {
            let engine = open(&cli.data).await?;
            let prefixes = engine.query_options().prefixes;
            let parts: [String; 3] = triple
                .try_into()
                .map_err(|_| anyhow::anyhow!("why takes SUBJECT PREDICATE OBJECT"))?;
            let triple = parse_triple(&parts, &prefixes)?;
            let provenance = engine.store().why(&triple)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&provenance)?);
            } else {
                print!("{}", render::provenance(&provenance));
            }
            if provenance.asserted_in.is_empty() && !provenance.inferred {
                eprintln!("error: the store does not hold {}", provenance.triple);
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Stats { json } => {
            let engine = open(&cli.data).await?;
            let stats = engine.stats().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                let prefixes = engine.query_options().prefixes;
                println!("triples      {}", stats.triples);
                println!("  inferred   {}", stats.inferred_triples);
                println!("graphs       {}", stats.graphs);
                println!("vector rows  {}", stats.vector_rows);
                println!(
                    "embedder     {} ({} dimensions)",
                    stats.embedder, stats.dimension
                );
                match stats.vector_index {
                    Some(index) => println!(
                        "vector index {}, {} rows indexed, {} newer rows scanned exactly",
                        index.index_type, index.indexed_rows, index.unindexed_rows
                    ),
                    None => println!("vector index none (every search scans all rows)"),
                }
                if !stats.nodes_by_class.is_empty() {
                    println!("nodes by class:");
                    for (class, n) in &stats.nodes_by_class {
                        println!("  {n:>8}  {}", kgfuse::iri::compact(class, &prefixes));
                    }
                }
            }
        }
        Command::Dump { format } => {
            let engine = open(&cli.data).await?;
            let format = match format.as_str() {
                "nq" | "nquads" => kgfuse::RdfFormat::NQuads,
                "trig" => kgfuse::RdfFormat::TriG,
                other => bail!("dump writes nq or trig, not {other}"),
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            engine.dump(&mut out, format)?;
            out.flush()?;
        }
        Command::Ingest(IngestCommand::Code {
            path,
            lang,
            package,
            knowledge,
            max_file_size,
            json,
        }) => {
            let engine = open(&cli.data).await?;
            let options = kgfuse::IngestCodeOptions {
                languages: match lang {
                    LangChoice::Auto => Vec::new(),
                    LangChoice::Python => vec![kgfuse::CodeLanguage::Python],
                    LangChoice::Rust => vec![kgfuse::CodeLanguage::Rust],
                },
                package,
                max_file_bytes: mib_to_bytes(max_file_size)?,
                knowledge_file: knowledge,
            };
            let report = engine.ingest_code(&path, &options, &progress).await?;
            print_ingest_report(&report, json)?;
        }
        Command::Ingest(IngestCommand::Docs {
            path,
            max_chunk_chars,
            max_file_size,
            json,
        }) => {
            let engine = open(&cli.data).await?;
            if max_chunk_chars < 100 {
                bail!("--max-chunk-chars must be at least 100");
            }
            let options = kgfuse::DocsOptions {
                max_chunk_chars,
                max_file_bytes: mib_to_bytes(max_file_size)?,
                ..kgfuse::DocsOptions::default()
            };
            let report = engine.ingest_docs(&path, &options, &progress).await?;
            print_ingest_report(&report, json)?;
        }
        Command::Retrieve {
            question,
            strategy,
            top_k,
            max_depth,
            max_paths,
            max_distance,
            alpha,
            max_packages,
            gate_margin,
            offline,
            format,
        } => {
            if !(0.0..=1.0).contains(&alpha) {
                bail!("--alpha must be between 0 and 1, not {alpha}");
            }
            let engine = open(&cli.data).await?.with_model(language_model(offline)?);
            let options = kgfuse::RetrieveOptions {
                strategy: strategy.strategy(),
                top_k,
                paths: kgfuse::PathLimits {
                    max_depth,
                    max_paths,
                },
                neighborhood: kgfuse::NeighborhoodOptions {
                    max_distance,
                    alpha,
                    ..kgfuse::NeighborhoodOptions::default()
                },
                domain: kgfuse::DomainOptions {
                    max_packages,
                    gate_margin,
                    ..kgfuse::DomainOptions::default()
                },
                ..kgfuse::RetrieveOptions::default()
            };
            let context = engine.retrieve(&question, &options).await?;
            match format {
                ContextFormat::Json => println!("{}", serde_json::to_string_pretty(&context)?),
                ContextFormat::Text => print_context(&context),
            }
        }
        Command::Ask {
            question,
            strategy,
            top_k,
            min_relevance,
            max_attempts,
            offline,
            format,
        } => {
            if top_k == 0 || max_attempts == 0 {
                bail!("--top-k and --max-attempts must be at least 1");
            }
            let engine = open(&cli.data).await?.with_model(language_model(offline)?);
            let options = kgfuse::AskOptions {
                retrieve: kgfuse::RetrieveOptions {
                    strategy: strategy.strategy(),
                    top_k,
                    ..kgfuse::RetrieveOptions::default()
                },
                min_relevance,
                max_retrieval_attempts: max_attempts,
                ..kgfuse::AskOptions::default()
            };
            let answer = engine.ask(&question, &options).await;
            match format {
                ContextFormat::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
                ContextFormat::Text => print_answer(&answer),
            }
            if answer.status == kgfuse::AnswerStatus::Failure {
                for error in &answer.errors {
                    eprintln!("error: {error}");
                }
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Mcp { offline } => {
            let engine = open(&cli.data).await?.with_model(language_model(offline)?);
            kgfuse_mcp::serve_stdio(engine).await?;
        }
        Command::Serve(args) => {
            let engine = open(&cli.data)
                .await?
                .with_model(language_model(args.offline)?);
            serve(engine, args).await?;
        }
        Command::Index(IndexCommand::Cases {
            package_coverage,
            cluster_coverage,
            max_clusters,
            json,
        }) => {
            for (flag, value) in [
                ("--package-coverage", package_coverage),
                ("--cluster-coverage", cluster_coverage),
            ] {
                if !(0.0..=1.0).contains(&value) {
                    bail!("{flag} must be between 0 and 1, not {value}");
                }
            }
            if max_clusters == 0 {
                bail!("--max-clusters must be at least 1");
            }
            let engine = open(&cli.data).await?;
            let options = kgfuse::CaseBaseOptions {
                package_coverage,
                cluster_coverage,
                max_clusters,
            };
            let report = engine.build_case_base(options, &progress).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "case base: {} packages, {} functions, {} clusters; {} of {} cases selected; \
                     coverage {:.1}% of packages, {:.1}% of clusters",
                    report.packages,
                    report.functions,
                    report.clusters,
                    report.selected,
                    report.cases,
                    report.package_coverage * 100.0,
                    report.cluster_coverage * 100.0
                );
            }
        }
        Command::Index(IndexCommand::Vectors { json }) => {
            let engine = open(&cli.data).await?;
            let started = std::time::Instant::now();
            let status = engine.build_vector_index(&progress).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!(
                    "vector index: {} over {} rows, built in {:.1} s",
                    status.index_type,
                    status.indexed_rows,
                    started.elapsed().as_secs_f64()
                );
            }
        }
        Command::Eval(args) => run_eval(&cli.data, args).await?,
        Command::Demo { ontology, fixtures } => {
            demo::run(&cli.data, &ontology, &fixtures).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `kgfuse eval`: a question set through every asked strategy, or `make-loo`.
async fn run_eval(data: &Path, args: EvalArgs) -> Result<()> {
    let engine = open(data).await?;
    if let Some(EvalMake::MakeLoo {
        package,
        tests,
        out,
    }) = args.make
    {
        let tests = match tests {
            Some(dir) => Some(
                std::fs::canonicalize(&dir)
                    .with_context(|| dir.display().to_string())?
                    .display()
                    .to_string(),
            ),
            None => None,
        };
        let items = kgfuse_eval::make_leave_one_out(
            &engine,
            &kgfuse_eval::LooOptions {
                package: package.clone(),
                tests,
                max_query_chars: 300,
            },
        )?;
        if items.is_empty() {
            bail!(
                "no case exercises a function of package {package} (are the package and its tests ingested?)"
            );
        }
        let mut text = String::new();
        for item in &items {
            text.push_str(&serde_json::to_string(item)?);
            text.push('\n');
        }
        match out {
            Some(path) => {
                std::fs::write(&path, text).with_context(|| path.display().to_string())?;
                eprintln!("{} questions written to {}", items.len(), path.display());
            }
            None => print!("{text}"),
        }
        return Ok(());
    }
    let Some(file) = args.file else {
        bail!("give a question set (FILE.jsonl) or a subcommand such as make-loo");
    };
    if args.k == 0 {
        bail!("--k must be at least 1");
    }
    if let Some(plot) = &args.plot
        && plot.extension().is_none_or(|e| e != "svg")
    {
        bail!("--plot writes SVG; give a file name ending in .svg");
    }
    let items = kgfuse_eval::read_items(&file)?;
    let strategies: Vec<kgfuse::Strategy> = if args.strategies.is_empty() {
        vec![
            kgfuse::Strategy::Bm25,
            kgfuse::Strategy::Flat,
            kgfuse::Strategy::Hybrid,
            kgfuse::Strategy::Unified,
            kgfuse::Strategy::Domain,
            kgfuse::Strategy::Paths,
            kgfuse::Strategy::Neighborhood,
            kgfuse::Strategy::Auto,
        ]
    } else {
        args.strategies.iter().map(|s| s.strategy()).collect()
    };
    let total = items.len();
    let report = kgfuse_eval::evaluate(
        &engine,
        &items,
        &strategies,
        args.k,
        &kgfuse::RetrieveOptions::default(),
        &mut |strategy, done| {
            if done == total {
                eprintln!("{strategy}: {done} questions");
            }
        },
    )
    .await?;
    for unknown in &report.unknown_gold {
        eprintln!(
            "warning: {}: gold {:?} matches no node (counted as missed)",
            unknown.id, unknown.gold
        );
    }
    if let Some(plot) = &args.plot {
        std::fs::write(plot, kgfuse_eval::recall_vs_tokens_svg(&report))
            .with_context(|| plot.display().to_string())?;
    }
    match args.format {
        EvalFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        EvalFormat::Table => print!("{}", kgfuse_eval::table(&report, &strategies)),
    }
    Ok(())
}

/// Reads query text from the argument, a file or stdin; returns it with a label
/// naming where it came from (for error messages).
fn read_query(query: Option<String>, file: Option<&Path>) -> Result<(String, String)> {
    match (query, file) {
        (Some(_), Some(_)) => bail!("give a query or --file, not both"),
        (Some(q), None) if q != "-" => Ok((q, "query".into())),
        (None, Some(path)) => Ok((
            std::fs::read_to_string(path).with_context(|| path.display().to_string())?,
            path.display().to_string(),
        )),
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            Ok((text, "stdin".into()))
        }
    }
}

/// Parses `name=value` where value is `<IRI>`, `prefix:local`, `"text"` or a number.
pub(crate) fn parse_binding(
    binding: &str,
    prefixes: &[(String, String)],
) -> Result<(String, Term)> {
    let Some((name, value)) = binding.split_once('=') else {
        bail!("binding '{binding}' is not VAR=VALUE");
    };
    let name = name.trim().trim_start_matches(['?', '$']).to_owned();
    let term = parse_term(value, prefixes).with_context(|| format!("binding '{binding}'"))?;
    Ok((name, term))
}

/// Parses `<IRI>`, `prefix:local` (a prefix the store knows), `"text"` or an integer.
pub(crate) fn parse_term(value: &str, prefixes: &[(String, String)]) -> Result<Term> {
    let value = value.trim();
    let term: Term = if let Some(iri) = value.strip_prefix('<').and_then(|v| v.strip_suffix('>')) {
        NamedNode::new(iri)
            .with_context(|| format!("<{iri}>"))?
            .into()
    } else if let Some(text) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Literal::new_simple_literal(text).into()
    } else if let Ok(n) = value.parse::<i64>() {
        Literal::from(n).into()
    } else if let Some((prefix, local)) = value.split_once(':') {
        let Some((_, ns)) = prefixes.iter().find(|(p, _)| p == prefix) else {
            bail!("unknown prefix '{prefix}:' in '{value}'");
        };
        NamedNode::new(format!("{ns}{local}"))
            .with_context(|| value.to_owned())?
            .into()
    } else {
        bail!("cannot read '{value}' as <IRI>, prefix:name, \"text\" or a number");
    };
    Ok(term)
}

/// Parses the three terms of `kgfuse why` (`a` is `rdf:type`, as in Turtle).
fn parse_triple(parts: &[String; 3], prefixes: &[(String, String)]) -> Result<Triple> {
    let subject = match parse_term(&parts[0], prefixes)? {
        Term::NamedNode(n) => n,
        other => bail!("the subject must be an IRI, not {other}"),
    };
    let predicate = if parts[1] == "a" {
        kgfuse::model::vocab::rdf::TYPE.into_owned()
    } else {
        match parse_term(&parts[1], prefixes)? {
            Term::NamedNode(n) => n,
            other => bail!("the predicate must be an IRI, not {other}"),
        }
    };
    let object = parse_term(&parts[2], prefixes)?;
    Ok(Triple::new(subject, predicate, object))
}

/// Writes a result in the chosen format.
pub(crate) fn write_outcome(
    outcome: &QueryOutcome,
    format: OutputFormat,
    options: &QueryOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let results_format = match format {
        OutputFormat::Table => {
            out.write_all(render::outcome(outcome, &options.prefixes, 60).as_bytes())?;
            return Ok(());
        }
        OutputFormat::Json => ResultsFormat::Json,
        OutputFormat::Csv => ResultsFormat::Csv,
        OutputFormat::Tsv => ResultsFormat::Tsv,
        OutputFormat::Xml => ResultsFormat::Xml,
        OutputFormat::Turtle => ResultsFormat::Turtle,
        OutputFormat::Ntriples => ResultsFormat::NTriples,
    };
    outcome.write(results_format, &mut *out)?;
    if matches!(format, OutputFormat::Json | OutputFormat::Xml) {
        writeln!(out)?;
    }
    Ok(())
}
