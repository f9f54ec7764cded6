//! `kgfuse ask`: a grounded answer with citations, or "insufficient context".

use super::{Ctx, language_model, print_json};
use crate::cli::AskArgs;
use crate::render;
use anyhow::{Result, bail};
use std::process::ExitCode;

pub(crate) async fn run(args: AskArgs, ctx: &Ctx) -> Result<ExitCode> {
    if args.top_k == 0 || args.max_attempts == 0 {
        bail!("--top-k and --max-attempts must be at least 1");
    }
    let engine = ctx.open().await?.with_model(language_model(args.offline)?);
    let options = kgfuse::AskOptions {
        retrieve: kgfuse::RetrieveOptions {
            strategy: args.strategy.strategy(),
            top_k: args.top_k,
            ..kgfuse::RetrieveOptions::default()
        },
        min_relevance: args.min_relevance,
        max_retrieval_attempts: args.max_attempts,
        ..kgfuse::AskOptions::default()
    };
    let answer = engine.ask(&args.question, &options).await;
    if args.output.is_json() {
        print_json(&answer)?;
    } else {
        render::print_answer(&answer);
    }
    if answer.status == kgfuse::AnswerStatus::Failure {
        for error in &answer.errors {
            eprintln!("error: {error}");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
