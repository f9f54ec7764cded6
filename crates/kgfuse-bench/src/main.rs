//! `kgfuse-bench`: measures kgfuse against plain Oxigraph on the LUBM data and
//! prints ratios from one run (`make bench`). Not a test: nothing here asserts.
//!
//! For each LUBM size it builds four stores from the same RDF/XML files:
//!
//! - **P**: plain Oxigraph, bulk loader, everything in the default graph;
//! - **Q**: plain Oxigraph, bulk loader, one named graph per file (kgfuse's layout);
//! - **K**: `kgfuse load` with the default text predicates (LUBM has none of them,
//!   so this is the graph-only path: planning, hashing, provenance, journal);
//! - **E**: `kgfuse load` with `ub:name` added to the text predicates, so every
//!   named entity is embedded (hash embedder) and written to LanceDB.
//!
//! Then it runs the 14 LUBM queries (`queries/lubm/`) on P, Q (union default graph)
//! and K (`Engine::sparql`), and reports medians and the ratios K/Q (what the
//! kgfuse layer costs on the same layout) and K/P (layer + layout).
//!
//! Other modes: `--ingest DIR` (code ingestion), `--retrieval N,...` (strategies
//! on synthetic API graphs), `--peer RESULT.json` (the Python peer), `--http`
//! (in-process vs `kgfuse serve` on loopback), `--profile DIR` (where one
//! retrieval's time goes, per strategy, on an existing store).
#![allow(clippy::print_stdout)]

mod http;
mod ingest;
mod peer;
mod profile;
mod remote;
mod retrieval;

/// The same allocator as the `kgfuse` binary, so what is measured is what runs.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kgfuse::{Engine, EngineInit, NoProgress, StoreConfig, Strategy};
use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::{GraphName, NamedNode};
use oxigraph::sparql::{QueryResults, SparqlEvaluator};
use oxigraph::store::Store;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Folder holding lubm1.tar.gz, lubm10.tar.gz (and lubm50.tar.gz).
    #[arg(long, default_value = "../shared/data/lubm")]
    lubm: PathBuf,
    /// LUBM sizes (universities) to run.
    #[arg(long, value_delimiter = ',', default_value = "1,10")]
    sizes: Vec<u32>,
    /// Timed runs per query (after one warm-up run); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Folder with q01.rq ... q14.rq.
    #[arg(long, default_value = "queries/lubm")]
    queries: PathBuf,
    /// Scratch folder (default: a temporary directory).
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// With `--retrieval`: keep each synthetic store (and its Turtle file) in the
    /// scratch folder, e.g. for `--profile SCRATCH/retrieval-N` or `kgfuse retrieve`.
    #[arg(long, requires = "scratch")]
    keep: bool,
    /// With `--retrieval` and `--keep`: build each store (load, case base: their
    /// time, peak memory and size on disk) and stop before the strategies run;
    /// `--profile SCRATCH/retrieval-N --synthetic-questions` times them later.
    #[arg(long, requires = "keep")]
    build_only: bool,
    /// With `--profile`: ask the 20 questions of `--retrieval`'s synthetic
    /// graph instead of `--peer-questions`.
    #[arg(long)]
    synthetic_questions: bool,
    /// Benchmark code ingestion of this source tree instead of LUBM (e.g. the CPython
    /// standard library: `python3 -c 'import os; print(os.path.dirname(os.__file__))'`).
    #[arg(long)]
    ingest: Option<PathBuf>,
    /// Benchmark retrieval strategies on synthetic API graphs of these sizes
    /// (functions) instead of LUBM.
    #[arg(long, value_delimiter = ',')]
    retrieval: Vec<usize>,
    /// Result JSON of `bench/peer/peer.py`: compare kgfuse with the Python peer on
    /// its files and questions.
    #[arg(long)]
    peer: Option<PathBuf>,
    /// The questions the peer ran (JSON list).
    #[arg(long, default_value = "bench/peer/questions.json")]
    peer_questions: PathBuf,
    /// Measure what serving over HTTP costs on LUBM-1 (queries, retrieval,
    /// throughput at 1/4/16 clients) instead of the LUBM comparison.
    #[arg(long)]
    http: bool,
    /// Remote engines against embedded ones (`bench/remote.sh` starts the servers):
    /// retrieval on a synthetic graph of this many functions on every
    /// `--graph-server`, the Virtuoso load comparison, LanceDB on `--vectors-s3`.
    #[arg(long)]
    remote: Option<usize>,
    /// A SPARQL server for `--remote`: `NAME=QUERY[,UPDATE[,STORE]]` (repeatable).
    #[arg(long)]
    graph_server: Vec<remote::Server>,
    /// For `--remote`: load this LUBM size into the server named `virtuoso`
    /// through kgfuse and through its own Graph Store POST.
    #[arg(long)]
    remote_lubm: Option<u32>,
    /// For `--remote`: `s3://bucket/prefix` to compare LanceDB on S3 with a local
    /// directory (credentials from `AWS_*`).
    #[arg(long)]
    vectors_s3: Option<String>,
    /// LanceDB storage option for `--vectors-s3`, `KEY=VALUE` (repeatable).
    #[arg(long)]
    vectors_option: Vec<String>,
    /// Vector-row sizes (functions) for `--vectors-s3`.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    vector_sizes: Vec<usize>,
    /// Where one retrieval's time goes (embedding, LanceDB, graph, kgfuse's own
    /// code), per strategy, on the existing store in this directory, asked the
    /// `--peer-questions`.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// With `--profile`: milliseconds of idleness before each measured retrieval,
    /// as an agent's questions come (0: back to back, after the warm-up).
    #[arg(long, default_value_t = 0)]
    idle_ms: u64,
    /// With `--profile`: only these strategies (comma-separated names; all
    /// when not given).
    #[arg(long, value_delimiter = ',')]
    profile_strategy: Vec<String>,
    /// With `--profile`: measure each question this many times (after one
    /// warm-up each); the medians are over every measurement. More passes
    /// steady the medians when comparing two builds.
    #[arg(long, default_value_t = 1)]
    passes: usize,
    /// Internal: run one ingestion configuration (G, H or M) and print its measurement.
    #[arg(long, hide = true)]
    ingest_one: Option<String>,
}

fn owl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "owl") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn extract(archive: &Path, into: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(into)?;
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .arg("-C")
        .arg(into)
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("tar failed on {}", archive.display());
    }
    owl_files(into)
}

fn file_iri(path: &Path) -> Result<NamedNode> {
    Ok(NamedNode::new(format!(
        "file://{}",
        std::fs::canonicalize(path)?.display()
    ))?)
}

/// Plain Oxigraph bulk load; `named` puts each file in its own graph.
fn plain_load(dir: &Path, files: &[PathBuf], named: bool) -> Result<(Store, Duration, usize)> {
    let start = Instant::now();
    let store = Store::open(dir)?;
    let mut loader = store.bulk_loader();
    for file in files {
        let mut parser =
            RdfParser::from_format(RdfFormat::RdfXml).with_base_iri(file_iri(file)?.as_str())?;
        if named {
            parser = parser.with_default_graph(GraphName::NamedNode(file_iri(file)?));
        }
        loader.load_from_reader(parser, std::io::BufReader::new(std::fs::File::open(file)?))?;
    }
    loader.commit()?;
    let elapsed = start.elapsed();
    let quads = store.len()?;
    Ok((store, elapsed, quads))
}

fn count_plain(store: &Store, query: &str, union: bool) -> Result<usize> {
    let mut prepared = SparqlEvaluator::new().parse_query(query)?;
    if union {
        prepared.dataset_mut().set_default_graph_as_union();
    }
    Ok(match prepared.on_store(store).execute()? {
        QueryResults::Solutions(s) => {
            let mut n = 0;
            for row in s {
                row?;
                n += 1;
            }
            n
        }
        QueryResults::Boolean(_) => 1,
        QueryResults::Graph(g) => g.count(),
    })
}

fn count_kgfuse(engine: &Engine, query: &str) -> Result<usize> {
    Ok(match engine.sparql(query)? {
        kgfuse::QueryOutcome::Solutions { rows, .. } => rows.len(),
        kgfuse::QueryOutcome::Boolean(_) => 1,
        kgfuse::QueryOutcome::Graph(g) => g.len(),
    })
}

/// A store that embeds LUBM's `ub:name` (hash embedder): variant E, and the
/// `--http` store.
fn lubm_embedded() -> EngineInit {
    let mut config = StoreConfig::new(kgfuse::EmbedderKind::Hash, 384);
    config
        .text_predicates
        .push("http://swat.cse.lehigh.edu/onto/univ-bench.owl#name".into());
    EngineInit::from_config(config)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<F: FnMut() -> Result<usize>>(runs: usize, mut f: F) -> Result<(Duration, usize)> {
    let rows = f()?; // warm-up
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        samples.push(start.elapsed());
    }
    Ok((median(samples), rows))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> Result<()> {
    // Before any thread starts: OpenBLAS picks its kernels as the process loads.
    if let Some(e) = kgfuse::restart_with_faster_blas_kernels() {
        eprintln!("warning: could not restart with faster OpenBLAS kernels: {e}");
    }
    tokio::runtime::Runtime::new()?.block_on(run(Args::parse()))
}

async fn run(args: Args) -> Result<()> {
    // `KGFUSE_LOG=kgfuse_graph=debug`: every query and its time, on stderr.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("KGFUSE_LOG") {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter)
            .init();
    }
    let scratch = match &args.scratch {
        Some(s) => s.clone(),
        None => std::env::temp_dir().join(format!("kgfuse-bench-{}", std::process::id())),
    };
    let profile = if cfg!(debug_assertions) {
        "dev (unoptimised!)"
    } else {
        "release"
    };
    if args.ingest_one.is_none() {
        println!(
            "kgfuse-bench — profile {profile}, {} cores, OpenBLAS kernels {}, scratch {}",
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            kgfuse::blas_kernels().as_deref().unwrap_or("none (gemm)"),
            scratch.display()
        );
    }
    if let Some(dir) = &args.profile {
        let questions: Vec<String> = if args.synthetic_questions {
            retrieval::questions()
        } else {
            serde_json::from_str(
                &std::fs::read_to_string(&args.peer_questions)
                    .with_context(|| args.peer_questions.display().to_string())?,
            )?
        };
        let strategies = if args.profile_strategy.is_empty() {
            Strategy::ALL.to_vec()
        } else {
            args.profile_strategy
                .iter()
                .map(|name| Strategy::from_name(name))
                .collect::<Result<_, _>>()?
        };
        let plan = profile::Plan {
            strategies,
            idle: Duration::from_millis(args.idle_ms),
            passes: args.passes.max(1),
        };
        return profile::run(dir, &questions, &plan).await;
    }
    if let Some(result) = &args.peer {
        let outcome = peer::run(result, &args.peer_questions, &scratch).await;
        let _ = std::fs::remove_dir_all(&scratch);
        return outcome;
    }
    if let Some(functions) = args.remote {
        let mut storage = std::collections::BTreeMap::new();
        for option in &args.vectors_option {
            let (key, value) = option
                .split_once('=')
                .with_context(|| format!("{option}: expected KEY=VALUE"))?;
            storage.insert(key.to_owned(), value.to_owned());
        }
        let lubm = match args.remote_lubm {
            None => None,
            Some(size) => {
                let server = args
                    .graph_server
                    .iter()
                    .find(|s| s.name() == "virtuoso")
                    .context("--remote-lubm needs a --graph-server named virtuoso")?;
                Some((args.lubm.join(format!("lubm{size}.tar.gz")), server))
            }
        };
        let plan = remote::Plan {
            functions,
            servers: &args.graph_server,
            vectors: args.vectors_s3.clone().map(|uri| (uri, storage)),
            vector_sizes: &args.vector_sizes,
            lubm,
        };
        let result = remote::run(&plan, &scratch).await;
        let _ = std::fs::remove_dir_all(&scratch);
        return result;
    }
    if !args.retrieval.is_empty() {
        let steps = if args.build_only {
            retrieval::Steps::BuildOnly
        } else {
            retrieval::Steps::All
        };
        let result = retrieval::run(&args.retrieval, &scratch, args.keep, steps).await;
        if !args.keep {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        return result;
    }
    if let Some(path) = &args.ingest {
        std::fs::create_dir_all(&scratch)?;
        let result = match &args.ingest_one {
            Some(config) => ingest::run_one(config, path, &scratch).await,
            None => ingest::run_all(path, &scratch),
        };
        if args.ingest_one.is_none() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        return result;
    }
    let mut queries = Vec::new();
    for i in 1..=14 {
        let path = args.queries.join(format!("q{i:02}.rq"));
        queries.push((
            format!("Q{i}"),
            std::fs::read_to_string(&path).with_context(|| path.display().to_string())?,
        ));
    }

    if args.http {
        std::fs::create_dir_all(&scratch)?;
        let result = http::run(&args.lubm, &queries, &scratch).await;
        let _ = std::fs::remove_dir_all(&scratch);
        return result;
    }

    for size in &args.sizes {
        let archive = args.lubm.join(format!("lubm{size}.tar.gz"));
        if !archive.exists() {
            println!("\n(skipping LUBM-{size}: {} not found)", archive.display());
            continue;
        }
        let root = scratch.join(format!("lubm{size}"));
        let _ = std::fs::remove_dir_all(&root);
        let files = extract(&archive, &root.join("data"))?;
        println!("\n## LUBM-{size}: {} files", files.len());

        let (plain, p_time, quads) = plain_load(&root.join("p"), &files, false)?;
        let (named, q_time, _) = plain_load(&root.join("q"), &files, true)?;

        let start = Instant::now();
        let engine = Engine::init(root.join("k"), EngineInit::hash(384)).await?;
        let k_init = start.elapsed();
        engine.load(&files, None, &NoProgress).await?;
        let k_time = start.elapsed();

        let start = Instant::now();
        let embedded = Engine::init(root.join("e"), lubm_embedded()).await?;
        let e_summary = embedded.load(&files, None, &NoProgress).await?;
        let e_time = start.elapsed();

        let rate = |d: Duration| quads as f64 / d.as_secs_f64();
        println!("\n### Load ({quads} triples)\n");
        println!("| variant | seconds | triples/s | time vs plain Oxigraph |");
        println!("|---|---:|---:|---:|");
        for (name, d) in [
            ("P plain Oxigraph bulk load, default graph", p_time),
            ("Q plain Oxigraph bulk load, graph per file", q_time),
            ("K kgfuse load, graph only", k_time),
            ("E kgfuse load + embed ub:name (hash) + LanceDB", e_time),
        ] {
            println!(
                "| {name} | {:.2} | {:.0} | {:.2}x |",
                d.as_secs_f64(),
                rate(d),
                d.as_secs_f64() / p_time.as_secs_f64()
            );
        }
        println!(
            "\n(K: {:.2} s of it `Engine::init`, the store and its ontology; E embedded {} rows)",
            k_init.as_secs_f64(),
            e_summary.vectors.added
        );
        drop(embedded);
        println!("\n{}", profile::edge_index_build(&engine)?);

        println!("\n### LUBM queries (median of {} runs, ms)\n", args.runs);
        println!("| query | rows | P plain | Q plain, union | K kgfuse | K/Q | K/P |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        let (mut sum_k, mut sum_q, mut sum_p) = (0.0, 0.0, 0.0);
        for (name, query) in &queries {
            let (p, rows_p) = time(args.runs, || count_plain(&plain, query, false))?;
            let (q, rows_q) = time(args.runs, || count_plain(&named, query, true))?;
            let (k, rows_k) = time(args.runs, || count_kgfuse(&engine, query))?;
            let rows = if rows_p == rows_q && rows_q == rows_k {
                rows_k.to_string()
            } else {
                format!("{rows_p}/{rows_q}/{rows_k}")
            };
            println!(
                "| {name} | {rows} | {:.2} | {:.2} | {:.2} | {:.3} | {:.3} |",
                ms(p),
                ms(q),
                ms(k),
                ms(k) / ms(q),
                ms(k) / ms(p)
            );
            sum_k += ms(k);
            sum_q += ms(q);
            sum_p += ms(p);
        }
        println!(
            "| **all** | | {sum_p:.2} | {sum_q:.2} | {sum_k:.2} | {:.3} | {:.3} |",
            sum_k / sum_q,
            sum_k / sum_p
        );
        drop(engine);
        drop(plain);
        drop(named);
        let _ = std::fs::remove_dir_all(&root);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}
