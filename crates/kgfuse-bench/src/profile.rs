//! `kgfuse-bench profile DIR`: where one retrieval's time goes, per strategy, on an existing
//! store. Each question is asked once to warm up, then measured once (or
//! `--passes N` times); the store's own accounting (`Store::time_spent`) splits
//! each measured retrieval into embedding the question, LanceDB, the graph
//! (Oxigraph or a SPARQL server) and, the rest, kgfuse's own code. Medians over
//! every measurement, with the number of calls into each component, and the
//! whole retrieval's 95th percentile; every strategy, or those `--strategy`
//! names. With an idle time, each measured retrieval comes that long after the
//! one before (a machine back from idle is slower to start:
//! BENCHMARKS.md, "the question's embedding beside linking").

use anyhow::Result;
use kgfuse::{Engine, RetrieveOptions, Strategy};
use std::path::Path;
use std::time::{Duration, Instant};

/// One measured retrieval, split by component.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Split {
    total: Duration,
    embedding: Duration,
    embeddings: u64,
    vectors: Duration,
    vector_calls: u64,
    graph: Duration,
    graph_calls: u64,
}

impl Split {
    /// What the components left: kgfuse's own code.
    fn own(&self) -> Duration {
        self.total
            .saturating_sub(self.embedding + self.vectors + self.graph)
    }
}

/// What `profile` measures: which strategies, how long to idle before each
/// measured retrieval, and how many times each question is measured.
pub struct Plan {
    /// The strategies, in table order.
    pub strategies: Vec<Strategy>,
    /// Idleness before each measured retrieval.
    pub idle: Duration,
    /// Measurements per question (at least one).
    pub passes: usize,
}

/// Prints the profile table of the planned strategies on the store in `dir`.
pub async fn run(dir: &Path, questions: &[String], plan: &Plan) -> Result<()> {
    let engine = Engine::open(dir).await?;
    println!(
        "\n### Where a retrieval's time goes ({}, {} questions × {} passes, {} ms idle before each; \
         median ms, calls in brackets)\n",
        dir.display(),
        questions.len(),
        plan.passes,
        plan.idle.as_millis()
    );
    println!("{}", header());
    for &strategy in &plan.strategies {
        let options = RetrieveOptions {
            strategy,
            top_k: 8,
            ..RetrieveOptions::default()
        };
        let mut splits = Vec::with_capacity(questions.len() * plan.passes);
        for question in questions {
            engine.retrieve(question, &options).await?; // warm-up
            engine.store().wait_for_background_work();
            for _ in 0..plan.passes {
                std::thread::sleep(plan.idle);
                splits.push(measure(&engine, question, &options).await?);
            }
        }
        println!("{}", row(strategy, &splits));
    }
    println!("\n{}", edge_index_build(&engine)?);
    Ok(())
}

/// What building the walks' edge index of `engine`'s graph costs, as a line
/// (the store builds it once walks have spent about as long reading the graph).
pub(crate) fn edge_index_build(engine: &Engine) -> Result<String> {
    let started = Instant::now();
    let max_edges = engine.store().max_indexed_edges();
    let index = engine.store().graph().edge_index(max_edges)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(match index {
        Some(index) => format!(
            "The walks' edge index: {} edges, built in {ms:.1} ms.",
            index.len()
        ),
        None => format!(
            "No walks' edge index: more than {max_edges} edges (read in {ms:.1} ms), or a SPARQL server."
        ),
    })
}

/// The profile table's header.
pub(crate) fn header() -> &'static str {
    "| strategy | total | total p95 | embedding | LanceDB | graph | kgfuse's own |\n|---|---|---|---|---|---|---|"
}

/// One strategy's line of the profile table: medians of `splits`, and the
/// whole retrieval's 95th percentile.
pub(crate) fn row(strategy: Strategy, splits: &[Split]) -> String {
    let mut totals: Vec<Duration> = splits.iter().map(|s| s.total).collect();
    totals.sort();
    let median = |f: &dyn Fn(&Split) -> f64| {
        let mut values: Vec<f64> = splits.iter().map(f).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    #[allow(clippy::cast_precision_loss)]
    let calls = |n: u64| n as f64;
    format!(
        "| {} | {:.1} | {:.1} | {:.1} ({:.0}) | {:.1} ({:.0}) | {:.1} ({:.0}) | {:.1} |",
        strategy.name(),
        median(&|s| ms(s.total)),
        crate::retrieval::percentile_ms(&totals, 0.95),
        median(&|s| ms(s.embedding)),
        median(&|s| calls(s.embeddings)),
        median(&|s| ms(s.vectors)),
        median(&|s| calls(s.vector_calls)),
        median(&|s| ms(s.graph)),
        median(&|s| calls(s.graph_calls)),
        median(&|s| ms(s.own())),
    )
}

/// One retrieval, with the store's accounting read before and after it.
pub(crate) async fn measure(
    engine: &Engine,
    question: &str,
    options: &RetrieveOptions,
) -> Result<Split> {
    let before = engine.store().time_spent();
    let start = Instant::now();
    engine.retrieve(question, options).await?;
    let total = start.elapsed();
    let after = engine.store().time_spent();
    Ok(Split {
        total,
        embedding: after.embedding.saturating_sub(before.embedding),
        embeddings: after.embeddings - before.embeddings,
        vectors: after.vectors.saturating_sub(before.vectors),
        vector_calls: after.vector_calls - before.vector_calls,
        graph: after.graph.saturating_sub(before.graph),
        graph_calls: after.graph_calls - before.graph_calls,
    })
}
