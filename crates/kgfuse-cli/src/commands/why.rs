//! `kgfuse why`: the graphs asserting a triple, or the RDFS rule and premises
//! each derivation of an inferred one comes from.

use super::sparql::parse_triple;
use super::{Ctx, print_json};
use crate::cli::WhyArgs;
use crate::render;
use anyhow::Result;
use std::process::ExitCode;

pub(crate) async fn run(args: WhyArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let prefixes = engine.query_options().prefixes;
    let parts: [String; 3] = args
        .triple
        .try_into()
        .map_err(|_| anyhow::anyhow!("why takes SUBJECT PREDICATE OBJECT"))?;
    let triple = parse_triple(&parts, &prefixes)?;
    let provenance = engine.store().why(&triple)?;
    if args.output.is_json() {
        print_json(&provenance)?;
    } else {
        print!("{}", render::provenance(&provenance));
    }
    if provenance.asserted_in.is_empty() && !provenance.inferred {
        eprintln!("error: the store does not hold {}", provenance.triple);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
