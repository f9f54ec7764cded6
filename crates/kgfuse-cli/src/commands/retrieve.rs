//! `kgfuse retrieve`: a question's FusedContext by the chosen strategy.

use super::{Ctx, expander, language_model, print_json};
use crate::cli::RetrieveArgs;
use crate::render;
use anyhow::{Result, bail};
use std::process::ExitCode;

pub(crate) async fn run(args: RetrieveArgs, ctx: &Ctx) -> Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.alpha) {
        bail!("--alpha must be between 0 and 1, not {}", args.alpha);
    }
    let engine = ctx.open().await?.with_model(language_model(args.offline)?);
    let options = kgfuse::RetrieveOptions {
        strategy: args.strategy.strategy(),
        top_k: args.top_k,
        paths: kgfuse::PathLimits {
            max_depth: args.max_depth,
            max_paths: args.max_paths,
        },
        neighborhood: kgfuse::NeighborhoodOptions {
            max_distance: args.max_distance,
            alpha: args.alpha,
            ..kgfuse::NeighborhoodOptions::default()
        },
        domain: kgfuse::DomainOptions {
            max_packages: args.max_packages,
            gate_margin: args.gate_margin,
            ..kgfuse::DomainOptions::default()
        },
        exclude: args.exclude.into_iter().collect(),
        expand_with: expander(args.expand)?,
        model_query: args.model_query,
    };
    let context = engine.retrieve(&args.question, &options).await?;
    if args.output.is_json() {
        print_json(&context)?;
    } else {
        render::print_context(&context);
    }
    Ok(ExitCode::SUCCESS)
}
