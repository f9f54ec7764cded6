//! `sparql_query`: read-only SPARQL with a timeout and a row limit.

use kgfuse::model::{Term, Triple};
use kgfuse::{Engine, QueryOutcome};
use serde::Serialize;
use spargebra::Query;
use spargebra::algebra::GraphPattern;
use std::fmt::Write as _;
use std::time::Duration;

/// How long `sparql_query` lets a query run.
pub const SPARQL_TIMEOUT: Duration = Duration::from_secs(10);
/// Most rows (SELECT) or triples (CONSTRUCT, DESCRIBE) `sparql_query` returns.
pub const SPARQL_MAX_ROWS: usize = 1000;
/// Longest query text accepted, in characters.
pub(crate) const MAX_QUERY_CHARS: usize = 100_000;
/// Rows or triples shown in the text summary.
const SUMMARY_ROWS: usize = 20;

/// A query's result as the tool returns it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum SparqlResult {
    /// SELECT.
    Solutions {
        /// Projected variables, without `?`.
        variables: Vec<String>,
        /// One row per solution; terms in N-Triples syntax, `null` when unbound.
        rows: Vec<Vec<Option<String>>>,
        /// Whether rows were cut at [`SPARQL_MAX_ROWS`].
        truncated: bool,
    },
    /// ASK.
    Boolean {
        /// The answer.
        boolean: bool,
    },
    /// CONSTRUCT, DESCRIBE.
    Graph {
        /// `[subject, predicate, object]` in N-Triples syntax.
        triples: Vec<[String; 3]>,
        /// Whether triples were cut at [`SPARQL_MAX_ROWS`].
        truncated: bool,
    },
}

impl SparqlResult {
    /// Rows or triples returned.
    pub(crate) fn size(&self) -> usize {
        match self {
            Self::Solutions { rows, .. } => rows.len(),
            Self::Boolean { .. } => 1,
            Self::Graph { triples, .. } => triples.len(),
        }
    }

    /// A short text rendering: the first rows or triples, and how many there are.
    pub(crate) fn summary(&self) -> String {
        let mut out = String::new();
        match self {
            Self::Boolean { boolean } => out.push_str(if *boolean { "true" } else { "false" }),
            Self::Solutions {
                variables,
                rows,
                truncated,
            } => {
                let header: Vec<String> = variables.iter().map(|v| format!("?{v}")).collect();
                out.push_str(&header.join("\t"));
                for row in rows.iter().take(SUMMARY_ROWS) {
                    let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("")).collect();
                    out.push('\n');
                    out.push_str(&cells.join("\t"));
                }
                let _ = write!(out, "\n{} row(s)", rows.len());
                tail(&mut out, rows.len(), *truncated);
            }
            Self::Graph { triples, truncated } => {
                for [s, p, o] in triples.iter().take(SUMMARY_ROWS) {
                    let _ = writeln!(out, "{s} {p} {o} .");
                }
                let _ = write!(out, "{} triple(s)", triples.len());
                tail(&mut out, triples.len(), *truncated);
            }
        }
        out
    }
}

/// Notes what the summary left out.
fn tail(out: &mut String, total: usize, truncated: bool) {
    if truncated {
        let _ = write!(out, " (truncated at {SPARQL_MAX_ROWS})");
    }
    if total > SUMMARY_ROWS {
        let _ = write!(
            out,
            "; the first {SUMMARY_ROWS} shown here, all in the structured content"
        );
    }
}

/// Parses `text` as a query (an update does not parse as one and is refused),
/// bounds it to [`SPARQL_MAX_ROWS`] + 1 solutions and runs it with
/// [`SPARQL_TIMEOUT`]. Errors are one-line messages.
pub(crate) fn read_only(engine: &Engine, text: &str) -> Result<SparqlResult, String> {
    let mut options = engine.query_options();
    options.timeout = Some(SPARQL_TIMEOUT);
    let query = match kgfuse_graph::parse_query(text, &options) {
        Ok(query) => query,
        Err(e) => {
            return Err(if is_update(text, &options.prefixes) {
                "sparql_query is read-only: SPARQL Update (INSERT, DELETE, LOAD, CLEAR, CREATE, \
                 DROP, COPY, MOVE, ADD) is refused; send a SELECT, ASK, CONSTRUCT or DESCRIBE query"
                    .to_owned()
            } else {
                e.to_string()
            });
        }
    };
    let outcome = engine
        .store()
        .graph()
        .query_algebra(bounded(query), &[], &options)
        .map_err(|e| e.to_string())?;
    Ok(match outcome {
        QueryOutcome::Boolean(boolean) => SparqlResult::Boolean { boolean },
        QueryOutcome::Solutions { variables, rows } => {
            let truncated = rows.len() > SPARQL_MAX_ROWS;
            let rows = rows
                .into_iter()
                .take(SPARQL_MAX_ROWS)
                .map(|row| row.iter().map(|cell| cell.as_ref().map(term)).collect())
                .collect();
            SparqlResult::Solutions {
                variables,
                rows,
                truncated,
            }
        }
        QueryOutcome::Graph(triples) => {
            let truncated = triples.len() > SPARQL_MAX_ROWS;
            SparqlResult::Graph {
                triples: triples.iter().take(SPARQL_MAX_ROWS).map(triple).collect(),
                truncated,
            }
        }
    })
}

/// Whether `text` is a SPARQL Update (with the store's predeclared prefixes).
pub(crate) fn is_update(text: &str, prefixes: &[(String, String)]) -> bool {
    let mut parser = spargebra::SparqlParser::new();
    for (prefix, iri) in prefixes {
        parser = match parser.with_prefix(prefix, iri) {
            Ok(with) => with,
            Err(_) => return false,
        };
    }
    parser.parse_update(text).is_ok()
}

/// The query with its WHERE solutions cut at one more than [`SPARQL_MAX_ROWS`], so
/// a huge result is never materialised and a cut is detected. (CONSTRUCT and
/// DESCRIBE are cut on solutions too; their triples are cut again afterwards.)
pub(crate) fn bounded(query: Query) -> Query {
    let slice = |pattern: GraphPattern| GraphPattern::Slice {
        inner: Box::new(pattern),
        start: 0,
        length: Some(SPARQL_MAX_ROWS + 1),
    };
    match query {
        Query::Select {
            dataset,
            pattern,
            base_iri,
        } => Query::Select {
            dataset,
            pattern: slice(pattern),
            base_iri,
        },
        Query::Construct {
            template,
            dataset,
            pattern,
            base_iri,
        } => Query::Construct {
            template,
            dataset,
            pattern: slice(pattern),
            base_iri,
        },
        Query::Describe {
            dataset,
            pattern,
            base_iri,
        } => Query::Describe {
            dataset,
            pattern: slice(pattern),
            base_iri,
        },
        ask @ Query::Ask { .. } => ask,
    }
}

/// A term in N-Triples syntax.
fn term(term: &Term) -> String {
    term.to_string()
}

/// A triple as three N-Triples terms.
fn triple(triple: &Triple) -> [String; 3] {
    [
        triple.subject.to_string(),
        triple.predicate.to_string(),
        triple.object.to_string(),
    ]
}
