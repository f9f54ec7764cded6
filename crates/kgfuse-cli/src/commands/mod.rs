//! One module per command, each with `run(args, ctx) -> Result<ExitCode>`: it
//! opens the store, does the work through the `kgfuse` facade and prints the
//! result (stdout) or what went wrong (stderr).

mod ask;
mod check;
mod dump;
mod eval;
mod index;
mod ingest;
mod init;
mod load;
mod retrieve;
mod serve;
mod serve_file;
mod sparql;
mod stats;
mod token;
mod validate;
mod why;

pub(crate) use sparql::{parse_binding, write_outcome};

use crate::cli::{Cli, Command, IndexCommand, IngestCommand};
use crate::progress::TerminalProgress;
use anyhow::Result;
use kgfuse::Engine;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// What every command shares: the data directory and the progress display.
pub(crate) struct Ctx {
    /// The store's data directory (`--data`).
    pub(crate) data: PathBuf,
    /// Progress bars on stderr when it is a terminal.
    pub(crate) progress: TerminalProgress,
}

impl Ctx {
    /// Opens the store, showing progress while a large one opens.
    pub(crate) async fn open(&self) -> Result<Engine> {
        Ok(Engine::open_with_progress(&self.data, &self.progress).await?)
    }
}

/// Runs the command the command line names.
pub(crate) async fn run(cli: Cli) -> Result<ExitCode> {
    let ctx = Ctx {
        data: cli.data,
        progress: TerminalProgress::new(),
    };
    match cli.command {
        Command::Init(args) => init::run(args, &ctx).await,
        Command::Load(args) => load::run(args, &ctx).await,
        Command::Sparql(args) => sparql::run(args, &ctx).await,
        Command::Console => {
            crate::console::run(&ctx.open().await?, &ctx.data).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => check::run(args, &ctx).await,
        Command::Stats(args) => stats::run(args, &ctx).await,
        Command::Validate(args) => validate::run(args, &ctx).await,
        Command::Why(args) => why::run(args, &ctx).await,
        Command::Dump(args) => dump::run(args, &ctx).await,
        Command::Ingest(IngestCommand::Code(args)) => ingest::code(args, &ctx).await,
        Command::Ingest(IngestCommand::Docs(args)) => ingest::docs(args, &ctx).await,
        Command::Retrieve(args) => retrieve::run(args, &ctx).await,
        Command::Ask(args) => ask::run(args, &ctx).await,
        Command::Mcp(args) => serve::mcp(args, &ctx).await,
        Command::Serve(args) => serve::http(args, &ctx).await,
        // The token file only: no data directory is opened.
        Command::Token(args) => token::run(args),
        Command::Index(IndexCommand::Cases(args)) => index::cases(args, &ctx).await,
        Command::Index(IndexCommand::Vectors(args)) => index::vectors(args, &ctx).await,
        Command::Eval(args) => eval::run(args, &ctx).await,
        Command::Demo(args) => {
            crate::demo::run(&ctx.data, &args.ontology, &args.fixtures).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The OpenAI-compatible model configured by `KGFUSE_LLM_*`, else the offline one.
fn language_model(offline: bool) -> Result<Arc<dyn kgfuse::LanguageModel>> {
    if !offline && let Some(config) = kgfuse::OpenAiChatConfig::from_env() {
        let model = kgfuse::OpenAiChat::new(config)?;
        tracing::info!("language model: {}", kgfuse::LanguageModel::name(&model));
        return Ok(Arc::new(model));
    }
    Ok(Arc::new(kgfuse::RuleBased::default()))
}

/// The expander `--expand` asks for: the configured LLM, which must be there.
fn expander(expand: bool) -> Result<Option<kgfuse::Expander>> {
    if !expand {
        return Ok(None);
    }
    match kgfuse::OpenAiChatConfig::from_env() {
        Some(config) => Ok(Some(kgfuse::Expander(Arc::new(kgfuse::OpenAiChat::new(
            config,
        )?)))),
        None => anyhow::bail!(
            "--expand asks a language model: set KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL (`make llm-serve` prints them)"
        ),
    }
}

/// Prints `value` as pretty JSON on stdout.
fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
