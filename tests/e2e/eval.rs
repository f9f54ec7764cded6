//! `kgfuse eval`: question sets built from the store, metrics with the contract's
//! JSON names, unknown gold reported.

use crate::harness::{Kgfuse, root};

#[test]
fn leave_one_out_set_from_the_fee_examples_and_its_evaluation() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let fixture = root().join("fixtures/payment-fees");
    let set = k.tmp.path().join("sgkr.jsonl").display().to_string();
    k.ok(&[
        "eval",
        "make-loo",
        "--package",
        "payment_fees",
        "--tests",
        &fixture.join("examples").display().to_string(),
        "--out",
        &set,
    ]);
    let text = std::fs::read_to_string(&set).expect("set");
    let items: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(items.len(), 11, "one question per example: {text}");
    let mcc = items
        .iter()
        .find(|i| i["id"] == "examples.q_most_expensive_mcc_5eur")
        .expect("the SGKR example");
    assert!(
        mcc["gold"]
            .as_array()
            .expect("gold")
            .iter()
            .any(|g| g == "payment_fees.fees.most_expensive_mcc"),
        "{mcc}"
    );
    assert!(
        mcc["exclude"][0]
            .as_str()
            .is_some_and(|c| c.contains("/case/"))
    );

    // One more question whose gold names nothing: reported, and counted as missed.
    let mut with_unknown = text.clone();
    with_unknown.push_str(
        "{\"id\": \"bogus\", \"query\": \"average fee\", \"gold\": [\"payment_fees.fees.no_such_function\"]}\n",
    );
    let path = k.file("with-unknown.jsonl", &with_unknown);
    let report = k.json(&[
        "eval",
        &path,
        "--strategy",
        "flat",
        "--strategy",
        "paths",
        "--strategy",
        "bm25",
        "--k",
        "5",
        "--format",
        "json",
    ]);
    assert_eq!(report["k"], 5);
    assert_eq!(report["queries"], 12);
    assert_eq!(
        report["unknown_gold"][0]["gold"],
        "payment_fees.fees.no_such_function"
    );
    for strategy in ["flat", "paths", "bm25"] {
        let scores = &report["strategies"][strategy];
        for name in [
            "recall@k",
            "precision@k",
            "mrr",
            "ndcg@k",
            "avg_nodes",
            "avg_facts",
            "all_in_context",
            "avg_context_tokens",
            "package_accuracy",
            "p50_ms",
            "p95_ms",
        ] {
            assert!(scores[name].is_number(), "{strategy}.{name}: {scores}");
        }
    }
    // Structure finds the functions of the solutions; similarity mostly does not.
    let recall = |s: &str| {
        report["strategies"][s]["recall@k"]
            .as_f64()
            .expect("recall")
    };
    assert!(recall("paths") > recall("flat") + 0.1, "{report}");
    // The lexical baseline finds functions by their names and docstrings.
    assert!(recall("bm25") > 0.0, "{report}");

    let err = k.fails(&["eval", &set, "--plot", "chart.png"]);
    assert!(err.contains(".svg"), "{err}");
    let table = k.ok(&[
        "eval",
        &set,
        "--strategy",
        "flat",
        "--plot",
        &k.tmp.path().join("c.svg").display().to_string(),
    ]);
    assert!(
        table.contains("recall@5") && table.contains("flat"),
        "{table}"
    );
    assert!(k.tmp.path().join("c.svg").is_file());
}
