//! Entity linking as people write and the offline query graphs, on the corporate
//! fixture (`fixtures/org`): plural class words, a given name alone, a title and a
//! family name, a class-typed question, two-hop constraints.

use crate::harness::{Kgfuse, stage};
use serde_json::Value;

const DATA: &str = "https://example.org/corp/data/";

/// The unified context of a question.
fn unified(k: &Kgfuse, question: &str) -> Value {
    k.retrieve(question, "unified")
}

/// Every node the facts of a context mention.
fn fact_nodes(context: &Value) -> Vec<String> {
    let facts = context["structured_facts"].as_array().expect("facts");
    assert!(facts.len() <= 50, "the fact budget holds: {}", facts.len());
    facts
        .iter()
        .flat_map(|f| [f["subject"].as_str(), f["object"].as_str()])
        .flatten()
        .map(str::to_owned)
        .collect()
}

/// Asserts that the first facts (the constructed query's rows) hold every
/// expected node and none of the unexpected ones.
fn answers(k: &Kgfuse, question: &str, expected: &[&str], not: &[&str]) -> Value {
    let context = unified(k, question);
    let nodes = fact_nodes(&context);
    let graphs = stage(&context, "query graphs");
    for node in expected {
        let iri = format!("{DATA}{node}");
        assert!(
            nodes.contains(&iri),
            "{question}: {iri} missing from the facts\nquery graphs: {graphs}\nlinking: {}",
            stage(&context, "linking")
        );
    }
    let answered = graphs["kept"].as_array().expect("kept");
    assert!(
        !answered.is_empty(),
        "{question}: no query graph answered: {graphs}"
    );
    // The constructed query's rows come first; unexpected nodes may appear later
    // among other facts, but not among the answer rows.
    let rows: Vec<String> = context["structured_facts"]
        .as_array()
        .expect("facts")
        .iter()
        .take(expected.len() * 3)
        .flat_map(|f| [f["subject"].as_str(), f["object"].as_str()])
        .flatten()
        .map(str::to_owned)
        .collect();
    for node in not {
        let iri = format!("{DATA}{node}");
        assert!(
            !rows.contains(&iri),
            "{question}: {iri} among the answer rows: {rows:?}"
        );
    }
    context
}

#[test]
fn questions_link_as_people_write_them_and_constructed_queries_answer() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/org/org.ttl"]);

    // Plural class word: "vendors" is the class Vendor.
    answers(
        &k,
        "Which vendors are based in Oslo?",
        &["nordic-sense"],
        &["fjord-pumpeverk"],
    );

    // A given name alone is ambiguous (two Annas): the department decides.
    let context = answers(
        &k,
        "Which department is Anna from Sales in?",
        &["sales"],
        &[],
    );
    let linking = stage(&context, "linking").to_string();
    assert!(linking.contains("anna-keller"), "{linking}");
    assert!(
        !linking.contains("anna-berg"),
        "the other Anna is not in Sales: {linking}"
    );

    // A title and a family name.
    answers(
        &k,
        "What is Dr. Lindqvist an expert in?",
        &["valves", "hydraulics"],
        &["negotiation"],
    );

    // Class-typed: the people whose expertise points at Valves, not Valves' own facts.
    answers(
        &k,
        "Who is an expert in valves?",
        &["erik-lindqvist", "mona-haddad"],
        &["anna-keller"],
    );

    // Two-hop constraint: vendor -> city -> country, plus what it sells.
    answers(
        &k,
        "Which vendors in Norway sell pumps?",
        &["fjord-pumpeverk"],
        &["nordic-sense", "vistula-cast"],
    );

    // Product -> component -> country.
    answers(
        &k,
        "Which countries do the components of the AquaFlow X2 come from?",
        &["norway", "germany", "poland"],
        &[],
    );
}

#[test]
fn schema_bookkeeping_never_crowds_out_facts_that_answer() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/org/org.ttl"]);
    let context = unified(&k, "Which vendors are based in Oslo?");
    let facts = context["structured_facts"].as_array().expect("facts");
    let first_bookkeeping = facts.iter().position(|f| {
        f["predicate"]
            .as_str()
            .is_some_and(|p| p.ends_with("#isDefinedBy") || p.ends_with("/depiction"))
    });
    let last_answer = facts.iter().rposition(|f| {
        f["subject"].as_str() == Some("https://example.org/corp/data/nordic-sense")
            || f["object"].as_str() == Some("https://example.org/corp/data/nordic-sense")
    });
    if let (Some(bookkeeping), Some(answer)) = (first_bookkeeping, last_answer) {
        assert!(answer < bookkeeping, "{facts:#?}");
    }
    assert!(last_answer.is_some(), "{facts:#?}");
}
