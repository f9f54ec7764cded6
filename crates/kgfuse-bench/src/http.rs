//! `kgfuse-bench http`: what serving over HTTP costs. On the LUBM-1 store (with `ub:name`
//! embedded, so retrieval has text to find), the same work is timed in-process and
//! through `kgfuse serve`'s router on a loopback port, in one run:
//!
//! 1. the 14 LUBM queries: `Engine::sparql_read_only` vs `GET /sparql` with
//!    SPARQL JSON results (the HTTP side includes serialising and parsing the
//!    JSON, as a client pays it);
//! 2. flat retrieval: `Engine::retrieve` vs `POST /retrieve`;
//! 3. throughput of a short query from 1, 4 and 16 clients at once, in-process
//!    (threads calling the engine) vs HTTP (threads with their own connections).

use crate::{extract, lubm_embedded, median, ms};
use anyhow::{Context, Result, bail};
use kgfuse::math::percentile;
use kgfuse::{Engine, NoProgress, ReadOnlyOptions, RetrieveOptions, Strategy};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Timed runs per measurement (after one warm-up).
const RUNS: usize = 9;
/// How long each throughput level runs.
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(5);

/// Questions for the retrieval comparison (LUBM names are "University0",
/// "Department3", "GraduateCourse12"...).
const QUESTIONS: [&str; 4] = [
    "University0",
    "Department 3 of University0",
    "graduate course 12",
    "assistant professor 4",
];

/// The two sides measured: the engine in-process and `kgfuse serve`'s router.
struct Sides {
    engine: Engine,
    /// The server's read-only limits, applied in-process too.
    limits: ReadOnlyOptions,
    agent: ureq::Agent,
    /// `http://127.0.0.1:PORT`.
    base: String,
}

pub async fn run(lubm: &Path, queries: &[(String, String)], scratch: &Path) -> Result<()> {
    let archive = lubm.join("lubm1.tar.gz");
    if !archive.exists() {
        bail!("{} not found", archive.display());
    }
    let files = extract(&archive, &scratch.join("data"))?;
    let engine = Engine::init(scratch.join("store"), lubm_embedded()).await?;
    let loaded = engine.load(&files, None, &NoProgress).await?;
    let server_config = kgfuse_http::ServerConfig {
        bind: "127.0.0.1:0".parse()?,
        max_rows: 1_000_000,
        ..kgfuse_http::ServerConfig::default()
    };
    let limits = ReadOnlyOptions {
        timeout: server_config.query_timeout,
        max_rows: server_config.max_rows,
        ..ReadOnlyOptions::default()
    };
    let server = kgfuse_http::Server::bind(
        vec![kgfuse_http::ServedStore::new("default", engine.clone())],
        server_config,
    )
    .await?;
    let base = format!("http://{}", server.local_addr()?);
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    println!(
        "\n## Serving over HTTP: LUBM-1 ({} triples, {} vector rows), one process, loopback\n",
        loaded.quads, loaded.vectors.added
    );
    let sides = Sides {
        engine,
        limits,
        agent: agent(),
        base,
    };
    compare_queries(&sides, queries).await?;
    compare_retrieval(&sides).await?;
    compare_throughput(&sides, queries).await?;
    let _ = stop_server.send(());
    serving.await??;
    Ok(())
}

/// 1. The LUBM queries, in-process and as `GET /sparql`.
async fn compare_queries(sides: &Sides, queries: &[(String, String)]) -> Result<()> {
    println!("### LUBM queries: in-process vs GET /sparql (JSON), median of {RUNS} runs\n");
    println!("| query | rows | in-process ms | HTTP ms | HTTP / in-process |");
    println!("|---|---:|---:|---:|---:|");
    let (mut sum_local, mut sum_http) = (0.0, 0.0);
    for (name, query) in queries {
        let (engine_c, limits_c, query_c) =
            (sides.engine.clone(), sides.limits.clone(), query.clone());
        let (local, rows) = tokio::task::spawn_blocking(move || {
            timed(|| {
                let outcome = engine_c.sparql_read_only(&query_c, &limits_c)?;
                Ok(match outcome.outcome {
                    kgfuse::QueryOutcome::Solutions { rows, .. } => rows.len(),
                    kgfuse::QueryOutcome::Boolean(_) => 1,
                    kgfuse::QueryOutcome::Graph(triples) => triples.len(),
                })
            })
        })
        .await??;
        let (agent_c, base_c, query_c) = (sides.agent.clone(), sides.base.clone(), query.clone());
        let (http, http_rows) =
            tokio::task::spawn_blocking(move || timed(|| http_query(&agent_c, &base_c, &query_c)))
                .await??;
        if rows != http_rows {
            bail!("{name}: {rows} rows in-process but {http_rows} over HTTP");
        }
        println!(
            "| {name} | {rows} | {:.2} | {:.2} | {:.2}x |",
            ms(local),
            ms(http),
            ms(http) / ms(local)
        );
        sum_local += ms(local);
        sum_http += ms(http);
    }
    println!(
        "| **all** | | {sum_local:.2} | {sum_http:.2} | {:.2}x |",
        sum_http / sum_local
    );
    Ok(())
}

/// 2. Flat retrieval, `Engine::retrieve` and `POST /retrieve`.
async fn compare_retrieval(sides: &Sides) -> Result<()> {
    println!(
        "\n### Flat retrieval (top 8): Engine::retrieve vs POST /retrieve, median of {RUNS} runs\n"
    );
    println!("| question | in-process ms | HTTP ms | HTTP / in-process |");
    println!("|---|---:|---:|---:|");
    let options = RetrieveOptions {
        strategy: Strategy::Flat,
        top_k: 8,
        ..RetrieveOptions::default()
    };
    for question in QUESTIONS {
        let mut local = Vec::with_capacity(RUNS);
        for run in 0..=RUNS {
            let start = Instant::now();
            sides.engine.retrieve(question, &options).await?;
            if run > 0 {
                local.push(start.elapsed());
            }
        }
        let local = median(local);
        let (agent_c, base_c) = (sides.agent.clone(), sides.base.clone());
        let (http, _) = tokio::task::spawn_blocking(move || {
            timed(|| http_retrieve(&agent_c, &base_c, question))
        })
        .await??;
        println!(
            "| {question} | {:.2} | {:.2} | {:.2}x |",
            ms(local),
            ms(http),
            ms(http) / ms(local)
        );
    }
    Ok(())
}

/// 3. Throughput of LUBM Q1 from 1, 4 and 16 clients at once.
async fn compare_throughput(sides: &Sides, queries: &[(String, String)]) -> Result<()> {
    let short = queries
        .iter()
        .find(|(name, _)| name == "Q1")
        .map(|(_, q)| q.clone())
        .context("Q1")?;
    println!(
        "\n### Throughput of LUBM Q1, {} s per level (requests/s; latency p50 / p95 ms)\n",
        THROUGHPUT_WINDOW.as_secs()
    );
    println!(
        "| clients | in-process req/s | HTTP req/s | HTTP / in-process | HTTP p50 | HTTP p95 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for clients in [1, 4, 16] {
        let (engine_c, limits_c, query_c) =
            (sides.engine.clone(), sides.limits.clone(), short.clone());
        let (local_rate, _) = tokio::task::spawn_blocking(move || {
            load(clients, move || {
                engine_c.sparql_read_only(&query_c, &limits_c)?;
                Ok(())
            })
        })
        .await??;
        let (agent_c, base_c, query_c) = (sides.agent.clone(), sides.base.clone(), short.clone());
        let (http_rate, latencies) = tokio::task::spawn_blocking(move || {
            load(clients, move || {
                http_query(&agent_c, &base_c, &query_c).map(|_| ())
            })
        })
        .await??;
        println!(
            "| {clients} | {local_rate:.0} | {http_rate:.0} | {:.2}x | {:.2} | {:.2} |",
            http_rate / local_rate,
            ms(percentile(&latencies, 0.5).unwrap_or_default()),
            ms(percentile(&latencies, 0.95).unwrap_or_default())
        );
    }
    Ok(())
}

/// One ureq agent (connection pool) for sequential requests.
fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(120)))
            .build(),
    )
}

/// Median time of `RUNS` calls after a warm-up; the warm-up's result.
fn timed(mut call: impl FnMut() -> Result<usize>) -> Result<(Duration, usize)> {
    let result = call()?;
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        call()?;
        samples.push(start.elapsed());
    }
    Ok((median(samples), result))
}

/// `GET /sparql` with JSON results, parsed; the number of rows (or triples).
fn http_query(agent: &ureq::Agent, base: &str, query: &str) -> Result<usize> {
    let mut response = agent
        .get(format!("{base}/sparql"))
        .query("query", query)
        .header(
            "Accept",
            "application/sparql-results+json, application/n-triples;q=0.9",
        )
        .call()?;
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_string()?;
    if body.starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(&body)?;
        Ok(json["results"]["bindings"].as_array().map_or(1, Vec::len))
    } else {
        Ok(body.lines().count())
    }
}

/// `POST /retrieve` flat top 8, parsed; the number of text hits.
fn http_retrieve(agent: &ureq::Agent, base: &str, question: &str) -> Result<usize> {
    let mut response = agent
        .post(format!("{base}/retrieve"))
        .send_json(serde_json::json!({"question": question, "strategy": "flat", "top_k": 8}))?;
    let json: serde_json::Value = response.body_mut().read_json()?;
    Ok(json["unstructured"].as_array().map_or(0, Vec::len))
}

/// Runs `call` from `clients` threads for [`THROUGHPUT_WINDOW`]: calls per second
/// and every call's latency.
fn load(
    clients: usize,
    call: impl Fn() -> Result<()> + Send + Sync + 'static,
) -> Result<(f64, Vec<Duration>)> {
    let call = Arc::new(call);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (call, stop, done) = (Arc::clone(&call), Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || -> Result<Vec<Duration>> {
                let mut latencies = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    call()?;
                    latencies.push(start.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(latencies)
            })
        })
        .collect();
    std::thread::sleep(THROUGHPUT_WINDOW);
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for thread in threads {
        let joined = thread
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        latencies.extend(joined?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    Ok((done.load(Ordering::Relaxed) as f64 / elapsed, latencies))
}
