//! Answers in the order a reader wants them: a plan that orders its rows keeps
//! its order; otherwise the rows whose answer is better connected in the graph
//! (more edges, `rdf:type` left out) come first, the text of the rows breaking
//! ties. Engines return unordered rows in an order of their own, and a sort by
//! text puts the alphabetically first answer on top, which says nothing.

use crate::RetrieveError;
use kgfuse_core::context::AnswerSet;
use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_lexicon::sparql::{cell_text, run, values};
use kgfuse_store::Store;
use std::collections::HashMap;

/// Most rows ranked; the rest keep their place after them.
const MAX_RANKED: usize = 200;

/// Orders `set`'s rows by how connected each row's first IRI is, unless its
/// plan orders or groups them (or it has no IRI to rank by).
pub fn by_connectedness(store: &Store, set: &mut AnswerSet) -> Result<(), RetrieveError> {
    let planned = |key: &str| {
        set.plan
            .as_ref()
            .and_then(|plan| plan.get(key))
            .is_some_and(|v| !v.is_null())
    };
    if set.rows.len() < 2 || planned("order") || planned("aggregation") {
        return Ok(());
    }
    let ranked = set.rows.len().min(MAX_RANKED);
    let nodes: Vec<Term> = set.rows[..ranked]
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter_map(|cell| NamedNode::new(cell).ok().map(Term::from))
        .collect();
    if nodes.is_empty() {
        return Ok(());
    }
    let degrees = run(
        store,
        format!(
            "SELECT ?x (COUNT(*) AS ?n) WHERE {{ {} \
               {{ ?x ?p ?o FILTER(?p != <{rdf_type}>) }} UNION {{ ?s ?q ?x }} }} GROUP BY ?x",
            values("x", &nodes),
            rdf_type = w3c::RDF_TYPE,
        ),
    )?;
    let degree: HashMap<String, u64> = degrees
        .rows
        .iter()
        .filter_map(|row| {
            Some((
                cell_text(row.first())?,
                cell_text(row.get(1))?.parse().ok()?,
            ))
        })
        .collect();
    let of = |row: &Vec<Option<String>>| {
        row.first()
            .cloned()
            .flatten()
            .and_then(|cell| degree.get(&cell).copied())
            .unwrap_or(0)
    };
    set.rows[..ranked].sort_by(|a, b| of(b).cmp(&of(a)).then_with(|| a.cmp(b)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_better_connected_answer_comes_first_unless_the_plan_orders() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(
            r#"
            @prefix ex: <http://example.org/r/> .
            ex:a ex:knows ex:z .
            ex:z ex:knows ex:a , ex:b , ex:c ; ex:likes ex:d .
            ex:a a ex:Thing . ex:z a ex:Thing .
            "#,
        )
        .await;
        let row = |iri: &str| vec![Some(format!("http://example.org/r/{iri}"))];
        let mut set = AnswerSet {
            rows: vec![row("a"), row("z")],
            ..AnswerSet::default()
        };
        by_connectedness(&store, &mut set).expect("ranked");
        assert_eq!(set.rows, vec![row("z"), row("a")]);

        let mut ordered = AnswerSet {
            plan: Some(serde_json::json!({"order": {"key": "x", "direction": "ascending"}})),
            rows: vec![row("a"), row("z")],
            ..AnswerSet::default()
        };
        by_connectedness(&store, &mut ordered).expect("kept");
        assert_eq!(ordered.rows, vec![row("a"), row("z")]);
    }
}
