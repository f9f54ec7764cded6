//! `sparql_query`: read-only SPARQL with a timeout and a row limit.

use kgfuse::model::{Term, Triple};
use kgfuse::{Engine, LimitedOutcome, QueryOutcome, ReadOnlyOptions};
use serde::Serialize;
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

/// Runs `text` read-only (updates refused) with [`SPARQL_TIMEOUT`], cut at
/// [`SPARQL_MAX_ROWS`]. Errors are one-line messages.
pub(crate) fn read_only(engine: &Engine, text: &str) -> Result<SparqlResult, String> {
    let limits = ReadOnlyOptions {
        timeout: SPARQL_TIMEOUT,
        max_rows: SPARQL_MAX_ROWS,
        ..ReadOnlyOptions::default()
    };
    let LimitedOutcome { outcome, truncated } = engine
        .sparql_read_only(text, &limits)
        .map_err(|e| format!("sparql_query: {e}"))?;
    Ok(match outcome {
        QueryOutcome::Boolean(boolean) => SparqlResult::Boolean { boolean },
        QueryOutcome::Solutions { variables, rows } => SparqlResult::Solutions {
            variables,
            rows: rows
                .iter()
                .map(|row| row.iter().map(|cell| cell.as_ref().map(term)).collect())
                .collect(),
            truncated,
        },
        QueryOutcome::Graph(triples) => SparqlResult::Graph {
            triples: triples.iter().map(triple).collect(),
            truncated,
        },
    })
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
