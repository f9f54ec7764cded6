//! kgfuse next to the Python peer of `bench/peer/` (pyoxigraph + lancedb + the same
//! MiniLM): the same Turtle files, the same questions, the same model; ratios are
//! kgfuse / peer, so below 1 means kgfuse is faster. The peer runs first (in the
//! same `make bench` invocation) and leaves its result JSON; this side reads the
//! file list from it, loads the files into a fresh MiniLM store and times `flat` and
//! `unified` the way the peer does (one warm-up pass, then one timed pass).

use crate::retrieval::{answer_all, percentile_ms};
use anyhow::{Context, Result, bail};
use kgfuse::{Engine, EngineInit, NoProgress, RetrieveOptions, Strategy};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Prints the kgfuse/peer table.
pub async fn run(peer_result: &Path, questions: &Path, scratch: &Path) -> Result<()> {
    let peer: Value =
        serde_json::from_str(&std::fs::read_to_string(peer_result).with_context(|| {
            format!("{}: run bench/peer/peer.py first", peer_result.display())
        })?)?;
    let questions: Vec<String> = serde_json::from_str(&std::fs::read_to_string(questions)?)?;
    let files: Vec<PathBuf> = peer["files"]
        .as_array()
        .context("peer result without files")?
        .iter()
        .filter_map(Value::as_str)
        .map(PathBuf::from)
        .collect();
    if files.is_empty() || questions.is_empty() {
        bail!("the peer result names no files, or there are no questions");
    }
    let dir = scratch.join("peer-compare");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(scratch)?;
    let engine = Engine::init(&dir, EngineInit::minilm(None)).await?;
    let start = Instant::now();
    let sources: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let summary = engine.load(&sources, None, &NoProgress).await?;
    let ingest = start.elapsed();
    println!(
        "\n### kgfuse vs the Python peer ({} files, {} quads, {} questions, MiniLM)\n",
        files.len(),
        summary.quads,
        questions.len()
    );
    println!("| measure | kgfuse | peer | kgfuse / peer |");
    println!("|---|---|---|---|");
    let peer_ingest = peer["ingest_seconds"]["total"].as_f64().unwrap_or(f64::NAN);
    println!(
        "| ingest (load + embed + write), s | {:.2} | {peer_ingest:.2} | {:.2}x |",
        ingest.as_secs_f64(),
        ingest.as_secs_f64() / peer_ingest
    );
    let flat_p50 = latency_rows(&engine, &questions, &peer).await?;
    let floor = floor_p50(&engine, &questions, 8).await?;
    println!(
        "| flat p50 / floor (embed the question + scan every vector in memory: {floor:.1} ms) | | | {:.2}x |",
        flat_p50 / floor
    );
    println!(
        "\nPeer: {}; load average during its run {}.",
        peer["versions"], peer["load_average_1m"]
    );
    component_table(&engine, &questions).await?;
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The `flat` and `unified` p50 and p95 rows against the peer's (one warm-up
/// pass, then one timed pass, as the peer does); returns `flat`'s p50 in ms.
async fn latency_rows(engine: &Engine, questions: &[String], peer: &Value) -> Result<f64> {
    let mut flat_p50 = f64::NAN;
    for strategy in [Strategy::Flat, Strategy::Unified] {
        let options = RetrieveOptions {
            strategy,
            top_k: 8,
            ..RetrieveOptions::default()
        };
        answer_all(engine, questions, &options).await?; // warm-up
        // Measure the steady state: an edge index the warm-up started is built.
        engine.store().wait_for_background_work();
        let mut times = answer_all(engine, questions, &options).await?;
        times.sort();
        if strategy == Strategy::Flat {
            flat_p50 = percentile_ms(&times, 0.5);
        }
        for (label, p) in [("p50", 0.5), ("p95", 0.95)] {
            let ours = percentile_ms(&times, p);
            let theirs = peer["queries"][strategy.name()][format!("{label}_ms")]
                .as_f64()
                .unwrap_or(f64::NAN);
            println!(
                "| {} {label}, ms | {ours:.1} | {theirs:.1} | {:.2}x |",
                strategy.name(),
                ours / theirs
            );
        }
    }
    Ok(flat_p50)
}

/// One more pass per strategy, split by component (embedding, LanceDB, graph,
/// kgfuse's own code).
async fn component_table(engine: &Engine, questions: &[String]) -> Result<()> {
    println!(
        "\nOne more pass per strategy in the same order, split by component \
         (median ms, calls in brackets; `kgfuse-bench profile` on this store):\n"
    );
    println!("{}", crate::profile::header());
    for strategy in [Strategy::Flat, Strategy::Unified] {
        let options = RetrieveOptions {
            strategy,
            top_k: 8,
            ..RetrieveOptions::default()
        };
        let mut splits = Vec::with_capacity(questions.len());
        for question in questions {
            splits.push(crate::profile::measure(engine, question, &options).await?);
        }
        println!("{}", crate::profile::row(strategy, &splits));
    }
    Ok(())
}

/// The least a `flat` retrieval can cost on this store, measured: embed the
/// question with the store's embedder, then score every vector, already in
/// memory as one contiguous array, and keep the best `k`. Median over the
/// questions, after one warm-up pass, in ms.
async fn floor_p50(engine: &Engine, questions: &[String], k: usize) -> Result<f64> {
    let store = engine.store();
    let iris: Vec<String> = store
        .vectors()
        .keys()
        .await?
        .into_iter()
        .map(|(iri, _)| iri)
        .collect();
    let rows = store.vectors_of(&iris).await?;
    let dimension = store.vectors().dimension();
    let matrix: Vec<f32> = rows.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let mut times = Vec::with_capacity(questions.len());
    for pass in 0..2 {
        for question in questions {
            let start = Instant::now();
            let query = store.embed(question)?;
            let mut scored: Vec<(f32, usize)> = matrix
                .chunks_exact(dimension)
                .map(|row| row.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>())
                .zip(0..)
                .collect();
            let k = k.min(scored.len());
            if k > 0 {
                scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
                scored.truncate(k);
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            }
            std::hint::black_box(&scored);
            if pass == 1 {
                times.push(start.elapsed());
            }
        }
    }
    times.sort();
    Ok(percentile_ms(&times, 0.5))
}
