//! The SPARQL algebra pieces both compilers build with: [`crate::plan`]'s
//! (a query plan) and [`crate::query_graphs`]'s (a query graph). Terms go in as
//! typed values (`NamedNode`, `Variable`), never as text, so nothing a question
//! or a document says is pasted into a query.

use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::{NamedNode, Variable};
use spargebra::algebra::{GraphPattern, PropertyPathExpression};
use spargebra::term::{GroundTerm, TermPattern};

/// The variable `?name` (names are the compilers' own: `x`, `a0`, `class_x`).
pub(crate) fn variable(name: &str) -> Variable {
    Variable::new_unchecked(name)
}

/// `?name` as a triple's end.
pub(crate) fn var(name: &str) -> TermPattern {
    TermPattern::Variable(variable(name))
}

/// The empty group, `{}`.
pub(crate) fn empty() -> GraphPattern {
    GraphPattern::Bgp {
        patterns: Vec::new(),
    }
}

/// `left` joined with `right`: two triple groups become one, an empty group is
/// left out, anything else is a join.
pub(crate) fn join(left: GraphPattern, right: GraphPattern) -> GraphPattern {
    let is_empty =
        |p: &GraphPattern| matches!(p, GraphPattern::Bgp { patterns } if patterns.is_empty());
    match (left, right) {
        (GraphPattern::Bgp { mut patterns }, GraphPattern::Bgp { patterns: more }) => {
            patterns.extend(more);
            GraphPattern::Bgp { patterns }
        }
        (left, right) if is_empty(&right) => left,
        (left, right) if is_empty(&left) => right,
        (left, right) => GraphPattern::Join {
            left: Box::new(left),
            right: Box::new(right),
        },
    }
}

/// `subject rdf:type/rdfs:subClassOf* class`: a type, or a type's superclass,
/// without entailment.
pub(crate) fn type_path(subject: TermPattern, class: TermPattern) -> GraphPattern {
    use PropertyPathExpression as P;
    GraphPattern::Path {
        subject,
        path: P::Sequence(
            Box::new(P::NamedNode(NamedNode::new_unchecked(w3c::RDF_TYPE))),
            Box::new(P::ZeroOrMore(Box::new(P::NamedNode(
                NamedNode::new_unchecked(w3c::RDFS_SUBCLASS_OF),
            )))),
        ),
        object: class,
    }
}

/// `VALUES ?variable { nodes }`.
pub(crate) fn values_of(
    variable: Variable,
    nodes: impl IntoIterator<Item = NamedNode>,
) -> GraphPattern {
    GraphPattern::Values {
        variables: vec![variable],
        bindings: nodes
            .into_iter()
            .map(|n| vec![Some(GroundTerm::NamedNode(n))])
            .collect(),
    }
}

/// `pattern` as a sub-select of every variable it binds, by name.
pub(crate) fn sub_select(pattern: GraphPattern) -> GraphPattern {
    let mut variables = Vec::new();
    pattern.on_in_scope_variable(|v| variables.push(v.clone()));
    variables.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    variables.dedup();
    GraphPattern::Project {
        inner: Box::new(pattern),
        variables,
    }
}

/// The first `length` distinct solutions of `pattern`.
pub(crate) fn first_distinct(pattern: GraphPattern, length: usize) -> GraphPattern {
    GraphPattern::Slice {
        inner: Box::new(GraphPattern::Distinct {
            inner: Box::new(pattern),
        }),
        start: 0,
        length: Some(length),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::term::TriplePattern;

    fn triple(s: &str, o: &str) -> GraphPattern {
        GraphPattern::Bgp {
            patterns: vec![TriplePattern {
                subject: var(s),
                predicate: NamedNode::new_unchecked("http://ex.org/p").into(),
                object: var(o),
            }],
        }
    }

    #[test]
    fn joins_merge_triple_groups_and_leave_out_empty_ones() {
        let merged = join(triple("x", "y"), triple("y", "z"));
        assert!(matches!(&merged, GraphPattern::Bgp { patterns } if patterns.len() == 2));
        let path = type_path(var("x"), var("class_x"));
        assert_eq!(join(empty(), path.clone()), path);
        assert_eq!(join(path.clone(), empty()), path);
        assert!(matches!(
            join(path, triple("x", "y")),
            GraphPattern::Join { .. }
        ));
    }

    #[test]
    fn a_sub_select_projects_what_its_pattern_binds_by_name() {
        let pattern = join(
            values_of(
                variable("a0"),
                [NamedNode::new_unchecked("http://ex.org/n")],
            ),
            triple("a0", "x"),
        );
        let GraphPattern::Project { variables, .. } = sub_select(pattern) else {
            panic!("a projection");
        };
        let names: Vec<&str> = variables.iter().map(Variable::as_str).collect();
        assert_eq!(names, ["a0", "x"]);
        let text = GraphPattern::Project {
            inner: Box::new(first_distinct(triple("x", "y"), 3)),
            variables: vec![variable("x")],
        }
        .to_string();
        assert!(
            text.contains("distinct") || text.contains("DISTINCT"),
            "{text}"
        );
    }
}
