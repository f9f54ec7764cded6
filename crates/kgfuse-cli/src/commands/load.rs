//! `kgfuse load`: RDF files into the store, one graph per file, atomically.

use super::Ctx;
use crate::cli::LoadArgs;
use crate::render;
use anyhow::Result;
use kgfuse::{Engine, RdfSource};
use std::process::ExitCode;

pub(crate) async fn run(args: LoadArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let format = args
        .format
        .map(|f| kgfuse::format_from_name(&f).map_err(|e| anyhow::anyhow!(e)))
        .transpose()?;
    let sources: Vec<RdfSource> = args
        .files
        .iter()
        .map(|path| RdfSource {
            path: path.clone(),
            format,
        })
        .collect();
    if (args.validate || !args.shapes.is_empty())
        && !conforms(&engine, &sources, args.graph.as_deref(), &args.shapes)?
    {
        return Ok(ExitCode::FAILURE);
    }
    let summary = engine
        .load_sources(&sources, args.graph.as_deref(), &ctx.progress)
        .await?;
    for file in &summary.files {
        println!(
            "{:<9} {} ({} quads) -> <{}>",
            file.action,
            file.path.display(),
            file.quads,
            file.graph
        );
    }
    println!("{} quads written; {}", summary.quads, summary.vectors);
    Ok(ExitCode::SUCCESS)
}

/// Checks every file against kgfuse's shapes and `shapes` before anything is
/// written; prints each result and, when a file violates them, why nothing was
/// loaded.
fn conforms(
    engine: &Engine,
    sources: &[RdfSource],
    graph: Option<&str>,
    shapes: &[std::path::PathBuf],
) -> Result<bool> {
    let shapes = Engine::read_shapes(shapes, true)?;
    let checked = engine.validate_sources(sources, graph, &shapes)?;
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
    }
    Ok(refused == 0)
}
