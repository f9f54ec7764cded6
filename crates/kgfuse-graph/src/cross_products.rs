//! Keeping a query's timeout reachable: cross products become lateral joins.
//!
//! Oxigraph's evaluator checks the cancellation token each time it reads a quad
//! from the store, not inside its in-memory joins. A cartesian product such as
//! `{ ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }` is a hash join with no key: once both sides
//! are read, it multiplies them in memory for minutes without reading the store,
//! so a 5 s timeout fired after 2 min 41 s (measured on a 14k-triple store).
//!
//! Every join of two parts that share no variable is rewritten here into a
//! `LATERAL` join (SEP-0006, built into Oxigraph): the right part is evaluated
//! again for each row of the left part, which reads the store, so the token is
//! checked for every few rows of output and a cancelled query stops within
//! milliseconds. When the parts share no variable, a lateral join has the same
//! solutions as the join (only their order may differ): no variable of the left
//! row can reach the right part. Disjointness is decided on *every* variable the
//! parts mention (a FILTER's too, a subquery's too), not only the ones in scope,
//! so a filter never sees a binding it would not have seen.
//!
//! The cost of a legitimate cross product stays proportional to its output.
//! Products of inline data only (`VALUES` x `VALUES`) never read the store and
//! remain out of reach of the token; EXISTS patterns inside expressions are left
//! as they are (docs/graph-and-sparql.md, "Query timeouts").

use spargebra::Query;
use spargebra::algebra::GraphPattern;
use spargebra::term::{TermPattern, TriplePattern};
use std::collections::BTreeSet;

/// The query with every cross product turned into a lateral join.
pub(crate) fn guard_cross_products(query: Query) -> Query {
    crate::algebra::map_where(query, rewrite)
}

/// The update with every cross product of its WHERE clauses turned into a
/// lateral join.
pub(crate) fn guard_update_cross_products(mut update: spargebra::Update) -> spargebra::Update {
    for operation in &mut update.operations {
        if let spargebra::GraphUpdateOperation::DeleteInsert { pattern, .. } = operation {
            let taken = std::mem::replace(
                pattern.as_mut(),
                GraphPattern::Bgp {
                    patterns: Vec::new(),
                },
            );
            **pattern = rewrite(taken);
        }
    }
    update
}

/// A boxed child of the algebra, rewritten.
#[allow(clippy::boxed_local)] // the algebra hands its children over boxed
fn boxed(pattern: Box<GraphPattern>) -> Box<GraphPattern> {
    Box::new(rewrite(*pattern))
}

/// Rewrites the pattern bottom-up.
fn rewrite(pattern: GraphPattern) -> GraphPattern {
    match pattern {
        GraphPattern::Bgp { patterns } => split_bgp(patterns),
        GraphPattern::Join { left, right } => {
            let (left, right) = (rewrite(*left), rewrite(*right));
            if shares_no_variable(&left, &right) {
                GraphPattern::Lateral {
                    left: Box::new(left),
                    right: Box::new(right),
                }
            } else {
                GraphPattern::Join {
                    left: Box::new(left),
                    right: Box::new(right),
                }
            }
        }
        GraphPattern::LeftJoin {
            left,
            right,
            expression,
        } => GraphPattern::LeftJoin {
            left: boxed(left),
            right: boxed(right),
            expression,
        },
        GraphPattern::Lateral { left, right } => GraphPattern::Lateral {
            left: boxed(left),
            right: boxed(right),
        },
        GraphPattern::Filter { expr, inner } => GraphPattern::Filter {
            expr,
            inner: boxed(inner),
        },
        GraphPattern::Union { left, right } => GraphPattern::Union {
            left: boxed(left),
            right: boxed(right),
        },
        GraphPattern::Graph { name, inner } => GraphPattern::Graph {
            name,
            inner: boxed(inner),
        },
        GraphPattern::Extend {
            inner,
            variable,
            expression,
        } => GraphPattern::Extend {
            inner: boxed(inner),
            variable,
            expression,
        },
        GraphPattern::Minus { left, right } => GraphPattern::Minus {
            left: boxed(left),
            right: boxed(right),
        },
        GraphPattern::OrderBy { inner, expression } => GraphPattern::OrderBy {
            inner: boxed(inner),
            expression,
        },
        GraphPattern::Project { inner, variables } => GraphPattern::Project {
            inner: boxed(inner),
            variables,
        },
        GraphPattern::Distinct { inner } => GraphPattern::Distinct {
            inner: boxed(inner),
        },
        GraphPattern::Reduced { inner } => GraphPattern::Reduced {
            inner: boxed(inner),
        },
        GraphPattern::Slice {
            inner,
            start,
            length,
        } => GraphPattern::Slice {
            inner: boxed(inner),
            start,
            length,
        },
        GraphPattern::Group {
            inner,
            variables,
            aggregates,
        } => GraphPattern::Group {
            inner: boxed(inner),
            variables,
            aggregates,
        },
        GraphPattern::Service {
            name,
            inner,
            silent,
        } => GraphPattern::Service {
            name,
            inner: boxed(inner),
            silent,
        },
        other @ (GraphPattern::Path { .. } | GraphPattern::Values { .. }) => other,
    }
}

/// A basic graph pattern as its connected parts (linked by shared variables or
/// blank nodes), the parts chained by lateral joins; one part stays one BGP, its
/// patterns in the query's order (Oxigraph's join ordering starts from it: a
/// connected BGP passed on reordered made LUBM's Q2 14 times slower).
fn split_bgp(patterns: Vec<TriplePattern>) -> GraphPattern {
    let mut parts: Vec<Part> = Vec::new();
    for (index, pattern) in patterns.into_iter().enumerate() {
        let names = pattern_names(&pattern);
        let mut merged = (names, vec![(index, pattern)]);
        let mut i = 0;
        while i < parts.len() {
            if parts[i].0.is_disjoint(&merged.0) {
                i += 1;
            } else {
                let (names, mut members) = parts.swap_remove(i);
                merged.0.extend(names);
                members.append(&mut merged.1);
                merged.1 = members;
            }
        }
        parts.push(merged);
    }
    // A pattern without variables (a ground triple) is a part of its own; it
    // yields at most one row, so chaining it costs one lookup per row.
    parts.sort_by_key(|(_, members)| members.iter().map(|(i, _)| *i).min());
    let mut bgps = parts.into_iter().map(|(_, mut members)| {
        members.sort_by_key(|(i, _)| *i);
        GraphPattern::Bgp {
            patterns: members.into_iter().map(|(_, p)| p).collect(),
        }
    });
    let Some(first) = bgps.next() else {
        return GraphPattern::Bgp {
            patterns: Vec::new(),
        };
    };
    bgps.fold(first, |left, right| GraphPattern::Lateral {
        left: Box::new(left),
        right: Box::new(right),
    })
}

/// A connected part of a BGP: the names it mentions and its patterns, each with
/// its position in the query.
type Part = (BTreeSet<String>, Vec<(usize, TriplePattern)>);

/// The variables and blank nodes of one triple pattern.
fn pattern_names(pattern: &TriplePattern) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for term in [&pattern.subject, &pattern.object] {
        match term {
            TermPattern::Variable(v) => {
                names.insert(format!("?{}", v.as_str()));
            }
            TermPattern::BlankNode(b) => {
                names.insert(format!("_:{}", b.as_str()));
            }
            _ => {}
        }
    }
    if let spargebra::term::NamedNodePattern::Variable(v) = &pattern.predicate {
        names.insert(format!("?{}", v.as_str()));
    }
    names
}

/// Whether no variable is mentioned by both patterns, anywhere in them
/// (expressions and subqueries included). Read from the patterns' SPARQL
/// serialisation, where every variable is written `?name`; a `?` inside a string
/// literal can only make the answer "shared", the safe side.
fn shares_no_variable(left: &GraphPattern, right: &GraphPattern) -> bool {
    let left = mentioned_variables(&left.to_string());
    let right = mentioned_variables(&right.to_string());
    left.is_disjoint(&right)
}

fn mentioned_variables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(['?', '$']) {
        let after = &rest[at + 1..];
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if end > 0 {
            out.insert(after[..end].to_owned());
        }
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn pattern(query: &str) -> GraphPattern {
        let parsed = SparqlParser::new().parse_query(query).expect("query");
        match guard_cross_products(parsed) {
            Query::Select { pattern, .. } | Query::Ask { pattern, .. } => pattern,
            _ => unreachable!(),
        }
    }

    fn laterals(pattern: &GraphPattern) -> usize {
        let text = format!("{pattern:?}");
        text.matches("Lateral").count()
    }

    #[test]
    fn disconnected_triple_patterns_become_lateral_joins() {
        let p = pattern("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }");
        assert_eq!(laterals(&p), 2, "{p:?}");
        let p = pattern("SELECT * WHERE { { ?a ?b ?c } { ?d ?e ?f } }");
        assert_eq!(laterals(&p), 1, "{p:?}");
    }

    #[test]
    fn connected_patterns_stay_one_join() {
        let p = pattern(
            "SELECT * WHERE { ?a <urn:p> ?b . ?b <urn:q> ?c . ?c <urn:r> _:x . _:x <urn:s> ?d }",
        );
        assert_eq!(laterals(&p), 0, "{p:?}");
        let p = pattern("SELECT * WHERE { ?a <urn:p> ?b { ?b <urn:q> ?c } }");
        assert_eq!(laterals(&p), 0, "{p:?}");
    }

    #[test]
    fn a_connected_pattern_keeps_the_query_order() {
        // LUBM's Q2: the type patterns join only through the last three.
        let query = "SELECT * WHERE { ?x a <urn:G> . ?y a <urn:U> . ?z a <urn:D> . \
                     ?x <urn:m> ?z . ?z <urn:s> ?y . ?x <urn:u> ?y }";
        let original = match SparqlParser::new().parse_query(query).expect("query") {
            Query::Select { pattern, .. } => pattern,
            _ => unreachable!(),
        };
        assert_eq!(pattern(query), original);
    }

    #[test]
    fn a_variable_a_filter_mentions_keeps_the_join() {
        // ?b is not in scope in the right part, but its FILTER mentions it: as a
        // lateral join the filter would see the left row's ?b.
        let p = pattern("SELECT * WHERE { ?a <urn:p> ?b { ?c <urn:q> ?d FILTER(?b = ?d) } }");
        assert_eq!(laterals(&p), 0, "{p:?}");
    }

    #[test]
    fn variables_are_read_from_the_text() {
        let names = mentioned_variables("?a <urn:p> $b_1 . FILTER(?c > 2) \"?\"");
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["a", "b_1", "c"]);
    }
}
