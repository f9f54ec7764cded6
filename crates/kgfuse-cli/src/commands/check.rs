//! `kgfuse check`: does every text-bearing node have exactly one current vector
//! row, and every row its node? Does the lexicon's index hold what the graph
//! names, and `paths`' data-flow graph what the graph links? `--repair`
//! rewrites the vector side, the lexicon's index and the data-flow graph first.

use super::{Ctx, print_json};
use crate::cli::CheckArgs;
use anyhow::Result;
use std::process::ExitCode;

pub(crate) async fn run(args: CheckArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    if args.repair {
        let report = engine.repair(&ctx.progress).await?;
        eprintln!("repair: {report}");
    }
    let report = engine.check().await?;
    if args.output.is_json() {
        print_json(&report)?;
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
        for problem in [
            &report.ontology_problem,
            &report.lexicon_problem,
            &report.data_flow_problem,
            &report.packages_problem,
        ]
        .into_iter()
        .flatten()
        {
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
             side, restores the kgfuse vocabulary, brings the lexicon's index in step and writes the \
             data-flow graph and the packages anew"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
