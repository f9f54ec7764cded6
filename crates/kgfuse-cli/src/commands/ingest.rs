//! `kgfuse ingest code` and `kgfuse ingest docs`: sources into the graph.

use super::{Ctx, print_json};
use crate::cli::{IngestCodeArgs, IngestDocsArgs, LangChoice, Output};
use crate::render;
use anyhow::{Result, bail};
use std::process::ExitCode;

pub(crate) async fn code(args: IngestCodeArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let options = kgfuse::IngestCodeOptions {
        languages: match args.lang {
            LangChoice::Auto => Vec::new(),
            LangChoice::Python => vec![kgfuse::CodeLanguage::Python],
            LangChoice::Rust => vec![kgfuse::CodeLanguage::Rust],
        },
        package: args.package,
        max_file_bytes: mib_to_bytes(args.max_file_size)?,
        knowledge_file: args.knowledge,
    };
    let report = engine
        .ingest_code(&args.path, &options, &ctx.progress)
        .await?;
    report_ingest(&report, args.output)
}

pub(crate) async fn docs(args: IngestDocsArgs, ctx: &Ctx) -> Result<ExitCode> {
    if args.max_chunk_chars < 100 {
        bail!("--max-chunk-chars must be at least 100");
    }
    let engine = ctx.open().await?;
    let options = kgfuse::DocsOptions {
        max_chunk_chars: args.max_chunk_chars,
        max_file_bytes: mib_to_bytes(args.max_file_size)?,
        ..kgfuse::DocsOptions::default()
    };
    let report = engine
        .ingest_docs(&args.path, &options, &ctx.progress)
        .await?;
    report_ingest(&report, args.output)
}

fn report_ingest(report: &kgfuse::IngestReport, output: Output) -> Result<ExitCode> {
    if output.is_json() {
        print_json(report)?;
    } else {
        render::print_ingest_report(report);
    }
    Ok(ExitCode::SUCCESS)
}

fn mib_to_bytes(mib: f64) -> Result<u64> {
    if !(mib.is_finite() && mib > 0.0) {
        bail!("--max-file-size must be a positive number of MiB, not {mib}");
    }
    // Truncation is intended: sizes are whole bytes.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((mib * 1_048_576.0) as u64)
}
