//! `kgfuse index cases` (DomAgent's case base) and `kgfuse index vectors` (the
//! approximate nearest-neighbour index).

use super::{Ctx, print_json};
use crate::cli::{IndexCasesArgs, IndexVectorsArgs};
use anyhow::{Result, bail};
use std::process::ExitCode;

pub(crate) async fn cases(args: IndexCasesArgs, ctx: &Ctx) -> Result<ExitCode> {
    for (flag, value) in [
        ("--package-coverage", args.package_coverage),
        ("--cluster-coverage", args.cluster_coverage),
    ] {
        if !(0.0..=1.0).contains(&value) {
            bail!("{flag} must be between 0 and 1, not {value}");
        }
    }
    if args.max_clusters == 0 {
        bail!("--max-clusters must be at least 1");
    }
    let engine = ctx.open().await?;
    let options = kgfuse::CaseBaseOptions {
        package_coverage: args.package_coverage,
        cluster_coverage: args.cluster_coverage,
        max_clusters: args.max_clusters,
    };
    let report = engine.build_case_base(options, &ctx.progress).await?;
    if args.output.is_json() {
        print_json(&report)?;
    } else {
        println!(
            "case base: {} packages, {} functions, {} clusters; {} of {} cases selected; \
             coverage {:.1}% of packages, {:.1}% of clusters",
            report.packages,
            report.functions,
            report.clusters,
            report.selected,
            report.cases,
            report.package_coverage * 100.0,
            report.cluster_coverage * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn vectors(args: IndexVectorsArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let started = std::time::Instant::now();
    let status = engine.build_vector_index(&ctx.progress).await?;
    if args.output.is_json() {
        print_json(&status)?;
    } else {
        println!(
            "vector index: {} over {} rows, built in {:.1} s",
            status.index_type,
            status.indexed_rows,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
