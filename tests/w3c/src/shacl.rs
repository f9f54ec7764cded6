//! `kgfuse-w3c shacl`: runs the W3C SHACL Core tests (w3c/data-shapes,
//! `data-shapes-test-suite/tests/core`) through `kgfuse-shacl` and compares each
//! validation report with the expected one.
//!
//! ```text
//! kgfuse-w3c shacl --suite <data-shapes>/data-shapes-test-suite/tests/core [--report FILE.md] [--verbose]
//! ```
//!
//! Each test names a data graph and a shapes graph (usually the test file itself,
//! `<>`, which then also holds the manifest and the expected report). The data
//! graph is parsed with oxttl, its base the file's `file://` IRI; the shapes go to
//! `Shapes::from_turtle` under that IRI. A test passes when `sh:conforms` matches
//! and the results agree as a multiset on focus node, result path, constraint
//! component, severity, source shape and value, where any blank node equals any
//! blank node (labels differ between parses) and a blank-node result path is
//! compared in the path syntax `kgfuse-shacl` reports.

use crate::manifest::path_of;
use crate::rdf::{as_subject, is_nil, list, object, object_of, objects};
use crate::shacl_report;
use anyhow::{Context, Result, bail};
use kgfuse_shacl::{ShaclError, Shapes, ValidationResult};
use oxrdf::vocab::{rdf, rdfs};
use oxrdf::{Graph, NamedNode, NamedOrBlankNode, Term, TermRef};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

const MF: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#";
const SHT: &str = "http://www.w3.org/ns/shacl-test#";
const SH: &str = "http://www.w3.org/ns/shacl#";

/// What a test expects.
#[derive(Debug, Clone)]
pub enum Expected {
    /// A validation report.
    Report {
        /// `sh:conforms`.
        conforms: bool,
        /// The `sh:result`s, normalised (see [`Key`]).
        results: Vec<Key>,
    },
    /// `sht:Failure`: validation must fail with an error.
    Failure,
}

/// One SHACL test.
#[derive(Debug, Clone)]
pub struct ShaclTest {
    /// The last segment of its IRI (`class-001`).
    pub name: String,
    /// Its `rdfs:label`.
    pub label: String,
    /// The suite folder and the test's folder (`core/node`).
    pub group: String,
    /// The data graph file.
    pub data: PathBuf,
    /// The shapes graph file.
    pub shapes: PathBuf,
    /// The expected outcome.
    pub expected: Expected,
    /// `mf:status` when it is not `sht:approved` (`proposed`, ...; `none` when absent).
    pub unapproved: Option<String>,
}

/// A test's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The report is the expected one.
    Pass,
    /// It is not, and how.
    Fail(String),
    /// `kgfuse-shacl` refuses a feature the test uses (`ShaclError::Unsupported`).
    Unsupported(String),
    /// Another error (of `kgfuse-shacl`, or of reading the test).
    Error(String),
}

/// A test with its verdict.
#[derive(Debug)]
pub struct Outcome {
    /// The test.
    pub test: ShaclTest,
    /// How it went.
    pub verdict: Verdict,
}

/// A validation result reduced to what the comparison looks at: IRIs bare, literals
/// in N-Triples, every blank node `_:`, severity and component as full IRIs, a
/// complex path in `kgfuse-shacl`'s path syntax.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// `sh:focusNode`.
    pub focus: String,
    /// `sh:resultPath`.
    pub path: Option<String>,
    /// `sh:sourceConstraintComponent`.
    pub component: String,
    /// `sh:resultSeverity`.
    pub severity: String,
    /// `sh:sourceShape`.
    pub shape: Option<String>,
    /// `sh:value`.
    pub value: Option<String>,
}

impl Key {
    /// The comparison key of a result `kgfuse-shacl` returned.
    pub fn of_result(result: &ValidationResult) -> Self {
        let blank = |text: &str| {
            if text.starts_with("_:") {
                "_:".to_owned()
            } else {
                text.to_owned()
            }
        };
        let severity = if result.severity.contains(':') {
            result.severity.clone()
        } else {
            format!("{SH}{}", result.severity)
        };
        Self {
            focus: blank(&result.focus_node),
            path: result.path.clone(),
            component: result.component.clone(),
            severity,
            shape: result.shape.as_deref().map(blank),
            value: result.value.as_deref().map(blank),
        }
    }
}

impl fmt::Display for Key {
    /// One line, IRIs shortened: `focus ex:a, path ex:p, Class, Violation, shape
    /// ex:S, value ex:b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "focus {}", short(&self.focus))?;
        if let Some(path) = &self.path {
            write!(f, ", path {}", short(path))?;
        }
        let component = self.component.strip_prefix(SH).unwrap_or(&self.component);
        write!(
            f,
            ", {}, {}",
            component
                .strip_suffix("ConstraintComponent")
                .unwrap_or(component),
            short(&self.severity)
        )?;
        if let Some(shape) = &self.shape {
            write!(f, ", shape {}", short(shape))?;
        }
        if let Some(value) = &self.value {
            write!(f, ", value {}", short(value))?;
        }
        Ok(())
    }
}

/// IRIs of the test files' namespaces written with a prefix, for the report.
fn short(text: &str) -> String {
    const PREFIXES: [(&str, &str); 7] = [
        ("http://www.w3.org/ns/shacl#", "sh:"),
        ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdf:"),
        ("http://www.w3.org/2000/01/rdf-schema#", "rdfs:"),
        ("http://www.w3.org/2001/XMLSchema#", "xsd:"),
        ("http://example.org/shacl-test/", "ex:"),
        ("http://example.org/shacl/tests/", "ex:"),
        ("http://example.org/", "ex:"),
    ];
    let mut out = text.to_owned();
    // A typed literal: "1"^^<http://www.w3.org/2001/XMLSchema#integer> as "1"^^xsd:integer.
    if let Some(at) = out.find("^^<http://www.w3.org/2001/XMLSchema#")
        && out.ends_with('>')
    {
        out.pop();
        out.replace_range(at + 2..at + 3, "");
    }
    // The converted tests' namespaces: http://datashapes.org/sh/tests/core/node/class-001.test#
    while let Some(start) = out.find("http://datashapes.org/sh/tests/") {
        match out[start..].find(".test#") {
            Some(end) => out.replace_range(start..start + end + ".test#".len(), "ex:"),
            None => break,
        }
    }
    for (namespace, prefix) in PREFIXES {
        out = out.replace(namespace, prefix);
    }
    out
}

/// The tests of `manifest` and of the manifests it includes, sorted by folder and
/// name. `suite` (the `tests/core` directory) names the folders.
pub fn read_tests(manifest: &Path, suite: &Path) -> Result<Vec<ShaclTest>> {
    let mut tests = Vec::new();
    read_into(manifest, suite, &mut tests, 0)?;
    tests.sort_by(|a, b| (&a.group, &a.name).cmp(&(&b.group, &b.name)));
    Ok(tests)
}

fn read_into(
    manifest: &Path,
    suite: &Path,
    tests: &mut Vec<ShaclTest>,
    depth: usize,
) -> Result<()> {
    if depth > 16 {
        bail!("{}: mf:include nests too deep", manifest.display());
    }
    let manifest = manifest
        .canonicalize()
        .with_context(|| manifest.display().to_string())?;
    let iri = NamedNode::new(kgfuse_core::file_iri(&manifest))?;
    let graph = parse_turtle(&manifest)?;
    let subject = NamedOrBlankNode::from(iri);
    // mf:include is repeated in these manifests (a list in the SPARQL ones).
    let mut includes = Vec::new();
    for include in objects(&graph, &subject, MF, "include") {
        match include {
            Term::NamedNode(_) if !is_nil(&include) => includes.push(path_of(&include)?),
            Term::BlankNode(_) => {
                for member in list(&graph, &include)? {
                    includes.push(path_of(&member)?);
                }
            }
            _ => {}
        }
    }
    includes.sort();
    for include in includes {
        read_into(&include, suite, tests, depth + 1)?;
    }
    let group = group_of(&manifest, suite);
    for entries in objects(&graph, &subject, MF, "entries") {
        for entry in list(&graph, &entries)? {
            let Term::NamedNode(node) = entry else {
                bail!("{}: entry {entry} is not an IRI", manifest.display());
            };
            tests.push(
                read_test(&graph, &node, &group)
                    .with_context(|| format!("{}: {node}", manifest.display()))?,
            );
        }
    }
    Ok(())
}

/// `core/node` for `<suite>/node/class-001.ttl` with `suite` = `.../tests/core`.
fn group_of(file: &Path, suite: &Path) -> String {
    let suite = suite.canonicalize().unwrap_or_else(|_| suite.to_owned());
    let root = suite
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = file
        .parent()
        .and_then(|p| p.strip_prefix(&suite).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if folder.is_empty() {
        root
    } else {
        format!("{root}/{folder}")
    }
}

fn read_test(graph: &Graph, node: &NamedNode, group: &str) -> Result<ShaclTest> {
    let subject = NamedOrBlankNode::from(node.clone());
    let name = node
        .as_str()
        .rsplit(['/', '#'])
        .next()
        .unwrap_or(node.as_str())
        .to_owned();
    let label = match object_of(graph, &subject, rdfs::LABEL) {
        Some(Term::Literal(l)) => l.value().to_owned(),
        _ => String::new(),
    };
    let kind = object_of(graph, &subject, rdf::TYPE);
    if kind != Some(Term::NamedNode(sht("Validate"))) {
        bail!("a test of type {kind:?}, not sht:Validate");
    }
    let Some(action) = object(graph, &subject, MF, "action").and_then(as_subject) else {
        bail!("no mf:action");
    };
    let file = |local: &str| -> Result<PathBuf> {
        match object(graph, &action, SHT, local) {
            Some(term) => path_of(&term),
            None => bail!("no sht:{local}"),
        }
    };
    let (data, shapes) = (file("dataGraph")?, file("shapesGraph")?);
    let expected = match object(graph, &subject, MF, "result") {
        Some(Term::NamedNode(n)) if n == sht("Failure") => Expected::Failure,
        Some(report) => match as_subject(report) {
            Some(report) => read_report(graph, &report)?,
            None => bail!("mf:result is neither a report nor sht:Failure"),
        },
        None => bail!("no mf:result"),
    };
    let unapproved = match object(graph, &subject, MF, "status") {
        Some(Term::NamedNode(status)) if status == sht("approved") => None,
        Some(Term::NamedNode(status)) => Some(
            status
                .as_str()
                .strip_prefix(SHT)
                .unwrap_or(status.as_str())
                .to_owned(),
        ),
        _ => Some("none".into()),
    };
    Ok(ShaclTest {
        name,
        label,
        group: group.to_owned(),
        data,
        shapes,
        expected,
        unapproved,
    })
}

fn read_report(graph: &Graph, report: &NamedOrBlankNode) -> Result<Expected> {
    let conforms = match object(graph, report, SH, "conforms") {
        Some(Term::Literal(l)) if matches!(l.value(), "true" | "1") => true,
        Some(Term::Literal(l)) if matches!(l.value(), "false" | "0") => false,
        other => bail!("sh:conforms is {other:?}"),
    };
    let mut results = Vec::new();
    for result in objects(graph, report, SH, "result") {
        let Some(result) = as_subject(result) else {
            bail!("an sh:result that is a literal");
        };
        let one = |local: &str| object(graph, &result, SH, local);
        let Some(focus) = one("focusNode") else {
            bail!("an sh:result without sh:focusNode");
        };
        let Some(Term::NamedNode(component)) = one("sourceConstraintComponent") else {
            bail!("an sh:result without an IRI sh:sourceConstraintComponent");
        };
        let Some(Term::NamedNode(severity)) = one("resultSeverity") else {
            bail!("an sh:result without an IRI sh:resultSeverity");
        };
        results.push(Key {
            focus: normalised(focus.as_ref()),
            path: one("resultPath")
                .map(|p| render_path(graph, &p, 0))
                .transpose()?,
            component: component.as_str().to_owned(),
            severity: severity.as_str().to_owned(),
            shape: one("sourceShape").map(|s| normalised(s.as_ref())),
            value: one("value").map(|v| normalised(v.as_ref())),
        });
    }
    results.sort();
    Ok(Expected::Report { conforms, results })
}

/// IRIs bare, literals in N-Triples, every blank node `_:`.
fn normalised(term: TermRef<'_>) -> String {
    match term {
        TermRef::NamedNode(n) => n.as_str().to_owned(),
        TermRef::BlankNode(_) => "_:".to_owned(),
        TermRef::Literal(l) => l.to_string(),
    }
}

/// A SHACL property path of the expected report in the syntax `kgfuse-shacl`
/// reports (`ValidationResult::path`): an IRI bare, `^p`, `(a/b)`, `(a|b)`, `p*`,
/// `p+`, `p?`.
pub fn render_path(graph: &Graph, term: &Term, depth: usize) -> Result<String> {
    if depth > 32 {
        bail!("an sh:resultPath nested too deep");
    }
    let node = match term {
        Term::NamedNode(n) => return Ok(n.as_str().to_owned()),
        Term::BlankNode(b) => NamedOrBlankNode::from(b.clone()),
        Term::Literal(l) => bail!("a literal {l} as sh:resultPath"),
    };
    let join = |head: &Term, separator: &str| -> Result<String> {
        let parts = list(graph, head)?
            .iter()
            .map(|p| render_path(graph, p, depth + 1))
            .collect::<Result<Vec<_>>>()?;
        Ok(format!("({})", parts.join(separator)))
    };
    // A list is a sequence path, whatever else the node carries (as the suite's
    // path-strange tests expect).
    if object_of(graph, &node, rdf::FIRST).is_some() {
        return join(term, "/");
    }
    let inner = |local: &str| -> Result<Option<String>> {
        object(graph, &node, SH, local)
            .map(|t| render_path(graph, &t, depth + 1))
            .transpose()
    };
    if let Some(p) = inner("inversePath")? {
        return Ok(format!("^{p}"));
    }
    for (local, suffix) in [
        ("zeroOrMorePath", "*"),
        ("oneOrMorePath", "+"),
        ("zeroOrOnePath", "?"),
    ] {
        if let Some(p) = inner(local)? {
            return Ok(format!("{p}{suffix}"));
        }
    }
    match object(graph, &node, SH, "alternativePath") {
        Some(alternatives) => join(&alternatives, "|"),
        None => bail!("{term} is not a SHACL property path"),
    }
}

/// Runs every test of the suite (`tests/core`), writes the report, and returns
/// whether no supported approved test failed.
pub fn run(args: impl Iterator<Item = String>) -> Result<bool> {
    let mut args = args;
    let (mut suite, mut report_path, mut verbose) = (None, None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--suite" => suite = args.next().map(PathBuf::from),
            "--report" => report_path = args.next().map(PathBuf::from),
            "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!(
                    "kgfuse-w3c shacl --suite <data-shapes>/data-shapes-test-suite/tests/core \
                     [--report FILE.md] [--verbose]\n\
                     --verbose prints the expected and returned results of each failure"
                );
                return Ok(true);
            }
            other => bail!("unknown argument {other} (see shacl --help)"),
        }
    }
    let Some(suite) = suite else {
        bail!(
            "--suite <data-shapes>/data-shapes-test-suite/tests/core is required \
             (tests/w3c/fetch-shacl.sh fetches it)"
        );
    };
    let tests = read_tests(&suite.join("manifest.ttl"), &suite)?;
    eprintln!("{}: {} tests", suite.display(), tests.len());
    let outcomes: Vec<Outcome> = tests
        .into_iter()
        .map(|test| {
            let verdict = verdict(&test, verbose);
            if verbose && verdict != Verdict::Pass {
                eprintln!("   {} {}: {verdict:?}", test.group, test.name);
            }
            Outcome { test, verdict }
        })
        .collect();
    let commit = suite
        .ancestors()
        .map(|dir| dir.join("COMMIT"))
        .find_map(|file| std::fs::read_to_string(file).ok())
        .map(|c| c.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let text = shacl_report::render(&outcomes, &commit);
    match report_path {
        Some(path) => {
            std::fs::write(&path, &text).with_context(|| path.display().to_string())?;
            eprintln!("report written to {}", path.display());
        }
        None => print!("{text}"),
    }
    eprintln!("{}", shacl_report::summary_line(&outcomes));
    let gating = outcomes.iter().filter(|o| gates(o)).count();
    if gating > 0 {
        eprintln!("{gating} approved test(s) fail or end in an error in kgfuse-shacl");
    }
    Ok(gating == 0)
}

/// Whether an outcome fails the run: an approved test kgfuse-shacl does not refuse
/// and does not pass.
pub fn gates(outcome: &Outcome) -> bool {
    outcome.test.unapproved.is_none()
        && matches!(outcome.verdict, Verdict::Fail(_) | Verdict::Error(_))
}

/// The test through kgfuse-shacl; a panic is an error, not the end of the run.
fn verdict(test: &ShaclTest, verbose: bool) -> Verdict {
    match std::panic::catch_unwind(AssertUnwindSafe(|| check(test, verbose))) {
        Ok(Ok(verdict)) => verdict,
        Ok(Err(e)) => Verdict::Error(format!("harness: {}", one_line(&format!("{e:#}")))),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Verdict::Error(one_line(&format!("panicked: {message}")))
        }
    }
}

/// The verdict; `Err` only when the harness cannot read the test's files.
fn check(test: &ShaclTest, verbose: bool) -> Result<Verdict> {
    let data: Vec<oxrdf::Triple> = parse_turtle(&test.data)?
        .iter()
        .map(|t| t.into_owned())
        .collect();
    let shapes_file = test
        .shapes
        .canonicalize()
        .with_context(|| test.shapes.display().to_string())?;
    let shapes_iri = kgfuse_core::file_iri(&shapes_file);
    let shapes_text =
        std::fs::read_to_string(&shapes_file).with_context(|| shapes_file.display().to_string())?;
    let report = Shapes::from_turtle(&[(shapes_iri.as_str(), shapes_text.as_str())])
        .and_then(|shapes| shapes.validate(&data));
    let report = match (report, &test.expected) {
        (Err(_), Expected::Failure) => return Ok(Verdict::Pass),
        (Err(ShaclError::Unsupported { parameter, .. }), _) => {
            return Ok(Verdict::Unsupported(parameter));
        }
        (Err(e), _) => {
            return Ok(Verdict::Error(without_blank_labels(&one_line(
                &e.to_string(),
            ))));
        }
        (Ok(_), Expected::Failure) => {
            return Ok(Verdict::Fail("validated; the test expects an error".into()));
        }
        (Ok(report), Expected::Report { .. }) => report,
    };
    let Expected::Report { conforms, results } = &test.expected else {
        unreachable!("a failure is handled above");
    };
    let mut got: Vec<Key> = report.results.iter().map(Key::of_result).collect();
    got.sort();
    let mismatch = describe(*conforms, results, report.conforms, &got);
    if let Some(reason) = &mismatch
        && verbose
    {
        eprintln!("== {} {} ({}): {reason}", test.group, test.name, test.label);
        eprintln!("expected: conforms {conforms}");
        for key in results {
            eprintln!("  {key}");
        }
        eprintln!("returned: conforms {}", report.conforms);
        for result in &report.results {
            eprintln!("  {}   [{}]", Key::of_result(result), result.message);
        }
    }
    Ok(mismatch.map_or(Verdict::Pass, Verdict::Fail))
}

/// `None` when the reports agree, else what differs, in one line.
pub fn describe(
    conforms: bool,
    expected: &[Key],
    got_conforms: bool,
    got: &[Key],
) -> Option<String> {
    let mut counts: BTreeMap<&Key, i64> = BTreeMap::new();
    for key in expected {
        *counts.entry(key).or_default() += 1;
    }
    for key in got {
        *counts.entry(key).or_default() -= 1;
    }
    let missing: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .flat_map(|(key, n)| std::iter::repeat_n(key.to_string(), usize::try_from(*n).unwrap_or(0)))
        .collect();
    let unexpected: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n < 0)
        .flat_map(|(key, n)| {
            std::iter::repeat_n(key.to_string(), usize::try_from(-*n).unwrap_or(0))
        })
        .collect();
    if conforms == got_conforms && missing.is_empty() && unexpected.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if conforms != got_conforms {
        parts.push(format!("conforms {got_conforms}, expected {conforms}"));
    }
    let listed = |what: &str, keys: &[String]| {
        let mut text = format!(
            "{} {what}: {}",
            keys.len(),
            keys[..keys.len().min(2)].join("; ")
        );
        if keys.len() > 2 {
            text.push_str(&format!("; and {} more", keys.len() - 2));
        }
        text
    };
    if !missing.is_empty() {
        parts.push(listed("missing", &missing));
    }
    if !unexpected.is_empty() {
        parts.push(listed("unexpected", &unexpected));
    }
    Some(format!(
        "{} ({} results expected, {} returned)",
        parts.join("; "),
        expected.len(),
        got.len()
    ))
}

/// Blank node labels (random for each parse) written `_:b`, so that the report
/// does not change from run to run.
fn without_blank_labels(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("_:") {
        out.push_str(&rest[..at]);
        out.push_str("_:b");
        rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    }
    out.push_str(rest);
    out
}

/// The first line.
fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}

/// Parses a Turtle file with its own `file://` IRI as the base.
fn parse_turtle(path: &Path) -> Result<Graph> {
    let path = path
        .canonicalize()
        .with_context(|| path.display().to_string())?;
    let text = std::fs::read(&path).with_context(|| path.display().to_string())?;
    let mut graph = Graph::new();
    for triple in oxttl::TurtleParser::new()
        .with_base_iri(kgfuse_core::file_iri(&path))?
        .for_slice(&text)
    {
        let triple = triple.with_context(|| path.display().to_string())?;
        graph.insert(&triple);
    }
    Ok(graph)
}

fn sht(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{SHT}{local}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(turtle: &str) -> Graph {
        let mut graph = Graph::new();
        for triple in oxttl::TurtleParser::new().for_slice(turtle.as_bytes()) {
            graph.insert(&triple.expect("test Turtle parses"));
        }
        graph
    }

    const PREFIXES: &str = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n\
        @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n\
        @prefix ex: <http://example.org/> .\n";

    fn path_of_turtle(turtle: &str) -> String {
        let graph = graph(&format!("{PREFIXES}ex:r sh:resultPath {turtle} ."));
        let subject = NamedOrBlankNode::from(NamedNode::new_unchecked("http://example.org/r"));
        let path = object(&graph, &subject, SH, "resultPath").expect("a path");
        render_path(&graph, &path, 0).expect("a valid path")
    }

    #[test]
    fn paths_render_in_kgfuse_shacl_syntax() {
        assert_eq!(path_of_turtle("ex:p"), "http://example.org/p");
        assert_eq!(
            path_of_turtle("( [ sh:inversePath ex:p ] [ sh:inversePath ex:p ] )"),
            "(^http://example.org/p/^http://example.org/p)"
        );
        assert_eq!(
            path_of_turtle("[ sh:alternativePath ( ex:a [ sh:zeroOrMorePath ex:b ] ) ]"),
            "(http://example.org/a|http://example.org/b*)"
        );
        assert_eq!(
            path_of_turtle("[ sh:oneOrMorePath [ sh:zeroOrOnePath ex:c ] ]"),
            "http://example.org/c?+"
        );
        // A list node that also carries sh:inversePath is a sequence.
        assert_eq!(
            path_of_turtle("[ rdf:first ex:p ; rdf:rest ( ex:q ) ; sh:inversePath ex:p ]"),
            "(http://example.org/p/http://example.org/q)"
        );
    }

    fn result(focus: &str, value: Option<&str>, severity: &str) -> ValidationResult {
        ValidationResult {
            focus_node: focus.into(),
            path: Some("http://example.org/p".into()),
            component: format!("{SH}ClassConstraintComponent"),
            severity: severity.into(),
            message: "a message the comparison ignores".into(),
            value: value.map(Into::into),
            shape: Some("_:kgfuse0".into()),
        }
    }

    fn expected(focus: &str, value: Option<&str>) -> Key {
        Key {
            focus: focus.into(),
            path: Some("http://example.org/p".into()),
            component: format!("{SH}ClassConstraintComponent"),
            severity: format!("{SH}Violation"),
            shape: Some("_:".into()),
            value: value.map(Into::into),
        }
    }

    #[test]
    fn blank_nodes_match_any_blank_node_and_severity_is_an_iri() {
        let got = [
            Key::of_result(&result("_:b7", Some("\"1\""), "Violation")),
            Key::of_result(&result("http://example.org/a", None, "Violation")),
        ];
        let mut got = got.to_vec();
        got.sort();
        let mut want = vec![
            expected("http://example.org/a", None),
            expected("_:", Some("\"1\"")),
        ];
        want.sort();
        assert_eq!(describe(false, &want, false, &got), None);
        // A custom severity stays a full IRI.
        let custom = Key::of_result(&result("_:x", None, "http://example.org/MySeverity"));
        assert_eq!(custom.severity, "http://example.org/MySeverity");
    }

    #[test]
    fn results_compare_as_multisets() {
        let one = expected("http://example.org/a", Some("http://example.org/b"));
        let twice = [one.clone(), one.clone()];
        let reason = describe(false, &twice, false, std::slice::from_ref(&one))
            .expect("a duplicate result is missing");
        assert!(reason.starts_with("1 missing: focus ex:a"), "{reason}");
        let reason = describe(true, &[], false, &twice).expect("conforms differs");
        assert!(
            reason.starts_with("conforms false, expected true; 2 unexpected"),
            "{reason}"
        );
        assert_eq!(describe(true, &[], true, &[]), None);
    }

    #[test]
    fn blank_node_labels_are_masked_in_errors() {
        assert_eq!(
            without_blank_labels("invalid shape _:fb38ed8dd4e9: a path, _:x1 and _:"),
            "invalid shape _:b: a path, _:b and _:b"
        );
    }

    #[test]
    fn short_names_for_the_report() {
        assert_eq!(
            short("http://datashapes.org/sh/tests/core/node/class-001.test#John"),
            "ex:John"
        );
        assert_eq!(
            short("(^http://example.org/shacl/tests/p/^http://example.org/shacl/tests/p)"),
            "(^ex:p/^ex:p)"
        );
        assert_eq!(
            short("\"1\"^^<http://www.w3.org/2001/XMLSchema#integer>"),
            "\"1\"^^xsd:integer"
        );
    }
}
