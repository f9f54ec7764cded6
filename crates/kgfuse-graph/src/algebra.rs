//! Rewrites of a parsed query's algebra: the one every query form shares
//! ([`map_where`]), and the two that let a query with bindings, or an ASK, run
//! the same on any SPARQL server ([`with_bindings`], [`ask_as_select`]).

use crate::GraphError;
use oxigraph::model::{Term, Variable};
use spargebra::Query;
use spargebra::algebra::GraphPattern;
use spargebra::term::GroundTerm;

/// The query with `change` applied to its WHERE pattern, whatever its form.
pub(crate) fn map_where(query: Query, change: impl FnOnce(GraphPattern) -> GraphPattern) -> Query {
    match query {
        Query::Select {
            dataset,
            pattern,
            base_iri,
        } => Query::Select {
            dataset,
            pattern: change(pattern),
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
            pattern: change(pattern),
            base_iri,
        },
        Query::Describe {
            dataset,
            pattern,
            base_iri,
        } => Query::Describe {
            dataset,
            pattern: change(pattern),
            base_iri,
        },
        Query::Ask {
            dataset,
            pattern,
            base_iri,
        } => Query::Ask {
            dataset,
            pattern: change(pattern),
            base_iri,
        },
    }
}

/// The query with `bindings` joined in as one `VALUES` row under its solution
/// modifiers (ORDER BY, projection, DISTINCT, LIMIT): what SEP-0007
/// substitution gives for a projected variable, in a form any server runs.
pub(crate) fn with_bindings(
    query: Query,
    bindings: &[(String, Term)],
) -> Result<Query, GraphError> {
    if bindings.is_empty() {
        return Ok(query);
    }
    let mut variables = Vec::new();
    let mut row = Vec::new();
    for (name, term) in bindings {
        variables
            .push(Variable::new(name).map_err(|e| GraphError::Usage(format!("?{name}: {e}")))?);
        row.push(Some(match term {
            Term::NamedNode(n) => GroundTerm::NamedNode(n.clone()),
            Term::Literal(l) => GroundTerm::Literal(l.clone()),
            Term::BlankNode(b) => GroundTerm::NamedNode(kgfuse_remote::skolem(b)),
        }));
    }
    let values = GraphPattern::Values {
        variables,
        bindings: vec![row],
    };
    Ok(map_where(query, |pattern| under_modifiers(pattern, values)))
}

fn under_modifiers(pattern: GraphPattern, values: GraphPattern) -> GraphPattern {
    match pattern {
        GraphPattern::Slice {
            inner,
            start,
            length,
        } => GraphPattern::Slice {
            inner: Box::new(under_modifiers(*inner, values)),
            start,
            length,
        },
        GraphPattern::Distinct { inner } => GraphPattern::Distinct {
            inner: Box::new(under_modifiers(*inner, values)),
        },
        GraphPattern::Reduced { inner } => GraphPattern::Reduced {
            inner: Box::new(under_modifiers(*inner, values)),
        },
        GraphPattern::Project { inner, variables } => GraphPattern::Project {
            inner: Box::new(under_modifiers(*inner, values)),
            variables,
        },
        GraphPattern::OrderBy { inner, expression } => GraphPattern::OrderBy {
            inner: Box::new(under_modifiers(*inner, values)),
            expression,
        },
        other => GraphPattern::Join {
            left: Box::new(values),
            right: Box::new(other),
        },
    }
}

/// `ASK { P }` as `SELECT * WHERE { P } LIMIT 1` (see the module documentation
/// for why), and whether it was an ASK; any other query is returned as it is.
pub(crate) fn ask_as_select(query: Query) -> (Query, bool) {
    match query {
        Query::Ask {
            dataset,
            pattern,
            base_iri,
        } => (
            Query::Select {
                dataset,
                pattern: GraphPattern::Slice {
                    inner: Box::new(pattern),
                    start: 0,
                    length: Some(1),
                },
                base_iri,
            },
            true,
        ),
        other => (other, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::NamedNode;

    fn parsed(text: &str) -> Query {
        spargebra::SparqlParser::new()
            .parse_query(text)
            .expect("query parses")
    }

    #[test]
    fn bindings_join_under_the_limit_and_ask_becomes_a_one_row_select() {
        let query = parsed("SELECT ?s ?o WHERE { ?s <urn:p> ?o } ORDER BY ?o LIMIT 2");
        let bound = with_bindings(
            query,
            &[(
                "s".into(),
                Term::NamedNode(NamedNode::new_unchecked("urn:a")),
            )],
        )
        .expect("bound");
        let text = bound.to_string();
        assert!(text.contains("VALUES ( ?s ) { ( <urn:a> )  }"), "{text}");
        assert!(text.trim_end().ends_with("LIMIT 2"), "{text}");
        let (ask, was_ask) = ask_as_select(parsed("ASK { GRAPH <urn:g> { ?s ?p ?o } }"));
        assert!(was_ask);
        let text = ask.to_string();
        assert!(text.starts_with("SELECT"), "{text}");
        assert!(text.trim_end().ends_with("LIMIT 1"), "{text}");
        parsed(&text);
        assert!(!ask_as_select(parsed("SELECT * WHERE { ?s ?p ?o }")).1);
    }
}
