//! `kgfuse stats`: triples, graphs, vector rows, the embedder, the vector index,
//! the file graphs' fingerprints and the nodes of each class.

use super::{Ctx, print_json};
use crate::cli::StatsArgs;
use anyhow::Result;
use std::process::ExitCode;

pub(crate) async fn run(args: StatsArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let stats = engine.stats().await?;
    if args.output.is_json() {
        print_json(&stats)?;
        return Ok(ExitCode::SUCCESS);
    }
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
    if !stats.fingerprints.is_empty() {
        println!("{}", fingerprint_line(&stats.fingerprints));
    }
    if !stats.nodes_by_class.is_empty() {
        println!("nodes by class:");
        for (class, n) in &stats.nodes_by_class {
            println!("  {n:>8}  {}", kgfuse::iri::compact(class, &prefixes));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many file graphs record a canonical fingerprint (RDFC-1.0), and how many
/// the byte hash.
fn fingerprint_line(fingerprints: &[kgfuse::FileFingerprint]) -> String {
    let canonical = fingerprints
        .iter()
        .filter(|f| kgfuse::fingerprint::is_canonical(&f.fingerprint))
        .count();
    format!(
        "fingerprints {canonical} RDFC-1.0, {} byte hash (graphs of loaded files)",
        fingerprints.len() - canonical
    )
}
