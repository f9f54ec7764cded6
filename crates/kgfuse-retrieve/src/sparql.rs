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
use kgfuse_graph::{QueryOutcome, parse_query};
use kgfuse_store::Store;

/// A graph pattern plus the values of one variable, as a runnable, limited SELECT.
/// The pattern is joined with the `VALUES` block in the same group, so the limit
/// applies to the matches for these values (a sub-select would be evaluated first,
/// over the whole store).
pub(crate) fn with_values(pattern: &str, variable: &str, terms: &[Term], limit: usize) -> String {
    format!(
        "SELECT * WHERE {{ {} {pattern} }} LIMIT {limit}",
        values(variable, terms)
    )
}

/// `VALUES ?variable { ... }` written from RDF terms (each with its own escaping).
pub(crate) fn values(variable: &str, terms: &[Term]) -> String {
    let rows: Vec<String> = terms.iter().map(ToString::to_string).collect();
    format!("VALUES ?{variable} {{ {} }}", rows.join(" "))
}

/// What a generated SELECT returned, with the text that ran.
pub(crate) struct Solutions {
    /// The query text, for `FusedContext::sparql`.
    pub text: String,
    /// Projected variables.
    pub variables: Vec<String>,
    /// One row per solution.
    pub rows: Vec<Vec<Option<Term>>>,
}

impl Solutions {
    /// Index of a projected variable.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.variables.iter().position(|v| v == name)
    }
}

/// A generated query that was not run because it names terms the store does not know.
#[derive(Debug, Clone)]
pub(crate) struct Rejected {
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
pub(crate) fn run_checked(
    store: &Store,
    text: String,
) -> Result<Result<Solutions, Rejected>, RetrieveError> {
    let options = store.query_options();
    let parsed = parse_query(&text, &options)?;
    let unknown = store
        .graph()
        .unknown_terms(&kgfuse_graph::query_vocabulary(&parsed))?;
    if !unknown.is_empty() {
        return Ok(Err(Rejected { text, unknown }));
    }
    let (variables, rows) = match store.graph().query_algebra(parsed, &[], &options)? {
        QueryOutcome::Solutions { variables, rows } => (variables, rows),
        _ => (Vec::new(), Vec::new()),
    };
    Ok(Ok(Solutions {
        text,
        variables,
        rows,
    }))
}

/// Parses and runs a generated SELECT.
pub(crate) fn run(store: &Store, text: String) -> Result<Solutions, RetrieveError> {
    let options = store.query_options();
    let parsed = parse_query(&text, &options)?;
    let (variables, rows) = match store.graph().query_algebra(parsed, &[], &options)? {
        QueryOutcome::Solutions { variables, rows } => (variables, rows),
        _ => (Vec::new(), Vec::new()),
    };
    Ok(Solutions {
        text,
        variables,
        rows,
    })
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
