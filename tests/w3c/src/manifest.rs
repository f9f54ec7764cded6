//! Reads W3C test manifests (the `mf:` and `qt:` vocabularies) into a list of tests,
//! following `mf:include` from the top manifest down.

use crate::rdf::{object, objects, optional_list};
use anyhow::{Context, Result, bail};
use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::{Graph, NamedNode, NamedOrBlankNode, Term, TripleRef};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

const MF: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#";
const QT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#";
const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// What a test checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The query must parse.
    PositiveSyntax,
    /// The query must be rejected.
    NegativeSyntax,
    /// The update must parse.
    PositiveUpdateSyntax,
    /// The update must be rejected.
    NegativeUpdateSyntax,
    /// The query, run on the test's dataset, must give the expected results.
    QueryEvaluation,
    /// As [`Kind::QueryEvaluation`], compared as the CSV results serialisation.
    CsvResultFormat,
    /// A test this harness does not run, and why.
    NotRun(String),
}

/// One test of a manifest.
#[derive(Debug, Clone)]
pub struct Test {
    /// The test's IRI (`file://…/manifest.ttl#name`).
    pub id: String,
    /// The folder of its manifest (`aggregates`, `syntax-query`, …).
    pub group: String,
    /// Its `mf:name`.
    pub name: String,
    /// What it checks.
    pub kind: Kind,
    /// The query or update file.
    pub query: Option<PathBuf>,
    /// Files of the default graph (`qt:data`).
    pub data: Vec<PathBuf>,
    /// Files loaded as named graphs named by their own IRI (`qt:graphData`).
    pub graph_data: Vec<PathBuf>,
    /// The expected results file.
    pub result: Option<PathBuf>,
}

/// The tests of `manifest` and of every manifest it includes, in manifest order.
pub fn read(manifest: &Path) -> Result<Vec<Test>> {
    let mut tests = Vec::new();
    read_into(manifest, &mut tests)?;
    Ok(tests)
}

fn read_into(manifest: &Path, tests: &mut Vec<Test>) -> Result<()> {
    let manifest = manifest
        .canonicalize()
        .with_context(|| manifest.display().to_string())?;
    let iri = NamedNode::new(kgfuse_core::file_iri(&manifest))?;
    let graph = parse_turtle(&manifest, &iri)?;
    let group = manifest
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let subject = NamedOrBlankNode::from(iri.clone());
    for include in optional_list(&graph, object(&graph, &subject, MF, "include"))? {
        read_into(&path_of(&include)?, tests)?;
    }
    for entry in optional_list(&graph, object(&graph, &subject, MF, "entries"))? {
        let node = match entry {
            Term::NamedNode(n) => NamedOrBlankNode::from(n),
            Term::BlankNode(b) => NamedOrBlankNode::from(b),
            other => bail!("{}: entry {other} is not a node", manifest.display()),
        };
        tests.push(read_test(&graph, &node, &group)?);
    }
    Ok(())
}

fn read_test(graph: &Graph, node: &NamedOrBlankNode, group: &str) -> Result<Test> {
    let type_name = match object(graph, node, RDF_TYPE, "") {
        Some(Term::NamedNode(t)) => t.as_str().rsplit('#').next().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    let name = match object(graph, node, MF, "name") {
        Some(Term::Literal(l)) => l.value().to_owned(),
        _ => node.to_string(),
    };
    let mut test = Test {
        id: node.to_string(),
        group: group.to_owned(),
        name,
        kind: Kind::NotRun(type_name.clone()),
        query: None,
        data: Vec::new(),
        graph_data: Vec::new(),
        result: match object(graph, node, MF, "result") {
            Some(Term::NamedNode(r)) => Some(path_of(&Term::NamedNode(r))?),
            _ => None,
        },
    };
    let action = object(graph, node, MF, "action");
    test.kind = match type_name.trim_end_matches("11") {
        "PositiveSyntaxTest" => Kind::PositiveSyntax,
        "NegativeSyntaxTest" => Kind::NegativeSyntax,
        "PositiveUpdateSyntaxTest" => Kind::PositiveUpdateSyntax,
        "NegativeUpdateSyntaxTest" => Kind::NegativeUpdateSyntax,
        "QueryEvaluationTest" => Kind::QueryEvaluation,
        "CSVResultFormatTest" => Kind::CsvResultFormat,
        _ => return Ok(test),
    };
    match (&test.kind, action) {
        (Kind::QueryEvaluation | Kind::CsvResultFormat, Some(Term::BlankNode(action))) => {
            let action = NamedOrBlankNode::from(action);
            if object(graph, &action, QT, "serviceData").is_some() {
                test.kind = Kind::NotRun("SERVICE (kgfuse answers from its own store only)".into());
                return Ok(test);
            }
            test.query = object(graph, &action, QT, "query")
                .map(|q| path_of(&q))
                .transpose()?;
            test.data = objects(graph, &action, QT, "data")
                .iter()
                .map(path_of)
                .collect::<Result<_>>()?;
            test.graph_data = objects(graph, &action, QT, "graphData")
                .iter()
                .map(path_of)
                .collect::<Result<_>>()?;
        }
        (Kind::QueryEvaluation | Kind::CsvResultFormat, _) => {
            test.kind = Kind::NotRun("an action this harness does not read".into());
        }
        (_, Some(query @ Term::NamedNode(_))) => test.query = Some(path_of(&query)?),
        _ => test.kind = Kind::NotRun("a syntax test without a query file".into()),
    }
    Ok(test)
}

/// Parses a Turtle file with its own `file://` IRI as the base.
fn parse_turtle(path: &Path, base: &NamedNode) -> Result<Graph> {
    let file = File::open(path).with_context(|| path.display().to_string())?;
    let mut graph = Graph::new();
    for quad in RdfParser::from_format(RdfFormat::Turtle)
        .with_base_iri(base.as_str())?
        .for_reader(BufReader::new(file))
    {
        let quad = quad.with_context(|| path.display().to_string())?;
        graph.insert(TripleRef::from(quad.as_ref()));
    }
    Ok(graph)
}

/// The local path of a `file://` IRI.
pub fn path_of(term: &Term) -> Result<PathBuf> {
    let Term::NamedNode(iri) = term else {
        bail!("{term} is not a file IRI");
    };
    let Some(encoded) = iri.as_str().strip_prefix("file://") else {
        bail!("{iri} is not a file IRI");
    };
    let encoded = encoded.split('#').next().unwrap_or(encoded);
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok());
        match (byte, hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(decoded)) => {
                bytes.push(decoded);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(byte);
                rest = tail;
            }
        }
    }
    Ok(PathBuf::from(String::from_utf8(bytes)?))
}
