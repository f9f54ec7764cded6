//! The Markdown report: pass counts per manifest folder and engine, then every
//! test where kgfuse differs from plain Oxigraph, grouped by cause.

use crate::engines::Engine;
use crate::manifest::Kind;
use crate::{Difference, Outcome, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;

impl Difference {
    fn title(self) -> &'static str {
        match self {
            Self::QueryLayer => "Faults of kgfuse's query layer",
            Self::PredeclaredPrefixes => "Predeclared prefixes",
            Self::FileMetadata => "The triples kgfuse writes about each loaded file",
            Self::UnionDefaultGraph => "The union default graph of per-file graphs",
            Self::KgfuseOnly => "Passed by kgfuse, failed by plain Oxigraph",
        }
    }

    fn explanation(self) -> &'static str {
        match self {
            Self::QueryLayer => {
                "kgfuse's query path gives another outcome than plain Oxigraph on the same \
                 dataset. Each one is a fault to fix; `make test-w3c` fails while any remain."
            }
            Self::PredeclaredPrefixes => {
                "kgfuse's parser knows `rdf:`, `rdfs:`, `xsd:`, `owl:`, `kgfuse:` and the other \
                 prefixes of `kgfuse_core::vocab::WELL_KNOWN_PREFIXES` without a `PREFIX` line, so \
                 a query that is invalid only because it uses one undeclared parses. Retried with \
                 no predeclared prefixes, kgfuse rejects each of these."
            }
            Self::FileMetadata => {
                "`kgfuse load` puts each file in a named graph of its own and adds three \
                 triples about the file to it (`a kgfuse:SourceFile`, `kgfuse:sourceFile`, \
                 `kgfuse:contentHash`); the union default graph shows them to a pattern such \
                 as `?s ?p ?o`. Retried with those triples deleted, kgfuse passes each of these."
            }
            Self::UnionDefaultGraph => {
                "kgfuse passes these on the standard dataset (query layer column) and fails \
                 them as loaded, with the file triples deleted too. What remains is the \
                 dataset itself: the `qt:graphData` graphs are part of kgfuse's default graph \
                 (the union of all graphs), and the `qt:data` files are named graphs that \
                 `GRAPH ?g` finds. Use `kgfuse sparql --no-union` (or `FROM`) for the standard \
                 default graph."
            }
            Self::KgfuseOnly => {
                "kgfuse passes a test that plain Oxigraph, run the same way, fails."
            }
        }
    }
}

/// The whole report.
pub fn render(outcomes: &[Outcome], commit: &str, manifests: &[&str]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# W3C SPARQL 1.1 tests: plain Oxigraph and kgfuse\n\n\
         Written by `make test-w3c` (the harness is `tests/w3c`; do not edit by hand). \
         Suite: [w3c/rdf-tests](https://github.com/w3c/rdf-tests) at commit `{commit}`, \
         `sparql/sparql11`, manifests {}. The tests are W3C's, under the W3C Test Suite \
         licence (`LICENSE.md` of the fetched copy); nothing of them is kept in this \
         repository.\n\n\
         Columns: **plain Oxigraph** runs each test on the standard dataset with Oxigraph \
         alone; **kgfuse query layer** runs it on the same dataset through kgfuse's \
         read-only query path (predeclared prefixes, cross-product guard, row cut, timeout; \
         union default graph off); **kgfuse as loaded** loads the test's files as \
         `kgfuse load` does and queries with kgfuse's defaults. Approved and proposed \
         tests are run alike.\n",
        manifests
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    render_counts(&mut out, outcomes);
    render_differences(&mut out, outcomes);
    render_both_fail(&mut out, outcomes);
    render_not_run(&mut out, outcomes);
    out
}

/// One line for the log: totals per engine.
pub fn summary_line(outcomes: &[Outcome]) -> String {
    let run = outcomes.iter().filter(|o| o.verdicts.is_some()).count();
    let counts: Vec<String> = Engine::ALL
        .iter()
        .enumerate()
        .map(|(i, engine)| format!("{} {}/{run}", engine.title(), passed(outcomes.iter(), i)))
        .collect();
    counts.join(", ")
}

fn passed<'a>(outcomes: impl Iterator<Item = &'a Outcome>, engine: usize) -> usize {
    outcomes
        .filter(|o| {
            o.verdicts
                .as_ref()
                .is_some_and(|v| v[engine] == Verdict::Pass)
        })
        .count()
}

fn render_counts(out: &mut String, outcomes: &[Outcome]) {
    let _ = writeln!(out, "## Pass counts\n");
    let _ = writeln!(
        out,
        "| folder | tests run | {} |\n|---|---:|---:|---:|---:|",
        Engine::ALL.map(Engine::title).join(" | ")
    );
    let mut groups: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for outcome in outcomes.iter().filter(|o| o.verdicts.is_some()) {
        groups.entry(&outcome.test.group).or_default().push(outcome);
    }
    let row = |name: &str, members: &[&Outcome]| {
        let counts: Vec<String> = (0..Engine::ALL.len())
            .map(|i| passed(members.iter().copied(), i).to_string())
            .collect();
        format!("| {name} | {} | {} |", members.len(), counts.join(" | "))
    };
    for (group, members) in &groups {
        let _ = writeln!(out, "{}", row(group, members));
    }
    let all: Vec<&Outcome> = groups.values().flatten().copied().collect();
    let _ = writeln!(
        out,
        "{}\n",
        row("**all**", &all).replace("| all", "| **all**")
    );
}

fn render_differences(out: &mut String, outcomes: &[Outcome]) {
    let mut by_cause: BTreeMap<Difference, Vec<(&Outcome, Vec<Engine>)>> = BTreeMap::new();
    for outcome in outcomes {
        let mut causes: BTreeMap<Difference, Vec<Engine>> = BTreeMap::new();
        for (engine, difference) in &outcome.differences {
            causes.entry(*difference).or_default().push(*engine);
        }
        for (cause, engines) in causes {
            by_cause.entry(cause).or_default().push((outcome, engines));
        }
    }
    let _ = writeln!(out, "## Where kgfuse differs from plain Oxigraph\n");
    if by_cause.is_empty() {
        let _ = writeln!(
            out,
            "Nowhere: every test has the same outcome on all three.\n"
        );
        return;
    }
    for (cause, tests) in by_cause {
        let _ = writeln!(
            out,
            "### {} ({} tests)\n\n{}\n\n| test | folder | where | kgfuse's failure |\n|---|---|---|---|",
            cause.title(),
            tests.len(),
            cause.explanation()
        );
        for (outcome, engines) in tests {
            let verdicts = outcome.verdicts.as_ref();
            let failure = engines
                .iter()
                .find_map(|engine| {
                    let index = Engine::ALL.iter().position(|e| e == engine)?;
                    match verdicts.map(|v| &v[index]) {
                        Some(Verdict::Fail(why)) => Some(why.clone()),
                        _ => None,
                    }
                })
                .unwrap_or_else(|| match verdicts.map(|v| &v[0]) {
                    Some(Verdict::Fail(why)) => format!("Oxigraph: {why}"),
                    _ => String::new(),
                });
            let _ = writeln!(
                out,
                "| {} | {} | {} | {failure} |",
                outcome.test.name.replace('|', "\\|"),
                outcome.test.group,
                engines
                    .iter()
                    .map(|e| e.title())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(out);
    }
}

fn render_both_fail(out: &mut String, outcomes: &[Outcome]) {
    let failed: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| {
            o.verdicts
                .as_ref()
                .is_some_and(|v| v[0] != Verdict::Pass && v[1] != Verdict::Pass)
        })
        .collect();
    let _ = writeln!(
        out,
        "## Failed by plain Oxigraph as well ({} tests)\n\nNot differences of kgfuse: \
         Oxigraph's own outcome (or this harness's comparison) differs from the expected \
         results.\n\n| test | folder | plain Oxigraph |\n|---|---|---|",
        failed.len()
    );
    for outcome in failed {
        if let Some([Verdict::Fail(why), ..]) = &outcome.verdicts {
            let _ = writeln!(
                out,
                "| {} | {} | {why} |",
                outcome.test.name.replace('|', "\\|"),
                outcome.test.group
            );
        }
    }
    let _ = writeln!(out);
}

fn render_not_run(out: &mut String, outcomes: &[Outcome]) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for outcome in outcomes {
        if let Kind::NotRun(reason) = &outcome.test.kind {
            *reasons.entry(reason.as_str()).or_default() += 1;
        }
    }
    let _ = writeln!(out, "## Not run\n");
    if reasons.is_empty() {
        let _ = writeln!(out, "Every test of these manifests was run.");
        return;
    }
    let _ = writeln!(out, "| test type or reason | tests |\n|---|---:|");
    for (reason, count) in reasons {
        let _ = writeln!(out, "| {reason} | {count} |");
    }
}
