//! `kgfuse validate`: the store against kgfuse's SHACL shapes and the user's.

use super::{Ctx, print_json};
use crate::cli::ValidateArgs;
use crate::render;
use anyhow::Result;
use kgfuse::Engine;
use std::process::ExitCode;

pub(crate) async fn run(args: ValidateArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let shapes = Engine::read_shapes(&args.shapes, !args.no_core_shapes)?;
    let report = engine.validate(&shapes)?;
    if args.output.is_json() {
        print_json(&report)?;
    } else {
        let prefixes = engine.query_options().prefixes;
        for result in &report.results {
            println!("{}", render::validation_result(result, &prefixes));
        }
        let violations = report.violations().count();
        println!(
            "validate {}: {violations} violation(s), {} other result(s) against {}",
            if report.has_violations() {
                "FAILED"
            } else {
                "ok"
            },
            report.results.len() - violations,
            shapes.sources().join(", ")
        );
    }
    Ok(if report.has_violations() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
