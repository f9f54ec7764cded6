//! Finding a `SERVICE` call in a query's algebra.

use spargebra::algebra::{AggregateExpression, Expression, GraphPattern, OrderExpression};

/// The name of a `SERVICE` anywhere in the pattern, including inside `EXISTS`:
/// kgfuse answers from its own graphs, so a query that calls one is refused
/// before it runs (or is sent to a server).
pub fn service_call(pattern: &GraphPattern) -> Option<String> {
    match pattern {
        GraphPattern::Service { name, .. } => Some(name.to_string()),
        GraphPattern::Bgp { .. } | GraphPattern::Path { .. } | GraphPattern::Values { .. } => None,
        GraphPattern::Join { left, right }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => service_call(left).or_else(|| service_call(right)),
        GraphPattern::LeftJoin {
            left,
            right,
            expression,
        } => service_call(left)
            .or_else(|| service_call(right))
            .or_else(|| expression.as_ref().and_then(expression_service)),
        GraphPattern::Filter { expr, inner } => {
            expression_service(expr).or_else(|| service_call(inner))
        }
        GraphPattern::Extend {
            inner, expression, ..
        } => expression_service(expression).or_else(|| service_call(inner)),
        GraphPattern::OrderBy { inner, expression } => expression
            .iter()
            .find_map(|e| match e {
                OrderExpression::Asc(e) | OrderExpression::Desc(e) => expression_service(e),
            })
            .or_else(|| service_call(inner)),
        GraphPattern::Group {
            inner, aggregates, ..
        } => aggregates
            .iter()
            .find_map(|(_, aggregate)| match aggregate {
                AggregateExpression::FunctionCall { expr, .. } => expression_service(expr),
                AggregateExpression::CountSolutions { .. } => None,
            })
            .or_else(|| service_call(inner)),
        GraphPattern::Graph { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. } => service_call(inner),
    }
}

fn expression_service(expression: &Expression) -> Option<String> {
    match expression {
        Expression::Exists(pattern) => service_call(pattern),
        Expression::NamedNode(_)
        | Expression::Literal(_)
        | Expression::Variable(_)
        | Expression::Bound(_) => None,
        Expression::Or(a, b)
        | Expression::And(a, b)
        | Expression::Equal(a, b)
        | Expression::SameTerm(a, b)
        | Expression::Greater(a, b)
        | Expression::GreaterOrEqual(a, b)
        | Expression::Less(a, b)
        | Expression::LessOrEqual(a, b)
        | Expression::Add(a, b)
        | Expression::Subtract(a, b)
        | Expression::Multiply(a, b)
        | Expression::Divide(a, b) => expression_service(a).or_else(|| expression_service(b)),
        Expression::UnaryPlus(a) | Expression::UnaryMinus(a) | Expression::Not(a) => {
            expression_service(a)
        }
        Expression::In(a, list) => {
            expression_service(a).or_else(|| list.iter().find_map(expression_service))
        }
        Expression::If(a, b, c) => expression_service(a)
            .or_else(|| expression_service(b))
            .or_else(|| expression_service(c)),
        Expression::Coalesce(list) | Expression::FunctionCall(_, list) => {
            list.iter().find_map(expression_service)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> spargebra::Query {
        spargebra::SparqlParser::new()
            .parse_query(text)
            .expect("query parses")
    }

    #[test]
    fn service_is_found_wherever_it_hides() {
        let service = |text: &str| match parsed(text) {
            spargebra::Query::Select { pattern, .. } | spargebra::Query::Ask { pattern, .. } => {
                service_call(&pattern)
            }
            _ => unreachable!("only SELECT and ASK here"),
        };
        assert!(service("SELECT * WHERE { SERVICE <http://x/sparql> { ?s ?p ?o } }").is_some());
        assert!(service(
            "SELECT * WHERE { ?s ?p ?o FILTER EXISTS { SERVICE <http://x/sparql> { ?s ?p ?o } } }"
        ).is_some());
        assert!(service(
            "ASK { ?s ?p ?o OPTIONAL { ?o ?q ?r FILTER(NOT EXISTS { SERVICE SILENT <http://x/> { ?r ?p ?s } }) } }"
        ).is_some());
        assert!(
            service("SELECT * WHERE { ?s ?p \"SERVICE <http://x/>\" FILTER EXISTS { ?s a ?c } }")
                .is_none()
        );
    }
}
