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
//! Other measurements are subcommands ([`cli::Command`]): `ingest DIR` (code
//! ingestion), `retrieval N,...` (strategies on synthetic API graphs), `peer
//! RESULT.json` (the Python peer), `http` (in-process vs `kgfuse serve` on
//! loopback), `remote N` (remote engines), `profile DIR` (where one retrieval's
//! time goes, per strategy, on an existing store).
#![allow(clippy::print_stdout)]

mod cli;
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
use cli::{Cli, Command, Common};
use kgfuse::{Engine, EngineInit, NoProgress, StoreConfig, Strategy};
use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::{GraphName, NamedNode};
use oxigraph::sparql::{QueryResults, SparqlEvaluator};
use oxigraph::store::Store;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
/// `http` store.
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
    if let Some(e) = kgfuse::blas::restart_with_faster_kernels() {
        eprintln!("warning: could not restart with faster OpenBLAS kernels: {e}");
    }
    tokio::runtime::Runtime::new()?.block_on(run(Cli::parse()))
}

async fn run(cli: Cli) -> Result<()> {
    // `KGFUSE_LOG=kgfuse_graph=debug`: every query and its time, on stderr.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("KGFUSE_LOG") {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter)
            .init();
    }
    let common = &cli.common;
    let scratch = match &common.scratch {
        Some(s) => s.clone(),
        None => std::env::temp_dir().join(format!("kgfuse-bench-{}", std::process::id())),
    };
    let command = cli.command.unwrap_or(Command::Lubm);
    let child = matches!(&command, Command::Ingest(args) if args.one.is_some());
    if !child {
        println!(
            "kgfuse-bench — profile {}, {} cores, OpenBLAS kernels {}, scratch {}",
            if cfg!(debug_assertions) {
                "dev (unoptimised!)"
            } else {
                "release"
            },
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            kgfuse::blas::kernels().as_deref().unwrap_or("none (gemm)"),
            scratch.display()
        );
    }
    match command {
        Command::Lubm => lubm(common, &scratch).await,
        Command::Profile(args) => profile_store(&args).await,
        Command::Peer(args) => {
            let outcome = peer::run(&args.result, &args.questions, &scratch).await;
            let _ = std::fs::remove_dir_all(&scratch);
            outcome
        }
        Command::Remote(args) => remote_engines(&args, common, &scratch).await,
        Command::Retrieval(args) => {
            let steps = if args.build_only {
                retrieval::Steps::BuildOnly
            } else if args.first_questions {
                retrieval::Steps::FirstQuestions
            } else {
                retrieval::Steps::All
            };
            let keep = args.keep || args.first_questions;
            let result = retrieval::run(&args.functions, &scratch, keep, steps).await;
            if !keep {
                let _ = std::fs::remove_dir_all(&scratch);
            }
            result
        }
        Command::Ingest(args) => {
            std::fs::create_dir_all(&scratch)?;
            match &args.one {
                Some(config) => ingest::run_one(config, &args.dir, &scratch).await,
                None => {
                    let result = ingest::run_all(&args.dir, &scratch);
                    let _ = std::fs::remove_dir_all(&scratch);
                    result
                }
            }
        }
        Command::Http => {
            std::fs::create_dir_all(&scratch)?;
            let result = http::run(&common.lubm, &lubm_queries(common)?, &scratch).await;
            let _ = std::fs::remove_dir_all(&scratch);
            result
        }
    }
}

/// The 14 LUBM queries, named Q1 ... Q14.
fn lubm_queries(common: &Common) -> Result<Vec<(String, String)>> {
    let mut queries = Vec::new();
    for i in 1..=14 {
        let path = common.queries.join(format!("q{i:02}.rq"));
        queries.push((
            format!("Q{i}"),
            std::fs::read_to_string(&path).with_context(|| path.display().to_string())?,
        ));
    }
    Ok(queries)
}

/// `kgfuse-bench profile`.
async fn profile_store(args: &cli::ProfileArgs) -> Result<()> {
    let questions: Vec<String> = if args.synthetic_questions {
        retrieval::questions()
    } else {
        serde_json::from_str(
            &std::fs::read_to_string(&args.questions)
                .with_context(|| args.questions.display().to_string())?,
        )?
    };
    let strategies = if args.strategy.is_empty() {
        Strategy::ALL.to_vec()
    } else {
        args.strategy.clone()
    };
    let plan = profile::Plan {
        strategies,
        idle: Duration::from_millis(args.idle_ms),
        passes: args.passes.max(1),
    };
    profile::run(&args.dir, &questions, &plan).await
}

/// `kgfuse-bench remote`.
async fn remote_engines(args: &cli::RemoteArgs, common: &Common, scratch: &Path) -> Result<()> {
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
            Some((common.lubm.join(format!("lubm{size}.tar.gz")), server))
        }
    };
    let plan = remote::Plan {
        functions: args.functions,
        servers: &args.graph_server,
        vectors: args.vectors_s3.clone().map(|uri| (uri, storage)),
        vector_sizes: &args.vector_sizes,
        lubm,
    };
    let result = remote::run(&plan, scratch).await;
    let _ = std::fs::remove_dir_all(scratch);
    result
}

/// `kgfuse-bench lubm`: kgfuse against plain Oxigraph, per LUBM size.
async fn lubm(common: &Common, scratch: &Path) -> Result<()> {
    let queries = lubm_queries(common)?;
    for size in &common.sizes {
        let archive = common.lubm.join(format!("lubm{size}.tar.gz"));
        if !archive.exists() {
            println!("\n(skipping LUBM-{size}: {} not found)", archive.display());
            continue;
        }
        let root = scratch.join(format!("lubm{size}"));
        let _ = std::fs::remove_dir_all(&root);
        let files = extract(&archive, &root.join("data"))?;
        println!("\n## LUBM-{size}: {} files", files.len());
        let stores = load_four(&root, &files).await?;
        println!("\n{}", profile::edge_index_build(&stores.kgfuse)?);
        compare_queries(&stores, &queries, common.runs)?;
        drop(stores);
        let _ = std::fs::remove_dir_all(&root);
    }
    let _ = std::fs::remove_dir_all(scratch);
    Ok(())
}

/// The stores the LUBM queries run on: plain Oxigraph with everything in the
/// default graph (P) and with a graph per file (Q), and kgfuse (K).
struct LubmStores {
    plain: Store,
    named: Store,
    kgfuse: Engine,
}

/// Loads the files four ways (P, Q, K, and E: K with `ub:name` embedded), prints
/// the load table, and keeps P, Q and K.
async fn load_four(root: &Path, files: &[PathBuf]) -> Result<LubmStores> {
    let (plain, p_time, quads) = plain_load(&root.join("p"), files, false)?;
    let (named, q_time, _) = plain_load(&root.join("q"), files, true)?;

    let start = Instant::now();
    let kgfuse = Engine::init(root.join("k"), EngineInit::hash(384)).await?;
    let k_init = start.elapsed();
    kgfuse.load(files, None, &NoProgress).await?;
    let k_time = start.elapsed();

    let start = Instant::now();
    let embedded = Engine::init(root.join("e"), lubm_embedded()).await?;
    let e_summary = embedded.load(files, None, &NoProgress).await?;
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
    Ok(LubmStores {
        plain,
        named,
        kgfuse,
    })
}

/// The 14 queries on P, Q and K: medians, row counts and the ratios K/Q and K/P.
fn compare_queries(stores: &LubmStores, queries: &[(String, String)], runs: usize) -> Result<()> {
    println!("\n### LUBM queries (median of {runs} runs, ms)\n");
    println!("| query | rows | P plain | Q plain, union | K kgfuse | K/Q | K/P |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let (mut sum_k, mut sum_q, mut sum_p) = (0.0, 0.0, 0.0);
    for (name, query) in queries {
        let (p, rows_p) = time(runs, || count_plain(&stores.plain, query, false))?;
        let (q, rows_q) = time(runs, || count_plain(&stores.named, query, true))?;
        let (k, rows_k) = time(runs, || count_kgfuse(&stores.kgfuse, query))?;
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
    Ok(())
}
