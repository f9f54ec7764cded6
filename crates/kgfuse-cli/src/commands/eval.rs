//! `kgfuse eval`: a question set through the asked strategies, side by side;
//! `kgfuse eval make-loo` writes a leave-one-out set from the store.

use super::{Ctx, print_json};
use crate::cli::{EvalArgs, EvalMake, MakeLooArgs};
use anyhow::{Context, Result, bail};
use kgfuse::{Engine, Strategy};
use std::path::PathBuf;
use std::process::ExitCode;

/// The strategies an eval compares when none is named.
const EVERY_STRATEGY: [Strategy; 8] = [
    Strategy::Bm25,
    Strategy::Flat,
    Strategy::Hybrid,
    Strategy::Unified,
    Strategy::Domain,
    Strategy::Paths,
    Strategy::Neighborhood,
    Strategy::Auto,
];

pub(crate) async fn run(args: EvalArgs, ctx: &Ctx) -> Result<ExitCode> {
    if let Some(EvalMake::MakeLoo(make)) = args.make {
        make_loo(&ctx.open().await?, make)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(file) = args.file.clone() else {
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
    // The flags and the question set are checked before the store opens (a
    // large store takes a while to open).
    let items = kgfuse_eval::read_items(&file)?;
    let expand_with = super::expander(args.expand)?;
    let engine = ctx.open().await?;
    let strategies: Vec<Strategy> = if args.strategies.is_empty() {
        EVERY_STRATEGY.to_vec()
    } else {
        args.strategies.iter().map(|s| s.strategy()).collect()
    };
    let total = items.len();
    let report = kgfuse_eval::evaluate(
        &engine,
        &items,
        &strategies,
        args.k,
        &kgfuse::RetrieveOptions {
            expand_with,
            ..kgfuse::RetrieveOptions::default()
        },
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
    if args.output.is_json() {
        print_json(&report)?;
    } else {
        print!("{}", kgfuse_eval::table(&report, &strategies));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the leave-one-out set of one package's cases (stdout or `--out`).
fn make_loo(engine: &Engine, args: MakeLooArgs) -> Result<()> {
    let tests = args.tests.as_deref().map(canonical).transpose()?;
    let items = kgfuse_eval::make_leave_one_out(
        engine,
        &kgfuse_eval::LooOptions {
            package: args.package.clone(),
            tests,
            max_query_chars: 300,
        },
    )?;
    if items.is_empty() {
        bail!(
            "no case exercises a function of package {} (are the package and its tests ingested?)",
            args.package
        );
    }
    let mut text = String::new();
    for item in &items {
        text.push_str(&serde_json::to_string(item)?);
        text.push('\n');
    }
    match args.out {
        Some(path) => {
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
            eprintln!("{} questions written to {}", items.len(), path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn canonical(dir: &std::path::Path) -> Result<String> {
    let path: PathBuf = std::fs::canonicalize(dir).with_context(|| dir.display().to_string())?;
    Ok(path.display().to_string())
}
