//! Generated SPARQL that cannot be changed by the text it is about.
//!
//! Queries are fixed templates; the terms they are about (entity IRIs, labels
//! taken from questions or documents) enter only through a `VALUES` block written
//! from validated RDF terms with their own escaping (`NamedNode` cannot contain `>`
//! or spaces; `Literal` escapes quotes, backslashes and newlines). The full text is
//! parsed before it runs, and the parsed query is what executes, so a label such as
//! `x" } ; DROP ALL #` stays one literal value.

use crate::RetrieveError;
use kgfuse_graph::model::Term;
use kgfuse_graph::{GraphError, QueryOptions, QueryOutcome, Rounds, parse_query};
use kgfuse_store::Store;

/// A graph pattern plus the values of one variable, as a runnable, limited SELECT.
/// The pattern is joined with the `VALUES` block in the same group, so the limit
/// applies to the matches for these values (a sub-select would be evaluated first,
/// over the whole store).
pub fn with_values(pattern: &str, variable: &str, terms: &[Term], limit: usize) -> String {
    format!(
        "SELECT * WHERE {{ {} {pattern} }} LIMIT {limit}",
        values(variable, terms)
    )
}

/// `VALUES ?variable { ... }` written from RDF terms (each with its own escaping).
pub fn values(variable: &str, terms: &[Term]) -> String {
    let rows: Vec<String> = terms.iter().map(ToString::to_string).collect();
    format!("VALUES ?{variable} {{ {} }}", rows.join(" "))
}

/// What a generated SELECT returned, with the text that ran.
pub struct Solutions {
    /// The query text, for `FusedContext::sparql`.
    pub text: String,
    /// Projected variables.
    pub variables: Vec<String>,
    /// One row per solution.
    pub rows: Vec<Vec<Option<Term>>>,
}

impl Solutions {
    /// The rows of a query's outcome (none for an ASK or CONSTRUCT).
    pub fn of(text: String, outcome: QueryOutcome) -> Self {
        let (variables, rows) = match outcome {
            QueryOutcome::Solutions { variables, rows } => (variables, rows),
            _ => (Vec::new(), Vec::new()),
        };
        Self {
            text,
            variables,
            rows,
        }
    }

    /// Index of a projected variable.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.variables.iter().position(|v| v == name)
    }
}

/// A generated query that was not run because it names terms the store does not know.
#[derive(Debug, Clone)]
pub struct Rejected {
    /// The query text.
    pub text: String,
    /// The unknown terms, e.g. `predicate <urn:x>`.
    pub unknown: Vec<String>,
}

impl Rejected {
    /// As a trace entry.
    pub fn dropped(&self) -> kgfuse_core::context::Dropped {
        kgfuse_core::context::Dropped {
            iri: self.text.clone(),
            why: format!(
                "rejected before running: not in the loaded ontology or the data: {}",
                self.unknown.join(", ")
            ),
        }
    }
}

/// Parses a generated SELECT, checks its predicates and classes against the store
/// ([`kgfuse_graph::Graph::unknown_terms`]) and runs it only when all are known.
/// Used where a query's vocabulary is not fixed by kgfuse's own templates.
pub fn run_checked(
    store: &Store,
    text: String,
) -> Result<Result<Solutions, Rejected>, RetrieveError> {
    let mut outcomes = run_checked_all(store, vec![text])?;
    outcomes
        .pop()
        .ok_or_else(|| RetrieveError::Invalid("no outcome for the query".into()))
}

/// [`run_checked`] for several queries of one stage, in order: the ones that
/// pass the check run together ([`kgfuse_graph::Graph::select_many`]: one round
/// trip to a remote graph).
pub fn run_checked_all(
    store: &Store,
    texts: Vec<String>,
) -> Result<Vec<Result<Solutions, Rejected>>, RetrieveError> {
    let options = store.query_options();
    let mut outcomes: Vec<Option<Result<Solutions, Rejected>>> = Vec::new();
    let mut runnable = Vec::new();
    for text in texts {
        let parsed = parse_query(&text, &options)?;
        let unknown = store
            .graph()
            .unknown_terms(&kgfuse_graph::query_vocabulary(&parsed))?;
        if unknown.is_empty() {
            runnable.push((outcomes.len(), text, parsed));
            outcomes.push(None);
        } else {
            outcomes.push(Some(Err(Rejected { text, unknown })));
        }
    }
    let queries = runnable.iter().map(|(_, _, q)| q.clone()).collect();
    let results = store.graph().select_many(queries, &options);
    for ((at, text, _), result) in runnable.into_iter().zip(results) {
        outcomes[at] = Some(Ok(Solutions::of(text, result?)));
    }
    Ok(outcomes.into_iter().flatten().collect())
}

/// Parses and runs a generated SELECT.
pub fn run(store: &Store, text: String) -> Result<Solutions, RetrieveError> {
    run_with(store, text, store.query_options())
}

/// [`run`] for a read of the whole store on kgfuse's own behalf (the lexicon's
/// scans), without the store's query timeout: its time grows with the store,
/// not with a question, and a timeout would leave every question of a large
/// store unanswerable.
pub fn run_whole_store(store: &Store, text: String) -> Result<Solutions, RetrieveError> {
    let options = QueryOptions {
        timeout: None,
        ..store.query_options()
    };
    run_with(store, text, options)
}

fn run_with(
    store: &Store,
    text: String,
    options: QueryOptions,
) -> Result<Solutions, RetrieveError> {
    let parsed = parse_query(&text, &options)?;
    let outcome = store.graph().query_algebra(parsed, &[], &options)?;
    Ok(Solutions::of(text, outcome))
}

/// [`run`] for several queries of one stage, together
/// ([`kgfuse_graph::Graph::select_many`]: one round trip to a remote graph).
pub fn run_all(store: &Store, texts: Vec<String>) -> Result<Vec<Solutions>, RetrieveError> {
    let options = store.query_options();
    let parsed = texts
        .iter()
        .map(|text| parse_query(text, &options))
        .collect::<Result<Vec<_>, _>>()?;
    let outcomes = store.graph().select_many(parsed, &options);
    texts
        .into_iter()
        .zip(outcomes)
        .map(|(text, outcome)| Ok(Solutions::of(text, outcome?)))
        .collect()
}

/// One generated SELECT read as [`Rounds`], with other stages' reads.
pub struct OneRead {
    text: Option<String>,
    options: QueryOptions,
    answer: Option<Solutions>,
}

impl OneRead {
    /// Reads `text`, if any, parsed with the store's options.
    pub fn new(store: &Store, text: Option<String>) -> Self {
        Self {
            text,
            options: store.query_options(),
            answer: None,
        }
    }

    /// A read whose answer is known already: it asks nothing.
    pub fn answered(answer: Solutions) -> Self {
        Self {
            text: None,
            options: QueryOptions::default(),
            answer: Some(answer),
        }
    }

    /// The answer, once read.
    pub fn finish(self) -> Option<Solutions> {
        self.answer
    }

    /// The answer, read now if not known yet (for a stage that reads nothing
    /// else).
    pub fn finish_alone(self, store: &Store) -> Result<Option<Solutions>, RetrieveError> {
        match (self.answer, self.text) {
            (Some(answer), _) => Ok(Some(answer)),
            (None, Some(text)) => run(store, text).map(Some),
            (None, None) => Ok(None),
        }
    }
}

impl Rounds for OneRead {
    fn next_round(
        &mut self,
        _graph: &kgfuse_graph::Graph,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<spargebra::Query>, GraphError> {
        if let Some(answer) = answers.into_iter().next() {
            let text = self.text.take().unwrap_or_default();
            self.answer = Some(Solutions::of(text, answer?));
            return Ok(Vec::new());
        }
        match &self.text {
            Some(text) if self.answer.is_none() => Ok(vec![parse_query(text, &self.options)?]),
            _ => Ok(Vec::new()),
        }
    }
}

/// A result cell as text: an IRI, a literal's value, or `_:id` for a blank node.
pub fn cell_text(cell: Option<&Option<Term>>) -> Option<String> {
    match cell.cloned().flatten() {
        Some(Term::NamedNode(n)) => Some(n.into_string()),
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        Some(Term::BlankNode(b)) => Some(format!("_:{}", b.as_str())),
        None => None,
    }
}

/// Whether a cell holds a true boolean. Virtuoso answers `isLiteral(…)` and
/// `BIND(true AS …)` with the integer 1, so `1` counts as true too.
pub fn cell_is_true(cell: Option<&Option<Term>>) -> bool {
    cell_text(cell).is_some_and(|value| value == "true" || value == "1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_graph::QueryOptions;
    use kgfuse_graph::model::{Literal, NamedNode};

    #[test]
    fn hostile_labels_stay_one_value() {
        let hostile = [
            "plain",
            "quote \" inside",
            "brace } ; DROP ALL #",
            "newline\n} UNION { ?s ?p ?o",
            "SELECT * WHERE { ?x ?y ?z }",
            "back\\slash 'single'",
        ];
        let values: Vec<Term> = hostile
            .iter()
            .map(|h| Literal::new_simple_literal(*h).into())
            .collect();
        let text = with_values("?s <urn:label> ?needle", "needle", &values, 10);
        let query = parse_query(&text, &QueryOptions::default()).expect("still parses");
        // Round trip through the algebra: exactly our rows, exactly our one pattern.
        let rendered = query.to_string();
        assert_eq!(rendered.matches("<urn:label>").count(), 1, "{rendered}");
        let spargebra::Query::Select { pattern, .. } = query else {
            panic!("not a select")
        };
        let mut found = Vec::new();
        collect_values(&pattern, &mut found);
        assert_eq!(found, hostile);

        let iri: Term = NamedNode::new("https://example.org/a?b=c#d")
            .expect("iri")
            .into();
        let text = with_values("?e ?p ?o", "e", &[iri], 10);
        assert!(
            parse_query(&text, &QueryOptions::default()).is_ok(),
            "{text}"
        );
    }

    fn collect_values(pattern: &spargebra::algebra::GraphPattern, out: &mut Vec<String>) {
        use spargebra::algebra::GraphPattern;
        use spargebra::term::GroundTerm;
        match pattern {
            GraphPattern::Values { bindings, .. } => {
                for row in bindings {
                    for term in row.iter().flatten() {
                        if let GroundTerm::Literal(l) = term {
                            out.push(l.value().to_owned());
                        }
                    }
                }
            }
            GraphPattern::Join { left, right }
            | GraphPattern::LeftJoin { left, right, .. }
            | GraphPattern::Union { left, right }
            | GraphPattern::Minus { left, right } => {
                collect_values(left, out);
                collect_values(right, out);
            }
            GraphPattern::Filter { inner, .. }
            | GraphPattern::Graph { inner, .. }
            | GraphPattern::Extend { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Project { inner, .. }
            | GraphPattern::Slice { inner, .. }
            | GraphPattern::OrderBy { inner, .. }
            | GraphPattern::Group { inner, .. }
            | GraphPattern::Service { inner, .. } => collect_values(inner, out),
            _ => {}
        }
    }
}
