//! Code-ingestion benchmark: one source tree (CPython's standard library by default)
//! ingested into fresh stores with three configurations, each in its own child
//! process so peak memory is measured per configuration:
//!
//! - **G** graph only: no text predicates, so nothing is embedded;
//! - **H** the hash embedder;
//! - **S** the static embedder distilled from MiniLM (distilled before the clock
//!   starts when not there yet);
//! - **M** MiniLM (S and M are skipped when the model is not installed).
//!
//! Reports seconds, functions/s, triples/s, peak RSS, the ratios to G, the rows
//! per second of the time beyond G (embedding and writing the rows), and the
//! embedder's own rate: after the ingest, the child embeds the texts of every row
//! again, alone, in the store's batches, and times only that.

use anyhow::{Context, Result, bail};
use kgfuse::{Engine, EngineInit, IngestCodeOptions, NoProgress, StoreConfig};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One configuration's measurements, as printed by the child on its last line.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Measurement {
    config: String,
    seconds: f64,
    files: usize,
    functions: usize,
    triples: usize,
    vector_rows: usize,
    peak_rss_mib: f64,
    /// Rows per second of the embedder alone on the rows' texts (none for G).
    embedder_rows_per_second: Option<f64>,
}

/// Bytes of the files under `dir`, in MiB (0 where unreadable).
pub(crate) fn disk_mib(dir: &Path) -> f64 {
    fn bytes(dir: &Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_dir() => bytes(&entry.path()),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            })
            .sum()
    }
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes(dir) as f64 / (1024.0 * 1024.0);
    mib
}

/// Runs one configuration in this process (the child side).
pub async fn run_one(config: &str, path: &Path, scratch: &Path) -> Result<()> {
    let dir = scratch.join(format!("ingest-{config}"));
    let _ = std::fs::remove_dir_all(&dir);
    let init = match config {
        "G" => {
            let mut c = StoreConfig::new(kgfuse::EmbedderKind::Hash, 64);
            c.text_predicates.clear();
            EngineInit::from_config(c)
        }
        "H" => EngineInit::hash(384),
        "S" => EngineInit::distilled(None),
        "M" => EngineInit::minilm(None),
        other => bail!("unknown configuration {other}"),
    };
    let engine = Engine::init(&dir, init).await?;
    let start = Instant::now();
    let report = engine
        .ingest_code(path, &IngestCodeOptions::default(), &NoProgress)
        .await?;
    let seconds = start.elapsed().as_secs_f64();
    let stats = engine.stats().await?;
    let peak_rss_mib = kgfuse::memory::peak_resident_mib();
    let embedder_rows_per_second = if config == "G" {
        None
    } else {
        Some(embedder_rate(&engine).await?)
    };
    let measurement = Measurement {
        config: config.to_owned(),
        seconds,
        files: report.files,
        functions: report.code.as_ref().map_or(0, |c| c.functions),
        triples: report.triples,
        vector_rows: stats.vector_rows,
        peak_rss_mib,
        embedder_rows_per_second,
    };
    println!("{}", serde_json::to_string(&measurement)?);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Rows per second of the store's embedder alone: the texts of every row
/// embedded again in the store's batches (the ingest's own order and batch size).
async fn embedder_rate(engine: &Engine) -> Result<f64> {
    let store = engine.store();
    let texts = store.vectors().texts().await?;
    let start = Instant::now();
    let vectors = kgfuse::vectors::embed_in_batches(
        store.embedder(),
        &texts,
        store.config().embedder.batch_size,
        &NoProgress,
    )?;
    std::hint::black_box(&vectors);
    Ok(texts.len() as f64 / start.elapsed().as_secs_f64())
}

/// Runs every configuration in a child process and prints the table.
pub fn run_all(path: &Path, scratch: &Path) -> Result<()> {
    let exe = std::env::current_exe()?;
    let mut configs = vec!["G", "H"];
    if kgfuse_minilm_installed() {
        configs.extend(["S", "M"]);
    } else {
        println!("(MiniLM not installed: `make models` to include configurations S and M)");
    }
    println!("\n### Code ingestion of {}\n", path.display());
    println!(
        "| config | files | functions | triples | vector rows | seconds | functions/s | triples/s | peak RSS MiB | time / G | rows/s beyond G | embedder alone, rows/s | embedder / MiniLM's |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut baseline = None;
    let mut measurements = Vec::new();
    for config in configs {
        let output = std::process::Command::new(&exe)
            .arg("ingest")
            .arg(path)
            .arg("--one")
            .arg(config)
            .arg("--scratch")
            .arg(scratch)
            .output()
            .context("running the ingest child")?;
        if !output.status.success() {
            bail!(
                "configuration {config} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let m: Measurement = serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .context("reading the child's measurement")?;
        eprintln!("configuration {}: {:.1} s", m.config, m.seconds);
        measurements.push(m);
    }
    // MiniLM runs last, and every row shows its embedder's rate against MiniLM's,
    // so the table is printed once every configuration has run.
    let minilm_rate = measurements
        .iter()
        .find(|m| m.config == "M")
        .and_then(|m| m.embedder_rows_per_second);
    for m in &measurements {
        let base = *baseline.get_or_insert(m.seconds);
        let beyond = m.seconds - base;
        let rows_per_second = if m.config == "G" || beyond <= 0.0 {
            "-".to_owned()
        } else {
            format!("{:.0}", m.vector_rows as f64 / beyond)
        };
        let (alone, against_minilm) = match (m.embedder_rows_per_second, minilm_rate) {
            (Some(rate), Some(minilm)) => (format!("{rate:.0}"), format!("{:.1}x", rate / minilm)),
            (Some(rate), None) => (format!("{rate:.0}"), "-".to_owned()),
            (None, _) => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.0} | {:.0} | {:.2}x | {rows_per_second} | {alone} | {against_minilm} |",
            m.config,
            m.files,
            m.functions,
            m.triples,
            m.vector_rows,
            m.seconds,
            m.functions as f64 / m.seconds,
            m.triples as f64 / m.seconds,
            m.peak_rss_mib,
            m.seconds / base
        );
    }
    Ok(())
}

fn kgfuse_minilm_installed() -> bool {
    let dir: PathBuf = std::env::var_os("KGFUSE_MINILM_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/kgfuse/models/all-MiniLM-L6-v2"))
        })
        .unwrap_or_default();
    dir.join("model.safetensors").exists()
}
