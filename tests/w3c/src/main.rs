//! `kgfuse-w3c`: runs the W3C SPARQL 1.1 query-evaluation and syntax tests through
//! plain Oxigraph and through kgfuse's query path, writes a Markdown report of the
//! pass counts and of every test where kgfuse differs, and exits 1 when kgfuse's
//! query layer fails a test plain Oxigraph passes.
//!
//! ```text
//! kgfuse-w3c [sparql] --suite <rdf-tests>/sparql/sparql11 [--report REPORT.md]
//! kgfuse-w3c shacl --suite <data-shapes>/data-shapes-test-suite/tests/core [--report SHACL-REPORT.md]
//! ```
//!
//! `tests/w3c/fetch.sh` fetches the SPARQL suite; `make test-w3c` runs both. The
//! `shacl` mode runs the W3C SHACL Core tests through `kgfuse-shacl` ([`shacl`]);
//! `tests/w3c/fetch-shacl.sh` fetches them and `make test-shacl` runs both.

// A command-line tool: without --report, the report is its output.
#![allow(clippy::print_stdout)]

mod compare;
mod engines;
mod manifest;
mod rdf;
mod report;
mod shacl;
mod shacl_report;

use anyhow::{Context, Result, bail};
use compare::Expected;
use engines::{Dataset, Engine};
use manifest::{Kind, Test};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--verbose`: print the expected and returned results of each failure.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// The manifests run, relative to `sparql/sparql11`: the query language (with its
/// syntax tests), the results formats, and the update syntax tests.
const MANIFESTS: [&str; 4] = [
    "manifest-sparql11-query.ttl",
    "manifest-sparql11-results.ttl",
    "syntax-update-1/manifest.ttl",
    "syntax-update-2/manifest.ttl",
];

/// A test's outcome on one engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// As the test expects.
    Pass,
    /// Not as expected, and how.
    Fail(String),
}

/// Why kgfuse's outcome differs from plain Oxigraph's on a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    /// kgfuse's query layer fails a test Oxigraph passes: a fault to fix.
    QueryLayer,
    /// A query that must not parse does, because kgfuse predeclares common prefixes.
    PredeclaredPrefixes,
    /// The query sees the three triples kgfuse writes about each loaded file.
    FileMetadata,
    /// The query sees named graphs in the default graph, or the default data as a
    /// named graph (kgfuse's union default graph of per-file graphs).
    UnionDefaultGraph,
    /// kgfuse passes a test plain Oxigraph fails.
    KgfuseOnly,
}

/// One test with its verdict per engine (in [`Engine::ALL`] order).
#[derive(Debug)]
pub struct Outcome {
    /// The test.
    pub test: Test,
    /// Verdicts, or `None` when the test was not run.
    pub verdicts: Option<[Verdict; 3]>,
    /// Why kgfuse differs, per kgfuse engine (query layer, as loaded).
    pub differences: Vec<(Engine, Difference)>,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("kgfuse-w3c: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool> {
    let mut args = std::env::args().skip(1).peekable();
    match args.peek().map(String::as_str) {
        Some("shacl") => {
            args.next();
            return shacl::run(args);
        }
        Some("sparql") => {
            args.next();
        }
        _ => {}
    }
    let (mut suite, mut report_path) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--suite" => suite = args.next().map(PathBuf::from),
            "--report" => report_path = args.next().map(PathBuf::from),
            "--verbose" => VERBOSE.store(true, Ordering::Relaxed),
            "-h" | "--help" => {
                println!(
                    "kgfuse-w3c [sparql] --suite <rdf-tests>/sparql/sparql11 [--report FILE.md] [--verbose]\n\
                     kgfuse-w3c shacl --suite <data-shapes>/data-shapes-test-suite/tests/core [--report FILE.md] [--verbose]\n\
                     --verbose prints the expected and returned results of each failure"
                );
                return Ok(true);
            }
            other => bail!("unknown argument {other} (see --help)"),
        }
    }
    let Some(suite) = suite else {
        bail!("--suite <rdf-tests>/sparql/sparql11 is required (tests/w3c/fetch.sh fetches it)");
    };
    let mut outcomes = Vec::new();
    for name in MANIFESTS {
        let tests = manifest::read(&suite.join(name)).with_context(|| name.to_owned())?;
        eprintln!("{name}: {} tests", tests.len());
        outcomes.extend(tests.into_iter().map(run_test));
    }
    let commit = std::fs::read_to_string(suite.join("../../COMMIT"))
        .map(|c| c.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let text = report::render(&outcomes, &commit, &MANIFESTS);
    match report_path {
        Some(path) => {
            std::fs::write(&path, &text).with_context(|| path.display().to_string())?;
            eprintln!("report written to {}", path.display());
        }
        None => print!("{text}"),
    }
    let faults = outcomes
        .iter()
        .filter(|o| {
            o.differences
                .iter()
                .any(|(_, d)| *d == Difference::QueryLayer)
        })
        .count();
    eprintln!("{}", report::summary_line(&outcomes));
    if faults > 0 {
        eprintln!("{faults} test(s) fail in kgfuse's query layer but pass in plain Oxigraph");
    }
    Ok(faults == 0)
}

fn run_test(test: Test) -> Outcome {
    let verdicts = match &test.kind {
        Kind::NotRun(_) => None,
        _ => Some(Engine::ALL.map(|engine| verdict(&test, engine))),
    };
    let differences = verdicts
        .as_ref()
        .map(|v| explain(&test, v))
        .unwrap_or_default();
    Outcome {
        test,
        verdicts,
        differences,
    }
}

/// The test on one engine; a panic is a failure, not the end of the run.
fn verdict(test: &Test, engine: Engine) -> Verdict {
    let checked = std::panic::catch_unwind(AssertUnwindSafe(|| check(test, engine, true)));
    match checked {
        Ok(Ok(())) => Verdict::Pass,
        Ok(Err(e)) => Verdict::Fail(one_line(&format!("{e:#}"))),
        Err(_) => Verdict::Fail("panicked".into()),
    }
}

/// Ok when the engine does what the test expects.
fn check(test: &Test, engine: Engine, keep_file_metadata: bool) -> Result<()> {
    let Some(query) = &test.query else {
        bail!("no query file");
    };
    let update = matches!(
        test.kind,
        Kind::PositiveUpdateSyntax | Kind::NegativeUpdateSyntax
    );
    match test.kind {
        Kind::PositiveSyntax | Kind::PositiveUpdateSyntax => {
            let text = std::fs::read_to_string(query)?;
            if !engines::parses(engine, &text, query, update, false)? {
                bail!(
                    "rejected a valid {}",
                    if update { "update" } else { "query" }
                );
            }
        }
        Kind::NegativeSyntax | Kind::NegativeUpdateSyntax => {
            // A file that is not UTF-8 cannot be a query: rejected, as it should be.
            if let Ok(text) = std::fs::read_to_string(query)
                && engines::parses(engine, &text, query, update, false)?
            {
                bail!(
                    "accepted an invalid {}",
                    if update { "update" } else { "query" }
                );
            }
        }
        Kind::QueryEvaluation | Kind::CsvResultFormat => {
            let Some(result) = &test.result else {
                bail!("no expected result");
            };
            let expected = compare::read_expected(result)?;
            let dataset = Dataset {
                query,
                data: &test.data,
                graph_data: &test.graph_data,
            };
            let actual = engines::evaluate(engine, &dataset, keep_file_metadata)?;
            match expected {
                Expected::Csv(text) => {
                    let csv = engines::to_csv(engine, &actual)?;
                    if !compare::same_csv(&text, &csv) {
                        if VERBOSE.load(Ordering::Relaxed) {
                            eprintln!(
                                "== {} on {}\nexpected:\n{text}returned:\n{csv}",
                                test.name,
                                engine.title()
                            );
                        }
                        bail!("CSV differs");
                    }
                }
                Expected::Outcome(expected) => {
                    if !compare::same_outcome(&expected, &actual, is_ordered(query)) {
                        if VERBOSE.load(Ordering::Relaxed) {
                            eprintln!(
                                "== {} on {}\nexpected: {expected:?}\nreturned: {actual:?}",
                                test.name,
                                engine.title()
                            );
                        }
                        bail!("{}", describe_mismatch(&expected, &actual));
                    }
                }
            }
        }
        Kind::NotRun(_) => {}
    }
    Ok(())
}

fn is_ordered(query: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(query) else {
        return false;
    };
    let Ok(base) = engines::file_iri(query) else {
        return false;
    };
    spargebra::SparqlParser::new()
        .with_base_iri(base.as_str())
        .ok()
        .and_then(|p| p.parse_query(&text).ok())
        .is_some_and(|q| compare::is_ordered(&q))
}

fn describe_mismatch(
    expected: &kgfuse_graph::QueryOutcome,
    actual: &kgfuse_graph::QueryOutcome,
) -> String {
    use kgfuse_graph::QueryOutcome as O;
    match (expected, actual) {
        (O::Solutions { rows: e, .. }, O::Solutions { rows: a, .. }) => {
            format!(
                "solutions differ: {} expected, {} returned",
                e.len(),
                a.len()
            )
        }
        (O::Graph(e), O::Graph(a)) => {
            format!(
                "graphs differ: {} triples expected, {} returned",
                e.len(),
                a.len()
            )
        }
        (O::Boolean(e), O::Boolean(a)) => format!("{a} returned, {e} expected"),
        _ => "a different result form".into(),
    }
}

/// Why each kgfuse engine differs from Oxigraph on this test, found by elimination:
/// a query-layer failure on a negative syntax test is retried without the
/// predeclared prefixes; a failure only as loaded is retried with the file
/// triples deleted, and what remains is the union default graph.
fn explain(test: &Test, verdicts: &[Verdict; 3]) -> Vec<(Engine, Difference)> {
    let [oxigraph, layer, loaded] = verdicts;
    let mut differences = Vec::new();
    for (engine, verdict) in [
        (Engine::KgfuseQueryLayer, layer),
        (Engine::KgfuseLoaded, loaded),
    ] {
        let difference = match (oxigraph, verdict) {
            (Verdict::Pass, Verdict::Pass) | (Verdict::Fail(_), Verdict::Fail(_)) => continue,
            (Verdict::Fail(_), Verdict::Pass) => Difference::KgfuseOnly,
            (Verdict::Pass, Verdict::Fail(_)) if is_syntax(&test.kind) => {
                if prefixes_explain(test) {
                    Difference::PredeclaredPrefixes
                } else {
                    Difference::QueryLayer
                }
            }
            (Verdict::Pass, Verdict::Fail(_)) if engine == Engine::KgfuseQueryLayer => {
                Difference::QueryLayer
            }
            // Failing in the query layer, it fails as loaded for the same reason.
            (Verdict::Pass, Verdict::Fail(_)) if *layer != Verdict::Pass => Difference::QueryLayer,
            (Verdict::Pass, Verdict::Fail(_)) => {
                let without_metadata = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    check(test, Engine::KgfuseLoaded, false)
                }));
                if matches!(without_metadata, Ok(Ok(()))) {
                    Difference::FileMetadata
                } else {
                    Difference::UnionDefaultGraph
                }
            }
        };
        differences.push((engine, difference));
    }
    differences
}

fn is_syntax(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::PositiveSyntax
            | Kind::NegativeSyntax
            | Kind::PositiveUpdateSyntax
            | Kind::NegativeUpdateSyntax
    )
}

/// Whether a negative syntax test kgfuse accepts is rejected without kgfuse's
/// predeclared prefixes.
fn prefixes_explain(test: &Test) -> bool {
    let update = test.kind == Kind::NegativeUpdateSyntax;
    let Some(query) = &test.query else {
        return false;
    };
    matches!(test.kind, Kind::NegativeSyntax | Kind::NegativeUpdateSyntax)
        && std::fs::read_to_string(query).is_ok_and(|text| {
            engines::parses(Engine::KgfuseQueryLayer, &text, query, update, true)
                .is_ok_and(|ok| !ok)
        })
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").replace('|', "\\|");
    match line.char_indices().nth(140) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
