//! `kgfuse dump`: every quad to stdout, as N-Quads or TriG.

use super::Ctx;
use crate::cli::{DumpArgs, DumpFormat};
use anyhow::Result;
use std::io::Write;
use std::process::ExitCode;

pub(crate) async fn run(args: DumpArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let format = match args.format {
        DumpFormat::Nq => kgfuse::RdfFormat::NQuads,
        DumpFormat::Trig => kgfuse::RdfFormat::TriG,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    engine.dump(&mut out, format)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
