//! Remote engines against embedded ones, on loopback (`bench/remote.sh` starts
//! the servers and passes their addresses):
//!
//! 1. **Retrieval** on the synthetic API graph of [`crate::retrieval`]: every
//!    strategy answers the same 20 questions on an embedded store and on one whose
//!    graph is on each SPARQL server; the table gives p50 latency of both, their
//!    ratio, the requests each retrieval sent to the server, and the share of
//!    the embedded run's items the remote run also returned.
//! 2. **Loading into Virtuoso**: the same N-Triples (LUBM, converted once) sent
//!    by Virtuoso's own Graph Store POST, one request per file, and loaded by
//!    `kgfuse load` into a store whose graph is on that server.
//! 3. **LanceDB on S3** (Ceph RGW) against a local directory: the time LanceDB
//!    spends writing the vector rows of a load, and search latency.

use crate::retrieval::{agreement, generate, percentile_ms, questions, time_strategies};
use anyhow::{Context, Result, bail};
use kgfuse::vectors::VectorRow;
use kgfuse::{
    CaseBaseOptions, Engine, EngineInit, NoProgress, RemoteGraphConfig, RemoteVectorsConfig,
    VectorIndexConfig,
};
use oxigraph::io::{RdfFormat, RdfParser, RdfSerializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A SPARQL server named on the command line: `NAME=QUERY[,UPDATE[,STORE]]`.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    name: String,
    config: RemoteGraphConfig,
}

impl Server {
    /// The name given on the command line.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

impl std::str::FromStr for Server {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, urls) = text
            .split_once('=')
            .ok_or_else(|| format!("{text}: expected NAME=QUERY[,UPDATE[,STORE]]"))?;
        let mut urls = urls.split(',').map(str::trim);
        let query = urls
            .next()
            .filter(|u| !u.is_empty())
            .ok_or("no query URL")?;
        let mut next = || urls.next().filter(|u| !u.is_empty()).map(str::to_owned);
        Ok(Self {
            name: name.to_owned(),
            config: RemoteGraphConfig {
                query: query.to_owned(),
                update: next(),
                store: next(),
                auth: kgfuse::RemoteAuth::None,
            },
        })
    }
}

/// What `kgfuse-bench remote` measures.
pub(crate) struct Plan<'a> {
    /// Functions in the synthetic graph.
    pub functions: usize,
    pub servers: &'a [Server],
    /// `s3://bucket/prefix` and its LanceDB storage options.
    pub vectors: Option<(String, BTreeMap<String, String>)>,
    /// Vector rows (functions) for the LanceDB comparison.
    pub vector_sizes: &'a [usize],
    /// LUBM archive for the Virtuoso load comparison, with the server to load.
    pub lubm: Option<(PathBuf, &'a Server)>,
}

/// Exact vector search, as in the retrieval table, so both stores agree.
fn init() -> EngineInit {
    EngineInit::hash(384).vector_index(VectorIndexConfig {
        auto_build_rows: 0,
        ..VectorIndexConfig::default()
    })
}

/// Runs every part of the plan that has what it needs.
pub(crate) async fn run(plan: &Plan<'_>, scratch: &Path) -> Result<()> {
    std::fs::create_dir_all(scratch)?;
    if !plan.servers.is_empty() && plan.functions > 0 {
        retrieval(plan.functions, plan.servers, scratch).await?;
    }
    if let Some((archive, server)) = &plan.lubm {
        virtuoso_load(archive, server, scratch).await?;
    }
    if let Some((uri, storage)) = &plan.vectors {
        vectors_on_s3(plan.vector_sizes, uri, storage, scratch).await?;
    }
    Ok(())
}

/// A store of the synthetic graph with its case base; returns the load time.
async fn synthetic_store(engine: &Engine, file: &Path) -> Result<Duration> {
    let start = Instant::now();
    engine.load(&[file], None, &NoProgress).await?;
    engine
        .build_case_base(CaseBaseOptions::default(), &NoProgress)
        .await?;
    Ok(start.elapsed())
}

async fn retrieval(n: usize, servers: &[Server], scratch: &Path) -> Result<()> {
    let file = scratch.join(format!("synthetic-{n}.ttl"));
    std::fs::write(&file, generate(n))?;
    let dir = scratch.join("remote-embedded");
    let embedded = Engine::init(&dir, init()).await?;
    let load = synthetic_store(&embedded, &file).await?;
    let questions = questions();
    let base = time_strategies(&embedded, &questions).await?;
    println!(
        "\n### Remote graph against embedded: {n} functions (embedded load and case base {:.1} s)",
        load.as_secs_f64()
    );
    for server in servers {
        let dir = scratch.join(format!("remote-{}", server.name));
        let engine = Engine::init(&dir, init().remote_graph(server.config.clone()))
            .await
            .with_context(|| format!("a store on {}", server.name))?;
        let load = synthetic_store(&engine, &file).await?;
        let runs = time_strategies(&engine, &questions).await?;
        println!(
            "\n{} ({}; load and case base {:.1} s):\n",
            server.name,
            server.config.query,
            load.as_secs_f64()
        );
        println!(
            "| strategy | embedded p50 ms | remote p50 ms | remote / embedded | remote p95 ms | requests per retrieval | same items |"
        );
        println!("|---|---|---|---|---|---|---|");
        for (run, local) in runs.iter().zip(&base) {
            let p50 = percentile_ms(&run.times, 0.5);
            let local_p50 = percentile_ms(&local.times, 0.5);
            println!(
                "| {} | {local_p50:.1} | {p50:.1} | {:.2}x | {:.1} | {:.1} | {:.3} |",
                run.strategy.name(),
                p50 / local_p50,
                percentile_ms(&run.times, 0.95),
                run.round_trips,
                agreement(run, local),
            );
        }
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// The same N-Triples into Virtuoso by its own Graph Store POST and by `kgfuse
/// load` (with and without entailment).
async fn virtuoso_load(archive: &Path, server: &Server, scratch: &Path) -> Result<()> {
    let Some(store_url) = &server.config.store else {
        bail!("{} has no Graph Store URL to compare with", server.name);
    };
    let root = scratch.join("virtuoso-load");
    let files = crate::extract(archive, &root.join("owl"))?;
    // Convert once, outside every timing; each kgfuse run loads its own copy (its
    // graphs are named after the files, so the runs do not meet on the server).
    let (nt_files, triples) = to_ntriples(&files, &root.join("nt"))?;
    println!(
        "\n### Loading {} (N-Triples, {} files, {triples} triples) into {}\n",
        archive.display(),
        nt_files.len(),
        server.name
    );
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build(),
    );
    let start = Instant::now();
    for (i, path) in nt_files.iter().enumerate() {
        let body = std::fs::read(path)?;
        let response = agent
            .post(store_url)
            .query("graph", format!("urn:kgfuse-bench:direct:{i}"))
            .header("Content-Type", "application/n-triples")
            .send(&body[..])?;
        if !response.status().is_success() {
            bail!("Graph Store POST answered {}", response.status());
        }
    }
    let direct = start.elapsed();
    println!("| loader | seconds | triples/s | vs Graph Store POST |");
    println!("|---|---|---|---|");
    #[allow(clippy::cast_precision_loss)]
    let rate = |d: Duration| triples as f64 / d.as_secs_f64();
    println!(
        "| Virtuoso Graph Store POST, one request per file | {:.1} | {:.0} | 1.00x |",
        direct.as_secs_f64(),
        rate(direct)
    );
    for (label, entailment) in [
        ("kgfuse load, no entailment", kgfuse::Entailment::None),
        (
            "kgfuse load, RDFS entailment (the default)",
            kgfuse::Entailment::Rdfs,
        ),
    ] {
        let dir = root.join(format!("kgfuse-{entailment:?}"));
        let copy = root.join(format!("nt-{entailment:?}"));
        std::fs::create_dir_all(&copy)?;
        let mut files = Vec::new();
        for path in &nt_files {
            let to = copy.join(path.file_name().unwrap_or_default());
            std::fs::copy(path, &to)?;
            files.push(to);
        }
        let engine = Engine::init(
            &dir,
            init()
                .entailment(entailment)
                .remote_graph(server.config.clone()),
        )
        .await?;
        let start = Instant::now();
        engine.load(&files, None, &NoProgress).await?;
        let took = start.elapsed();
        println!(
            "| {label} | {:.1} | {:.0} | {:.2}x |",
            took.as_secs_f64(),
            rate(took),
            direct.as_secs_f64() / took.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// The RDF/XML files as N-Triples files in `dir`, and how many triples they hold.
fn to_ntriples(files: &[PathBuf], dir: &Path) -> Result<(Vec<PathBuf>, usize)> {
    std::fs::create_dir_all(dir)?;
    let mut nt_files = Vec::new();
    let mut triples = 0usize;
    for (i, file) in files.iter().enumerate() {
        let base = crate::file_iri(file)?;
        let parser = RdfParser::from_format(RdfFormat::RdfXml).with_base_iri(base.as_str())?;
        let mut writer = RdfSerializer::from_format(RdfFormat::NTriples).for_writer(Vec::new());
        for quad in parser.for_reader(std::io::BufReader::new(std::fs::File::open(file)?)) {
            writer.serialize_triple(&oxigraph::model::Triple::from(quad?))?;
            triples += 1;
        }
        let path = dir.join(format!("{i:04}.nt"));
        std::fs::write(&path, writer.finish()?)?;
        nt_files.push(path);
    }
    Ok((nt_files, triples))
}

/// Vector rows written and searched on S3 and in a local directory: the whole
/// load (the same graph and embedding on both sides, so the difference is the
/// vector writes), then single-row upserts and searches, each timed alone.
async fn vectors_on_s3(
    sizes: &[usize],
    uri: &str,
    storage: &BTreeMap<String, String>,
    scratch: &Path,
) -> Result<()> {
    println!("\n### LanceDB on S3 ({uri}) against a local directory\n");
    println!(
        "| functions | vector rows | load s local | load s S3 | S3 / local | upsert p50 ms local | upsert p50 ms S3 | S3 / local | search p50 ms local | search p50 ms S3 | S3 / local |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let questions = questions();
    for &n in sizes {
        let file = scratch.join(format!("vectors-{n}.ttl"));
        std::fs::write(&file, generate(n))?;
        let mut measured = Vec::new();
        for remote in [false, true] {
            let dir = scratch.join(format!("vectors-{n}-{remote}"));
            let mut setup = init();
            if remote {
                setup = setup.remote_vectors(RemoteVectorsConfig {
                    uri: format!("{}/rows-{n}", uri.trim_end_matches('/')),
                    storage: storage.clone(),
                });
            }
            measured.push(vector_side(&dir, setup, &file, &questions).await?);
            let _ = std::fs::remove_dir_all(&dir);
        }
        let [
            (local_load, local_upsert, local_search, rows),
            (s3_load, s3_upsert, s3_search, _),
        ] = measured[..]
        else {
            continue;
        };
        println!(
            "| {n} | {rows} | {:.1} | {:.1} | {:.2}x | {local_upsert:.1} | {s3_upsert:.1} | {:.2}x | {local_search:.1} | {s3_search:.1} | {:.2}x |",
            local_load.as_secs_f64(),
            s3_load.as_secs_f64(),
            s3_load.as_secs_f64() / local_load.as_secs_f64(),
            s3_upsert / local_upsert,
            s3_search / local_search
        );
        let _ = std::fs::remove_file(&file);
    }
    Ok(())
}

/// One side of [`vectors_on_s3`]: the load's time, the upsert and search p50 in
/// ms (each alone, a search after a warm-up), and the vector rows.
async fn vector_side(
    dir: &Path,
    setup: EngineInit,
    file: &Path,
    questions: &[String],
) -> Result<(Duration, f64, f64, usize)> {
    let engine = Engine::init(dir, setup).await?;
    let start = Instant::now();
    engine.load(&[file], None, &NoProgress).await?;
    let load = start.elapsed();
    let rows = engine.store().vectors().len().await?;
    let vectors = engine.store().vectors();
    let mut upserts = Vec::new();
    let mut searches = Vec::new();
    for (i, question) in questions.iter().enumerate() {
        let query = engine.store().embed(question)?;
        let row = VectorRow {
            iri: format!("urn:kgfuse-bench:upsert/{i}"),
            kind: "Note".into(),
            text: question.clone(),
            hash: format!("{i}"),
            graph: "urn:kgfuse-bench:upserts".into(),
            vector: query.clone(),
        };
        let start = Instant::now();
        vectors.upsert(std::slice::from_ref(&row)).await?;
        upserts.push(start.elapsed());
        vectors.search(&query, 10, kgfuse::KindFilter::Any).await?; // warm-up
        let start = Instant::now();
        vectors.search(&query, 10, kgfuse::KindFilter::Any).await?;
        searches.push(start.elapsed());
    }
    upserts.sort();
    searches.sort();
    Ok((
        load,
        percentile_ms(&upserts, 0.5),
        percentile_ms(&searches, 0.5),
        rows,
    ))
}
