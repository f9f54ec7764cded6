//! Retrieval latency on a synthetic API graph.
//!
//! A deterministic generator writes `n` functions in packages of 100 (10 modules
//! each), with signatures, docstrings drawn from a fixed vocabulary, two
//! parameters, two calls to functions of the same package and one input and one
//! output tag each. The graph is loaded into a fresh hash-embedder store (the
//! load's and the case base's peak resident memory and the store's size on disk
//! are printed, each peak on its own: Linux's `VmHWM` is reset between steps); then every
//! strategy answers the same 20 questions (after one warm-up pass) and the table
//! reports p50/p95 latency, the ratio to `flat` measured in the same run, and where
//! the time went: inside Oxigraph, inside LanceDB, embedding the question, and
//! kgfuse's own code (the rest). The store is made without its automatic vector
//! index, so that table measures exact search; from 10,000 functions on, the
//! IVF-RQ index is then built (its recall against exact search printed) and the
//! strategies run again, with their latency against the exact run and the share
//! of the exact run's retrieved items they still return. Last, the store is opened
//! anew for each of a `bm25` and a `unified` question (what a fresh process pays
//! for its first question, resident memory before and after it), and again for
//! each after a load of one function (the lexicon and `paths`' data-flow graph
//! brought in step with the write); `--first-questions` runs only this last
//! step, on stores an earlier `--keep` run left.

use anyhow::Result;
use kgfuse::{
    CaseBaseOptions, Engine, EngineInit, NoProgress, RetrieveOptions, Strategy, VectorIndexConfig,
};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// Words for docstrings and tag names.
const NOUNS: &[&str] = &[
    "signal", "frame", "message", "fee", "merchant", "invoice", "order", "channel", "record",
    "schedule", "sensor", "payload", "account", "policy", "report", "session", "token", "bus",
    "device", "rule",
];
const VERBS: &[&str] = &[
    "decode", "encode", "compute", "validate", "load", "send", "receive", "merge", "filter",
    "rank", "parse", "render", "match", "sum", "schedule",
];

/// A small deterministic generator (64-bit LCG), so every run builds the same graph.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        #[allow(clippy::cast_possible_truncation)]
        let value = (self.0 >> 33) as usize;
        value % bound.max(1)
    }
}

/// Turtle for `n` functions.
pub(crate) fn generate(n: usize) -> String {
    let mut rng = Lcg(42);
    let mut ttl = String::from(
        "@prefix kgfuse: <https://w3id.org/kgfuse/ontology#> .\n\
         @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
         @prefix s: <https://example.org/synthetic/> .\n",
    );
    for tag in NOUNS {
        let _ = writeln!(
            ttl,
            "s:tag-{tag} a kgfuse:InputTag , kgfuse:OutputTag ; rdfs:label \"{tag}\" ."
        );
    }
    for f in 0..n {
        let package = f / 100;
        let module = (f % 100) / 10;
        let verb = VERBS[rng.next(VERBS.len())];
        let noun = NOUNS[rng.next(NOUNS.len())];
        let input = NOUNS[rng.next(NOUNS.len())];
        let name = format!("{verb}_{noun}_{f}");
        let qualified = format!("pkg{package}.mod{module}.{name}");
        let _ = writeln!(
            ttl,
            "s:fn{f} a kgfuse:Function ; rdfs:label \"{name}\" ; kgfuse:name \"{name}\" ; \
             kgfuse:qualifiedName \"{qualified}\" ; \
             kgfuse:signature \"def {name}({input}, options=None) -> {noun}\" ; \
             rdfs:comment \"{verb} the {noun} of a {input} and return it.\" ; \
             kgfuse:inPackage s:pkg{package} ; kgfuse:inModule s:pkg{package}-mod{module} ; \
             kgfuse:hasParameter s:fn{f}-p0 , s:fn{f}-p1 ; \
             kgfuse:consumes s:tag-{input} ; kgfuse:produces s:tag-{noun} ; \
             kgfuse:calls s:fn{} , s:fn{} .\n\
             s:fn{f}-p0 a kgfuse:Parameter ; kgfuse:name \"{input}\" ; kgfuse:position 0 .\n\
             s:fn{f}-p1 a kgfuse:Parameter ; kgfuse:name \"options\" ; kgfuse:position 1 .",
            package * 100 + rng.next(100.min(n - package * 100)),
            package * 100 + rng.next(100.min(n - package * 100)),
        );
        if f % 10 == 0 {
            let _ = writeln!(
                ttl,
                "s:pkg{package}-mod{module} a kgfuse:Module ; rdfs:label \"pkg{package}.mod{module}\" ; \
                 kgfuse:inPackage s:pkg{package} . s:pkg{package} kgfuse:hasModule s:pkg{package}-mod{module} ."
            );
        }
        if f % 100 == 0 {
            let _ = writeln!(
                ttl,
                "s:pkg{package} a kgfuse:Package ; rdfs:label \"pkg{package}\" ; kgfuse:name \"pkg{package}\" ."
            );
        }
    }
    ttl
}

/// The 20 benchmark questions.
pub(crate) fn questions() -> Vec<String> {
    let mut rng = Lcg(7);
    (0..20)
        .map(|_| {
            let verb = VERBS[rng.next(VERBS.len())];
            let from = NOUNS[rng.next(NOUNS.len())];
            let to = NOUNS[rng.next(NOUNS.len())];
            format!("How do I {verb} the {to} from a {from}?")
        })
        .collect()
}

/// Answers every question once; returns each answer's wall time, in question order.
pub(crate) async fn answer_all(
    engine: &Engine,
    questions: &[String],
    options: &RetrieveOptions,
) -> Result<Vec<Duration>> {
    Ok(answer_and_keep(engine, questions, options)
        .await?
        .into_iter()
        .map(|(time, _)| time)
        .collect())
}

/// Answers every question once; returns each answer's wall time and the IRIs of
/// what it retrieved (text hits, functions, cases), in question order.
async fn answer_and_keep(
    engine: &Engine,
    questions: &[String],
    options: &RetrieveOptions,
) -> Result<Vec<(Duration, BTreeSet<String>)>> {
    let mut answers = Vec::with_capacity(questions.len());
    for question in questions {
        let start = Instant::now();
        let context = engine.retrieve(question, options).await?;
        let time = start.elapsed();
        let items = context
            .unstructured
            .iter()
            .map(|hit| hit.iri.clone())
            .chain(context.functions.iter().map(|f| f.iri.clone()))
            .chain(context.cases.iter().map(|c| c.iri.clone()))
            .collect();
        answers.push((time, items));
    }
    Ok(answers)
}

/// The `p` quantile of sorted durations, in milliseconds (0 for none).
pub(crate) fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    kgfuse::math::percentile(sorted, p).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

pub(crate) const STRATEGIES: [Strategy; 6] = [
    Strategy::Flat,
    Strategy::Hybrid,
    Strategy::Unified,
    Strategy::Paths,
    Strategy::Neighborhood,
    Strategy::Domain,
];

/// One strategy's timed pass over the questions.
pub(crate) struct StrategyRun {
    pub(crate) strategy: Strategy,
    /// Wall time per question, sorted.
    pub(crate) times: Vec<Duration>,
    /// Share of the time inside Oxigraph, LanceDB and embedding, in percent.
    graph: f64,
    vectors: f64,
    embedding: f64,
    /// What each question retrieved, in question order.
    pub(crate) items: Vec<BTreeSet<String>>,
    /// Requests to a remote graph per question (0 when embedded).
    pub(crate) round_trips: f64,
}

/// Every strategy answers every question twice (a warm-up pass, then the timed one).
pub(crate) async fn time_strategies(
    engine: &Engine,
    questions: &[String],
) -> Result<Vec<StrategyRun>> {
    let mut runs = Vec::new();
    for strategy in STRATEGIES {
        let options = RetrieveOptions {
            strategy,
            top_k: 8,
            ..RetrieveOptions::default()
        };
        answer_all(engine, questions, &options).await?; // warm-up
        // Measure the steady state: an edge index the warm-up started is built.
        engine.store().wait_for_background_work();
        let before = engine.store().time_spent();
        let trips_before = engine.store().graph().round_trips();
        let answers = answer_and_keep(engine, questions, &options).await?;
        let after = engine.store().time_spent();
        #[allow(clippy::cast_precision_loss)]
        let round_trips = (engine.store().graph().round_trips() - trips_before) as f64
            / questions.len().max(1) as f64;
        let (mut times, items): (Vec<Duration>, Vec<BTreeSet<String>>) =
            answers.into_iter().unzip();
        let total: f64 = times.iter().map(Duration::as_secs_f64).sum();
        let share = |d: Duration| 100.0 * d.as_secs_f64() / total.max(f64::EPSILON);
        times.sort();
        runs.push(StrategyRun {
            strategy,
            times,
            graph: share(after.graph - before.graph),
            vectors: share(after.vectors - before.vectors),
            embedding: share(after.embedding - before.embedding),
            items,
            round_trips,
        });
    }
    Ok(runs)
}

/// How much of the benchmark [`run`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// Build each store, time the strategies, build the index, time them again.
    All,
    /// Build each store (load and case base) and stop.
    BuildOnly,
    /// Only the first questions of a fresh engine, on stores kept by an
    /// earlier run.
    FirstQuestions,
}

/// Builds the synthetic store for each size and prints the latency table; `keep`
/// leaves the stores and their Turtle files in `scratch`.
pub async fn run(sizes: &[usize], scratch: &Path, keep: bool, steps: Steps) -> Result<()> {
    for &n in sizes {
        let dir = scratch.join(format!("retrieval-{n}"));
        if steps == Steps::FirstQuestions {
            anyhow::ensure!(
                dir.exists(),
                "{}: no store kept by an earlier `--keep` run",
                dir.display()
            );
            first_questions(&dir, scratch, n).await?;
            continue;
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(scratch)?;
        let file = scratch.join(format!("synthetic-{n}.ttl"));
        std::fs::write(&file, generate(n))?;
        // No automatic vector index: the first table measures exact search, then
        // the index is built and the strategies run again.
        let init = EngineInit::hash(384).vector_index(VectorIndexConfig {
            auto_build_rows: 0,
            ..VectorIndexConfig::default()
        });
        let engine = Engine::init(&dir, init).await?;
        let phase = Phase::start();
        engine.load(&[&file], None, &NoProgress).await?;
        let load = phase.end();
        println!(
            "\n### Retrieval on a synthetic API graph: {n} functions (load {:.1} s, hash embedder)\n",
            load.seconds
        );
        let phase = Phase::start();
        let cases = engine
            .build_case_base(CaseBaseOptions::default(), &NoProgress)
            .await?;
        let case_base = phase.end();
        println!(
            "Case base (for `domain`): {} clusters over {} packages in {:.1} s.\n",
            cases.clusters, cases.packages, case_base.seconds
        );
        println!("{}\n", resources(&dir, n, &load, &case_base));
        if steps == Steps::BuildOnly {
            continue;
        }
        println!(
            "| strategy | p50 ms | p95 ms | p50 / flat | Oxigraph | LanceDB | embedding | own code |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        let questions = questions();
        let phase = Phase::start();
        let exact = time_strategies(&engine, &questions).await?;
        let strategies = phase.end();
        let flat_p50 = percentile_ms(&exact[0].times, 0.5);
        for run in &exact {
            let p50 = percentile_ms(&run.times, 0.5);
            println!(
                "| {} | {p50:.1} | {:.1} | {:.2}x | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
                run.strategy.name(),
                percentile_ms(&run.times, 0.95),
                p50 / flat_p50,
                run.graph,
                run.vectors,
                run.embedding,
                (100.0 - run.graph - run.vectors - run.embedding).max(0.0)
            );
        }
        println!(
            "\nMemory of this process after the {n}-function run: resident {:.0} MiB; peak {:.0} MiB \
             while the strategies ran (the store's own files are on disk; this is Oxigraph's and \
             LanceDB's caches plus the kgfuse process).",
            kgfuse::memory::resident_mib(),
            strategies.peak_mib
        );
        scan_rate(&engine).await?;
        if n >= 10_000 {
            let phase = Phase::start();
            vector_index(&engine, &questions).await?;
            with_index(&engine, &questions, &exact).await?;
            println!(
                "\nPeak resident memory while the index was built and the strategies ran with it: {:.0} MiB.",
                phase.end().peak_mib
            );
        }
        drop(engine);
        first_questions(&dir, scratch, n).await?;
        if !keep {
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_file(&file);
        }
    }
    Ok(())
}

/// What a fresh process pays for its first question: the store opened anew
/// (nothing carried over from the engine that built it), then one `bm25` and
/// one `unified` question; then one function written and the first `bm25` and
/// `unified` questions after it (the lexicon and `paths`' data-flow graph
/// brought in step with the write), each from a store opened anew.
async fn first_questions(dir: &Path, scratch: &Path, n: usize) -> Result<()> {
    let question = &questions()[0];
    println!(
        "\n| first question of a fresh engine, {n} functions | wall ms | resident MiB before -> after |"
    );
    println!("|---|---|---|");
    for strategy in [Strategy::Bm25, Strategy::Unified] {
        let (ms, before, after) = first_answer(dir, question, strategy).await?;
        println!(
            "| `{}` | {ms:.0} | {before:.0} -> {after:.0} |",
            strategy.name()
        );
    }
    let file = scratch.join(format!("one-more-{n}.ttl"));
    std::fs::write(&file, one_more_function())?;
    let engine = Engine::open(dir).await?;
    let started = Instant::now();
    engine.load(&[&file], None, &NoProgress).await?;
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;
    drop(engine);
    for strategy in [Strategy::Bm25, Strategy::Unified] {
        let (ms, before, after) = first_answer(dir, question, strategy).await?;
        println!(
            "| `{}` after a load of one function ({load_ms:.0} ms) | {ms:.0} | {before:.0} -> {after:.0} |",
            strategy.name()
        );
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// Opens the store, answers `question` once; returns the answer's wall time in
/// ms and the process's resident memory before and after it.
async fn first_answer(dir: &Path, question: &str, strategy: Strategy) -> Result<(f64, f64, f64)> {
    let engine = Engine::open(dir).await?;
    let options = RetrieveOptions {
        strategy,
        top_k: 8,
        ..RetrieveOptions::default()
    };
    let before = kgfuse::memory::resident_mib();
    let started = Instant::now();
    engine.retrieve(question, &options).await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok((ms, before, kgfuse::memory::resident_mib()))
}

/// One more function, shaped as the generated ones (a tag in, a tag out, a
/// call), for the write the lexicon and the data-flow graph follow.
fn one_more_function() -> String {
    "@prefix kgfuse: <https://w3id.org/kgfuse/ontology#> .\n\
     @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
     @prefix s: <https://example.org/synthetic/> .\n\
     s:fn-extra a kgfuse:Function ; rdfs:label \"reconcile_ledger\" ; kgfuse:name \"reconcile_ledger\" ; \
     kgfuse:qualifiedName \"pkg0.mod0.reconcile_ledger\" ; \
     kgfuse:signature \"def reconcile_ledger(record, options=None) -> report\" ; \
     kgfuse:inPackage s:pkg0 ; kgfuse:inModule s:pkg0-mod0 ; kgfuse:hasParameter s:fn-extra-p0 ; \
     kgfuse:consumes s:tag-record ; kgfuse:produces s:tag-report ; kgfuse:calls s:fn1 .\n\
     s:fn-extra-p0 a kgfuse:Parameter ; kgfuse:name \"record\" ; kgfuse:position 0 .\n"
        .to_owned()
}

/// A step of the benchmark being measured: wall time and peak resident memory.
struct Phase {
    started: Instant,
}

/// What a [`Phase`] took.
struct PhaseCost {
    seconds: f64,
    /// Peak resident memory during the phase (the process's peak so far where
    /// Linux refuses to reset it).
    peak_mib: f64,
}

impl Phase {
    fn start() -> Self {
        kgfuse::memory::reset_peak_resident();
        Self {
            started: Instant::now(),
        }
    }

    fn end(self) -> PhaseCost {
        PhaseCost {
            seconds: self.started.elapsed().as_secs_f64(),
            peak_mib: kgfuse::memory::peak_resident_mib(),
        }
    }
}

/// The load's and the case base's peak memory and the store's size on disk, as a line.
fn resources(dir: &Path, n: usize, load: &PhaseCost, case_base: &PhaseCost) -> String {
    let graph = crate::ingest::disk_mib(&dir.join("graph"));
    let vectors = crate::ingest::disk_mib(&dir.join("vectors"));
    #[allow(clippy::cast_precision_loss)]
    let per_100k = 100_000.0 / n.max(1) as f64;
    format!(
        "Peak resident memory: load {:.0} MiB, case base {:.0} MiB. On disk: graph {graph:.0} MiB, \
         vectors {vectors:.0} MiB ({:.0} MiB per 100,000 functions).",
        load.peak_mib,
        case_base.peak_mib,
        (graph + vectors) * per_100k
    )
}

/// The share of what `base` retrieved that `run` also retrieved, over all
/// questions.
pub(crate) fn agreement(run: &StrategyRun, base: &StrategyRun) -> f64 {
    let (mut kept, mut wanted) = (0usize, 0usize);
    for (now, before) in run.items.iter().zip(&base.items) {
        wanted += before.len();
        kept += before.intersection(now).count();
    }
    #[allow(clippy::cast_precision_loss)]
    let share = kept as f64 / wanted.max(1) as f64;
    share
}

/// The strategies again, now that the vector index exists: latency against the
/// exact run above, and how much of what the exact run retrieved they still find.
async fn with_index(engine: &Engine, questions: &[String], exact: &[StrategyRun]) -> Result<()> {
    println!("\nWith the IVF-RQ index (what a store of 50,000 rows or more builds by itself):\n");
    println!("| strategy | p50 ms | p95 ms | p50 / exact p50 | LanceDB | same items as exact |");
    println!("|---|---|---|---|---|---|");
    let indexed = time_strategies(engine, questions).await?;
    for (run, base) in indexed.iter().zip(exact) {
        let agreement = agreement(run, base);
        let p50 = percentile_ms(&run.times, 0.5);
        println!(
            "| {} | {p50:.1} | {:.1} | {:.2}x | {:.0}% | {:.3} |",
            run.strategy.name(),
            percentile_ms(&run.times, 0.95),
            p50 / percentile_ms(&base.times, 0.5),
            run.vectors,
            agreement
        );
    }
    Ok(())
}

/// The IVF-RQ index against exact search on the same store: build time, search
/// latency of both, and recall@10 of the index (share of the exact top 10 it returns).
async fn vector_index(engine: &Engine, questions: &[String]) -> Result<()> {
    let vectors = engine.store().vectors();
    let queries: Vec<Vec<f32>> = questions
        .iter()
        .map(|q| engine.store().embed(q))
        .collect::<Result<_, _>>()?;
    let mut exact = Vec::new();
    let mut exact_ms = Vec::new();
    for query in &queries {
        let start = Instant::now();
        exact.push(vectors.search_exact(query, 10).await?);
        exact_ms.push(start.elapsed());
    }
    let start = Instant::now();
    vectors.build_vector_index().await?;
    let build = start.elapsed();
    for query in &queries {
        vectors.search(query, 10, kgfuse::KindFilter::Any).await?; // warm-up
    }
    let mut indexed_ms = Vec::new();
    let mut found = 0usize;
    let mut wanted = 0usize;
    for (query, truth) in queries.iter().zip(&exact) {
        let start = Instant::now();
        let hits = vectors.search(query, 10, kgfuse::KindFilter::Any).await?;
        indexed_ms.push(start.elapsed());
        wanted += truth.len();
        found += truth
            .iter()
            .filter(|t| hits.iter().any(|h| h.iri == t.iri))
            .count();
    }
    exact_ms.sort();
    indexed_ms.sort();
    let (e, i) = (
        percentile_ms(&exact_ms, 0.5),
        percentile_ms(&indexed_ms, 0.5),
    );
    #[allow(clippy::cast_precision_loss)]
    let recall = found as f64 / wanted.max(1) as f64;
    println!(
        "IVF-RQ index: built in {:.1} s; top-10 search p50 {i:.1} ms vs exact {e:.1} ms \
         ({:.2}x faster); recall@10 against exact search {recall:.3}.",
        build.as_secs_f64(),
        e / i
    );
    Ok(())
}

/// The exact (index-free) vector scan against the memory-bandwidth bound: bytes of
/// vectors read per second for a top-10 search by LanceDB, and by `search` (the
/// resident copy of a table within `[memory] resident_vectors_mib`, LanceDB above),
/// next to the rate at which this machine sums an in-memory f32 buffer larger
/// than its caches.
async fn scan_rate(engine: &Engine) -> Result<()> {
    let stats = engine.stats().await?;
    let vector = engine.store().embed("decode the signal of a frame")?;
    let vectors = engine.store().vectors();
    let runs = 10;
    let mut per_search = [0.0; 2];
    for (slot, lancedb) in [(0, true), (1, false)] {
        let search = || async {
            if lancedb {
                vectors.search_exact(&vector, 10).await
            } else {
                vectors.search(&vector, 10, kgfuse::KindFilter::Any).await
            }
        };
        search().await?; // warm-up
        let start = Instant::now();
        for _ in 0..runs {
            search().await?;
        }
        per_search[slot] = start.elapsed().as_secs_f64() / f64::from(runs);
    }
    #[allow(clippy::cast_precision_loss)]
    let bytes = (stats.vector_rows * stats.dimension * 4) as f64;
    let buffer = vec![1.0_f32; 64 * 1024 * 1024]; // 256 MiB
    let mut best = f64::INFINITY;
    let mut sum = 0.0_f32;
    for _ in 0..5 {
        let start = Instant::now();
        sum += buffer.iter().sum::<f32>();
        best = best.min(start.elapsed().as_secs_f64());
    }
    #[allow(clippy::cast_precision_loss)]
    let bandwidth = (buffer.len() * 4) as f64 / best;
    let resident = stats.vector_rows
        <= engine
            .store()
            .config()
            .memory
            .resident_vector_rows(stats.dimension);
    println!(
        "\nExact vector scan: {} rows x {} dims = {:.1} MB per search; summing a 256 MiB \
         buffer here: {:.2} GB/s (checksum {sum:.0}).",
        stats.vector_rows,
        stats.dimension,
        bytes / 1e6,
        bandwidth / 1e9,
    );
    for (name, seconds) in [
        ("LanceDB exact scan", per_search[0]),
        (
            if resident {
                "`search` (the table's resident copy)"
            } else {
                "`search` (LanceDB: the table is above the resident limit)"
            },
            per_search[1],
        ),
    ] {
        println!(
            "- {name}: {:.2} ms = {:.2} GB/s, {:.0} % of that.",
            seconds * 1000.0,
            bytes / seconds / 1e9,
            100.0 * (bytes / seconds) / bandwidth
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_deterministic_and_parses() {
        let a = generate(250);
        assert_eq!(a, generate(250));
        assert_eq!(a.matches(" a kgfuse:Function ").count(), 250);
        let graph = kgfuse_graph_check(&a);
        assert!(graph > 250 * 10, "{graph} triples");
    }

    /// Counts the triples of a Turtle text with the same parser the store uses.
    fn kgfuse_graph_check(ttl: &str) -> usize {
        let mut count = 0;
        for quad in oxigraph::io::RdfParser::from_format(oxigraph::io::RdfFormat::Turtle)
            .for_slice(ttl.as_bytes())
        {
            quad.expect("valid turtle");
            count += 1;
        }
        count
    }
}
