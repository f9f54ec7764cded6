//! The Markdown report of the SHACL Core tests: totals, counts per folder, and
//! every test that does not pass with its reason.

use crate::shacl::{Outcome, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The folders of `tests/core`, in the order of the report (others follow).
const FOLDERS: [&str; 7] = [
    "core/node",
    "core/property",
    "core/path",
    "core/targets",
    "core/misc",
    "core/complex",
    "core/validation-reports",
];

#[derive(Default)]
struct Counts {
    tests: usize,
    pass: usize,
    fail: usize,
    unsupported: usize,
    error: usize,
}

impl Counts {
    fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        let mut counts = Self::default();
        for outcome in outcomes {
            counts.tests += 1;
            match outcome.verdict {
                Verdict::Pass => counts.pass += 1,
                Verdict::Fail(_) => counts.fail += 1,
                Verdict::Unsupported(_) => counts.unsupported += 1,
                Verdict::Error(_) => counts.error += 1,
            }
        }
        counts
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} | {} | {} | {} |",
            self.tests, self.pass, self.fail, self.unsupported, self.error
        )
    }
}

/// One line for the log.
pub fn summary_line(outcomes: &[Outcome]) -> String {
    let c = Counts::of(outcomes);
    format!(
        "SHACL Core: {} tests, {} pass, {} fail, {} unsupported, {} error",
        c.tests, c.pass, c.fail, c.unsupported, c.error
    )
}

/// The whole report.
pub fn render(outcomes: &[Outcome], commit: &str) -> String {
    let mut out = String::new();
    let all = Counts::of(outcomes);
    let supported = all.tests - all.unsupported;
    let _ = writeln!(
        out,
        "# W3C SHACL Core tests: kgfuse-shacl\n\n\
         Written by `make test-shacl` (the harness is `kgfuse-w3c shacl` in `tests/w3c`; do \
         not edit by hand). Suite: [w3c/data-shapes](https://github.com/w3c/data-shapes) at \
         commit `{commit}`, `data-shapes-test-suite/tests/core`. The tests are W3C's; the \
         repository has no licence file at that commit, and W3C distributes its test suites \
         under its [test-suite licences](https://www.w3.org/copyright/test-suites-licenses/). \
         Nothing of them is kept in this repository.\n\n\
         Each test validates its data graph (parsed with oxttl, base the file's `file://` \
         IRI) against its shapes graph (`Shapes::from_turtle` under the same IRI). It \
         **passes** when `sh:conforms` matches and the results agree as a multiset on focus \
         node, result path, constraint component, severity, source shape and value; any blank \
         node matches any blank node, and a blank-node result path is compared in the path \
         syntax kgfuse-shacl reports. **unsupported**: kgfuse-shacl refuses a feature the test \
         uses (`ShaclError::Unsupported`); **error**: another error. `make test-shacl` fails \
         while an approved test fails or ends in an error.\n"
    );
    let _ = writeln!(
        out,
        "## Totals\n\n**{} of {} tests pass** ({} of the {supported} tests kgfuse-shacl \
         supports): {} fail, {} unsupported, {} error.\n",
        all.pass, all.tests, all.pass, all.fail, all.unsupported, all.error
    );

    let mut groups: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for outcome in outcomes {
        groups.entry(&outcome.test.group).or_default().push(outcome);
    }
    let _ = writeln!(
        out,
        "## Per folder\n\n| folder | tests | pass | fail | unsupported | error |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    for folder in FOLDERS {
        let members = groups.get(folder).map(Vec::as_slice).unwrap_or_default();
        let _ = writeln!(out, "{}", Counts::of(members.iter().copied()).row(folder));
    }
    for (folder, members) in groups.iter().filter(|(f, _)| !FOLDERS.contains(f)) {
        let _ = writeln!(out, "{}", Counts::of(members.iter().copied()).row(folder));
    }
    let _ = writeln!(out, "{}\n", all.row("**all**"));

    section(
        &mut out,
        outcomes,
        "Failures",
        "The report differs from the expected one (`kgfuse-w3c shacl --verbose` prints both).",
        "reason",
        |v| match v {
            Verdict::Fail(why) => Some(why),
            _ => None,
        },
    );
    section(
        &mut out,
        outcomes,
        "Errors",
        "Validation ended in an error other than an unsupported feature.",
        "error",
        |v| match v {
            Verdict::Error(why) => Some(why),
            _ => None,
        },
    );
    section(
        &mut out,
        outcomes,
        "Unsupported",
        "kgfuse-shacl refuses the shapes graph by name: SHACL Core without qualified value \
         shapes, `sh:lessThan`, `sh:lessThanOrEquals`, SHACL-SPARQL and `sh:target`.",
        "parameter refused",
        |v| match v {
            Verdict::Unsupported(parameter) => Some(parameter),
            _ => None,
        },
    );

    let unapproved: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.test.unapproved.is_some())
        .collect();
    let _ = writeln!(out, "## Not approved ({} tests)\n", unapproved.len());
    if unapproved.is_empty() {
        let _ = writeln!(out, "Every test of the suite has `mf:status sht:approved`.");
    } else {
        let _ = writeln!(
            out,
            "Run and counted above, but they do not fail `make test-shacl`.\n\n\
             | test | folder | status | outcome |\n|---|---|---|---|"
        );
        for outcome in unapproved {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                outcome.test.name,
                outcome.test.group,
                outcome.test.unapproved.as_deref().unwrap_or(""),
                match &outcome.verdict {
                    Verdict::Pass => "pass".to_owned(),
                    Verdict::Fail(why) => format!("fail: {why}"),
                    Verdict::Unsupported(p) => format!("unsupported: {p}"),
                    Verdict::Error(e) => format!("error: {e}"),
                }
                .replace('|', "\\|")
            );
        }
    }
    out
}

fn section(
    out: &mut String,
    outcomes: &[Outcome],
    title: &str,
    explanation: &str,
    column: &str,
    reason: impl Fn(&Verdict) -> Option<&String>,
) {
    let rows: Vec<(&Outcome, &String)> = outcomes
        .iter()
        .filter_map(|o| reason(&o.verdict).map(|r| (o, r)))
        .collect();
    let _ = writeln!(out, "## {title} ({} tests)\n", rows.len());
    if rows.is_empty() {
        let _ = writeln!(out, "None.\n");
        return;
    }
    let _ = writeln!(
        out,
        "{explanation}\n\n| test | folder | label | {column} |\n|---|---|---|---|"
    );
    for (outcome, why) in rows {
        let mark = if outcome.test.unapproved.is_some() {
            " (not approved)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {}{mark} | {} | {} | {} |",
            outcome.test.name,
            outcome.test.group,
            outcome.test.label.replace('|', "\\|"),
            why.replace('|', "\\|")
        );
    }
    let _ = writeln!(out);
}
