//! Read-only SPARQL for callers the store does not trust with writes: the MCP
//! `sparql_query` tool and the HTTP endpoint. The query is parsed (an update does
//! not parse as a query and is refused), its solutions are cut at a row limit
//! inside the algebra (so a huge result is never materialised), the protocol's
//! dataset replaces the query's own, and it runs under a timeout.

use crate::algebra::map_where;
use crate::sparql::parser;
use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
use oxigraph::model::NamedNode;
use spargebra::Query;
use spargebra::algebra::{GraphPattern, QueryDataset};
use std::time::Duration;

/// How an untrusted query may run.
#[derive(Debug, Clone)]
pub struct ReadOnlyOptions {
    /// Cancel the query after this long.
    pub timeout: Duration,
    /// Most solutions (SELECT) or triples (CONSTRUCT, DESCRIBE) returned.
    pub max_rows: usize,
    /// The SPARQL Protocol's `default-graph-uri`s. With these or `named_graphs`,
    /// the query runs on exactly this dataset, whatever its FROM clauses say.
    pub default_graphs: Vec<NamedNode>,
    /// The SPARQL Protocol's `named-graph-uri`s.
    pub named_graphs: Vec<NamedNode>,
}

impl Default for ReadOnlyOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_rows: 1000,
            default_graphs: Vec::new(),
            named_graphs: Vec::new(),
        }
    }
}

/// A query's outcome cut at [`ReadOnlyOptions::max_rows`].
#[derive(Debug, Clone, PartialEq)]
pub struct LimitedOutcome {
    /// At most `max_rows` solutions or triples.
    pub outcome: QueryOutcome,
    /// Whether more solutions or triples existed.
    pub truncated: bool,
}

/// Whether `text` parses as a SPARQL Update with the given prefixes.
pub fn is_update(text: &str, prefixes: &[(String, String)]) -> bool {
    let options = QueryOptions {
        prefixes: prefixes.to_vec(),
        ..QueryOptions::default()
    };
    parser(&options).is_ok_and(|parser| parser.parse_update(text).is_ok())
}

/// The query with its WHERE solutions cut at `max` (a query's own LIMIT stays
/// inside). CONSTRUCT and DESCRIBE are cut on solutions too: each solution gives
/// at least one triple unless the template is empty, so their triples are cut again
/// afterwards.
pub(crate) fn limit_solutions(query: Query, max: usize) -> Query {
    if matches!(query, Query::Ask { .. }) {
        return query;
    }
    map_where(query, |pattern| GraphPattern::Slice {
        inner: Box::new(pattern),
        start: 0,
        length: Some(max),
    })
}

/// The query running on the given dataset instead of its own FROM / FROM NAMED
/// (nothing changes when both lists are empty).
pub(crate) fn with_dataset(mut query: Query, default: &[NamedNode], named: &[NamedNode]) -> Query {
    if default.is_empty() && named.is_empty() {
        return query;
    }
    let dataset = Some(QueryDataset {
        default: default.to_vec(),
        named: (!named.is_empty()).then(|| named.to_vec()),
    });
    match &mut query {
        Query::Select { dataset: d, .. }
        | Query::Construct { dataset: d, .. }
        | Query::Describe { dataset: d, .. }
        | Query::Ask { dataset: d, .. } => *d = dataset,
    }
    query
}

impl Graph {
    /// Runs `text` as a read-only query: updates are refused with
    /// [`GraphError::UpdateRefused`], syntax errors are [`GraphError::Syntax`],
    /// results are cut at `limits.max_rows` and the query is cancelled after
    /// `limits.timeout` ([`GraphError::Timeout`]). `options` gives the prefixes and
    /// the union default graph.
    pub fn query_read_only(
        &self,
        text: &str,
        options: &QueryOptions,
        limits: &ReadOnlyOptions,
    ) -> Result<LimitedOutcome, GraphError> {
        let options = QueryOptions {
            timeout: Some(limits.timeout),
            demote_after: Some(crate::sparql::DEMOTE_AFTER),
            ..options.clone()
        };
        let query = match crate::parse_query(text, &options) {
            Ok(query) => query,
            Err(_) if is_update(text, &options.prefixes) => return Err(GraphError::UpdateRefused),
            Err(e) => return Err(e),
        };
        let query = with_dataset(query, &limits.default_graphs, &limits.named_graphs);
        self.query_algebra_limited(query, limits.max_rows, &options)
    }

    /// Runs a parsed query with its solutions cut at `max_rows` inside the
    /// algebra (one more is asked for, to know whether any were left out), and
    /// its triples cut again for CONSTRUCT and DESCRIBE. Nothing is checked: the
    /// caller has parsed and vetted `query`.
    pub fn query_algebra_limited(
        &self,
        query: Query,
        max_rows: usize,
        options: &QueryOptions,
    ) -> Result<LimitedOutcome, GraphError> {
        let probe = max_rows.saturating_add(1);
        let outcome = self.query_algebra(limit_solutions(query, probe), &[], options)?;
        Ok(match outcome {
            QueryOutcome::Solutions {
                variables,
                mut rows,
            } => {
                let truncated = rows.len() > max_rows;
                rows.truncate(max_rows);
                LimitedOutcome {
                    outcome: QueryOutcome::Solutions { variables, rows },
                    truncated,
                }
            }
            QueryOutcome::Graph(mut triples) => {
                let truncated = triples.len() > max_rows;
                triples.truncate(max_rows);
                LimitedOutcome {
                    outcome: QueryOutcome::Graph(triples),
                    truncated,
                }
            }
            boolean @ QueryOutcome::Boolean(_) => LimitedOutcome {
                outcome: boolean,
                truncated: false,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Graph {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                "INSERT DATA { GRAPH <urn:g1> { <urn:a> <urn:p> 1 , 2 , 3 } \
                 GRAPH <urn:g2> { <urn:b> <urn:p> 4 } }",
                &QueryOptions::default(),
            )
            .expect("insert");
        graph
    }

    fn limits(max_rows: usize) -> ReadOnlyOptions {
        ReadOnlyOptions {
            max_rows,
            ..ReadOnlyOptions::default()
        }
    }

    fn rows(outcome: &LimitedOutcome) -> usize {
        match &outcome.outcome {
            QueryOutcome::Solutions { rows, .. } => rows.len(),
            QueryOutcome::Graph(triples) => triples.len(),
            QueryOutcome::Boolean(_) => 1,
        }
    }

    #[test]
    fn updates_are_refused_and_leave_the_store_alone() {
        let graph = sample();
        let options = QueryOptions::default();
        for update in [
            "INSERT DATA { <urn:x> <urn:p> 9 }",
            "DELETE WHERE { ?s ?p ?o }",
            "CLEAR ALL",
        ] {
            assert!(is_update(update, &options.prefixes), "{update}");
            let refused = graph.query_read_only(update, &options, &limits(10));
            assert!(
                matches!(refused, Err(GraphError::UpdateRefused)),
                "{update}: {refused:?}"
            );
        }
        assert_eq!(graph.len().expect("len"), 4);
        let broken = graph.query_read_only("SELECT ?x WHERE {", &options, &limits(10));
        assert!(matches!(broken, Err(GraphError::Syntax(_))), "{broken:?}");
    }

    #[test]
    fn results_are_cut_at_the_row_limit_and_say_so() {
        let graph = sample();
        let options = QueryOptions::default();
        let select = "SELECT ?o WHERE { ?s ?p ?o }";
        let cut = graph
            .query_read_only(select, &options, &limits(2))
            .expect("select");
        assert_eq!((rows(&cut), cut.truncated), (2, true));
        let exact = graph
            .query_read_only(select, &options, &limits(4))
            .expect("select");
        assert_eq!((rows(&exact), exact.truncated), (4, false));
        let construct = graph
            .query_read_only(
                "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
                &options,
                &limits(3),
            )
            .expect("construct");
        assert_eq!((rows(&construct), construct.truncated), (3, true));
        let ask = graph
            .query_read_only("ASK { <urn:b> ?p 4 }", &options, &limits(0))
            .expect("ask");
        assert_eq!(ask.outcome, QueryOutcome::Boolean(true));
    }

    #[test]
    fn the_protocol_dataset_replaces_the_union_and_from_clauses() {
        let graph = sample();
        let options = QueryOptions::default();
        let g2 = NamedNode::new("urn:g2").expect("iri");
        let only_g2 = ReadOnlyOptions {
            default_graphs: vec![g2.clone()],
            ..limits(10)
        };
        let outcome = graph
            .query_read_only(
                "SELECT ?o FROM <urn:g1> WHERE { ?s ?p ?o }",
                &options,
                &only_g2,
            )
            .expect("select");
        assert_eq!(rows(&outcome), 1, "default-graph-uri wins over FROM");
        let named = ReadOnlyOptions {
            named_graphs: vec![g2],
            ..limits(10)
        };
        let outcome = graph
            .query_read_only(
                "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }",
                &options,
                &named,
            )
            .expect("select");
        assert_eq!(rows(&outcome), 1, "only urn:g2 is named");
        let outcome = graph
            .query_read_only("SELECT ?o WHERE { ?s ?p ?o }", &options, &named)
            .expect("select");
        assert_eq!(rows(&outcome), 0, "the default graph is empty then");
    }

    #[test]
    fn derived_integer_casts_are_offered_to_untrusted_queries_too() {
        let graph = sample();
        let outcome = graph
            .query_read_only(
                "SELECT ?o WHERE { ?s <urn:p> ?o FILTER(xsd:unsignedByte(STR(?o)) >= 3) }",
                &QueryOptions::default(),
                &limits(10),
            )
            .expect("xsd:unsignedByte is offered");
        assert_eq!((rows(&outcome), outcome.truncated), (2, false));
    }

    #[test]
    fn the_query_limit_stays_inside_the_cut() {
        let query = spargebra::SparqlParser::new()
            .parse_query("SELECT ?s WHERE { ?s ?p ?o } LIMIT 5000")
            .expect("query");
        let Query::Select { pattern, .. } = limit_solutions(query, 1001) else {
            panic!("a SELECT stays a SELECT");
        };
        let GraphPattern::Slice {
            inner,
            start: 0,
            length: Some(1001),
        } = pattern
        else {
            panic!("not cut at 1001: {pattern:?}");
        };
        assert!(
            matches!(
                *inner,
                GraphPattern::Slice {
                    length: Some(5000),
                    ..
                }
            ),
            "the query's own LIMIT stays inside: {inner:?}"
        );
    }
}
