//! `kgfuse retrieve`: the FusedContext contract.

use crate::harness::{FakeModel, Kgfuse, function_names as names};
use serde_json::Value;

#[test]
fn flat_retrieval_returns_a_fused_context_with_sources_and_trace() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/policy/policy.ttl"]);
    let context = k.json(&[
        "retrieve",
        "Can I work remotely from another country?",
        "--strategy",
        "flat",
        "--top-k",
        "5",
        "--format",
        "json",
    ]);
    for field in [
        "query",
        "strategy",
        "dispatch",
        "unstructured",
        "structured_facts",
        "functions",
        "cases",
        "paths",
        "sparql",
        "trace",
    ] {
        assert!(context.get(field).is_some(), "missing {field}: {context}");
    }
    assert_eq!(context["strategy"], "flat");
    let hits = context["unstructured"].as_array().expect("hits");
    assert_eq!(hits.len(), 5);
    let scores: Vec<f64> = hits
        .iter()
        .map(|h| h["score"].as_f64().expect("score"))
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "scores must be sorted: {scores:?}"
    );
    // A chunk hit carries its document, title, section and chunk id.
    let chunk = hits
        .iter()
        .find(|h| h["source"]["chunk_id"].is_string())
        .unwrap_or_else(|| panic!("no chunk among the hits: {context}"));
    assert!(
        chunk["source"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("https://w3id.org/kgfuse/fixtures/policy/"))
    );
    assert!(chunk["source"]["title"].is_string(), "{chunk}");
    let stages: Vec<&str> = context["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(stages, ["dispatch", "vector"]);

    let err = k.fails(&["retrieve", "  ", "--format", "json"]);
    assert!(err.contains("the question is empty"), "{err}");
}

#[test]
fn paths_follow_the_dependency_graph_and_refuse_questions_without_tags() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let context = k.json(&[
        "retrieve",
        "What is the average fee for a transaction value of 10 EUR with card scheme GlobalCard?",
        "--strategy",
        "paths",
        "--format",
        "json",
    ]);
    assert_eq!(context["strategy"], "paths");
    let names: Vec<&str> = context["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert_eq!(names.first(), Some(&"average_fee"), "{names:?}");
    // Every path starts at a tag the question names and ends at one it asks
    // for, except the source paths: the fee rules the question does not give
    // come from a loader, `load_fee_rules -> fee-rule -> average_fee`.
    let paths = context["paths"].as_array().expect("paths");
    assert!(!paths.is_empty());
    let mut sources = Vec::new();
    for path in paths {
        let path: Vec<&str> = path
            .as_array()
            .expect("path")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if !path[0].contains("/tag/") {
            sources.push(path);
            continue;
        }
        assert!(
            path.last().is_some_and(|t| t.ends_with("/tag/average-fee")),
            "{path:?}"
        );
    }
    assert!(
        sources.iter().any(|p| p[0].ends_with("data.load_fee_rules")
            && p[1].ends_with("/tag/fee-rule")
            && p[2].ends_with("fees.average_fee")),
        "{sources:?}"
    );
    // The functions carry what an agent needs to call them.
    let first = &context["functions"][0];
    assert!(
        first["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("def average_fee("))
    );
    assert_eq!(first["params"][0], "fee_rules: Iterable[r.FeeRule]");
    assert!(
        first["knowledge"][0]
            .as_str()
            .is_some_and(|k| k.contains("unweighted mean"))
    );

    // `auto` runs `unified`, whose fused ranking takes the path channel in: the
    // function every path ends at comes first, and the trace says which channels
    // ranked it.
    let auto: Value = k.json(&[
        "retrieve",
        "What is the average fee for a transaction value of 10 EUR with card scheme GlobalCard?",
        "--format",
        "json",
    ]);
    assert_eq!(auto["strategy"], "unified");
    // Stages in order: the understanding's (dispatch first, then linking, the
    // query graphs and plans), then auto's note, then unified's own.
    let names: Vec<&str> = auto["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(names[0], "dispatch");
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("no {name} stage: {names:?}"))
    };
    assert!(
        at("linking") < at("auto") && at("auto") + 1 == at("vector"),
        "{names:?}"
    );
    assert_eq!(
        auto["functions"][0]["name"], "average_fee",
        "{}",
        auto["functions"]
    );
    let fused = auto["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .find(|s| s["stage"] == "fused ranking")
        .expect("fused ranking stage");
    assert!(
        fused["kept"]
            .as_array()
            .expect("kept")
            .iter()
            .filter_map(Value::as_str)
            .any(|k| k.contains("fees.average_fee rrf") && k.contains("paths #1")),
        "{fused}"
    );

    let none: Value = k.json(&[
        "retrieve",
        "What is the weather today?",
        "--strategy",
        "paths",
        "--format",
        "json",
    ]);
    assert_eq!(none["status"], "no_tags");
    assert!(none["functions"].as_array().expect("functions").is_empty());
}

#[test]
fn neighborhood_ranks_reached_nodes_and_keeps_evidence_paths() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/support/support.ttl"]);
    let context = k.json(&[
        "retrieve",
        "a customer wants a refund but there is an open chargeback",
        "--strategy",
        "neighborhood",
        "--top-k",
        "6",
        "--format",
        "json",
    ]);
    let stages: Vec<&str> = context["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(stages, ["dispatch", "link", "neighborhood"]);
    let hits = context["unstructured"].as_array().expect("hits");
    assert_eq!(hits.len(), 6);
    let scores: Vec<f64> = hits
        .iter()
        .map(|h| h["score"].as_f64().expect("score"))
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Every kept node has an evidence path that starts at a linked entity and ends at
    // the node; every step of a path is a returned fact.
    let linked: Vec<String> = context["trace"][1]["kept"]
        .as_array()
        .expect("linked")
        .iter()
        .filter_map(|s| {
            s.as_str()
                .and_then(|s| s.split(' ').next())
                .map(str::to_owned)
        })
        .collect();
    let facts = context["structured_facts"].as_array().expect("facts");
    let paths = context["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), hits.len());
    for (path, hit) in paths.iter().zip(hits) {
        let nodes: Vec<&str> = path
            .as_array()
            .expect("path")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            linked.iter().any(|l| Some(&l.as_str()) == nodes.first()),
            "{nodes:?} vs {linked:?}"
        );
        assert_eq!(nodes.last().copied(), hit["iri"].as_str());
        crate::harness::assert_steps_are_facts(&nodes, facts);
    }
    // The dropped candidates say why.
    let dropped = context["trace"][2]["dropped"].as_array().expect("dropped");
    assert!(dropped.iter().all(|d| {
        d["why"]
            .as_str()
            .is_some_and(|w| w.contains("beyond top-k"))
    }));
}

#[test]
fn hybrid_fuses_bm25_and_vector_ranks_and_indexes_new_rows() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/policy/policy.ttl"]);
    let query = |q: &str| -> Value {
        k.json(&[
            "retrieve",
            q,
            "--strategy",
            "hybrid",
            "--top-k",
            "4",
            "--format",
            "json",
        ])
    };
    let first = query("VPN remote access");
    let kept = first["trace"][1]["kept"].as_array().expect("kept");
    assert_eq!(first["trace"][1]["stage"], "rrf");
    assert_eq!(kept.len(), 4);
    assert!(kept.iter().all(|k| {
        k.as_str()
            .is_some_and(|k| k.contains("vector") && k.contains("bm25"))
    }));
    assert!(
        kept.iter()
            .any(|k| k.as_str().is_some_and(|k| k.contains("bm25 #1"))),
        "the best BM25 hit is fused in: {kept:?}"
    );
    // Rows written after the full-text index was built are found by BM25 too.
    k.load(&["fixtures/support/support.ttl"]);
    let second = query("chargeback");
    let top = second["unstructured"][0]["iri"].as_str().expect("iri");
    assert!(
        top.starts_with("https://w3id.org/kgfuse/fixtures/support/"),
        "{second}"
    );
    assert!(
        second["trace"][1]["kept"][0]
            .as_str()
            .is_some_and(|k| k.contains("bm25 #"))
    );
    k.assert_consistent();
}

#[test]
fn unified_keeps_text_and_generated_facts_apart() {
    let k = Kgfuse::hash();
    k.load(&[
        "ontology/kgfuse.ttl",
        "ontology/examples/pipeline.ttl",
        "fixtures/pipeline/pipeline.ttl",
    ]);
    let context = k.json(&[
        "retrieve",
        "Explain the ingestion pipeline and its connection to the KnowledgeGraphUpdateAgent",
        "--strategy",
        "unified",
        "--top-k",
        "4",
        "--format",
        "json",
    ]);
    assert_eq!(context["dispatch"], "hybrid");
    assert_eq!(context["unstructured"].as_array().expect("text").len(), 4);
    // The entity named in the question is linked by its IRI's local name ...
    let agent = "https://w3id.org/kgfuse/fixtures/pipeline/KnowledgeGraphUpdateAgent";
    let entities = context["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .find(|s| s["stage"] == "entities")
        .expect("entities stage");
    assert!(
        entities["kept"]
            .as_array()
            .expect("kept")
            .iter()
            .any(|e| e == agent),
        "{entities}"
    );
    // ... and the generated SPARQL brings back its data-flow facts.
    let facts = context["structured_facts"].as_array().expect("facts");
    assert!(
        facts.iter().any(|f| f["object"] == agent
            && f["predicate"]
                .as_str()
                .is_some_and(|p| p.ends_with("sendsDataTo"))),
        "{facts:?}"
    );
    // The worked example: the pipeline's components, data flow and consumed artifacts.
    for relation in ["hasComponent", "sendsDataTo", "consumesArtifact"] {
        assert!(
            facts.iter().any(|f| f["predicate"]
                .as_str()
                .is_some_and(|p| p.ends_with(relation))),
            "no {relation} fact: {facts:?}"
        );
    }
    // Every generated query passed the ontology check.
    let check = crate::harness::stage(&context, "ontology check");
    assert!(
        check["dropped"].as_array().is_some_and(Vec::is_empty),
        "{check}"
    );
    // Facts are relations and short values, never the prose of the text side.
    assert!(facts.iter().all(|f| {
        !f["predicate"]
            .as_str()
            .is_some_and(|p| p.ends_with("#text"))
    }));
    // Every executed query is recorded, parses and is read-only.
    let sparql = context["sparql"].as_array().expect("sparql");
    assert!(sparql.len() >= 3);
    for query in sparql {
        let query = query.as_str().expect("text");
        assert!(
            query.starts_with("SELECT") && query.contains("LIMIT"),
            "{query}"
        );
        k.ok(&["sparql", query, "--format", "json"]);
    }
}

#[test]
fn an_excluded_node_neither_appears_nor_is_counted() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/policy/policy.ttl"]);
    let question = "Can I work remotely from another country?";
    let args = |extra: &[&str]| {
        let mut args = vec!["retrieve", question, "--strategy", "flat", "--top-k", "5"];
        args.extend_from_slice(extra);
        args.extend(["--format", "json"]);
        k.json(&args)
    };
    let iris = |context: &Value| -> Vec<String> {
        context["unstructured"]
            .as_array()
            .expect("hits")
            .iter()
            .filter_map(|h| h["iri"].as_str().map(str::to_owned))
            .collect()
    };
    let all = args(&[]);
    let first = iris(&all).first().cloned().expect("a first hit");
    let without = args(&["--exclude", &first]);
    assert!(!iris(&without).contains(&first), "{without}");
    let exclude = without["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .find(|s| s["stage"] == "exclude")
        .unwrap_or_else(|| panic!("no exclude stage: {without}"));
    assert_eq!(exclude["dropped"][0]["iri"], first.as_str(), "{exclude}");
}

/// Model-assisted retrieval: `--expand` asks the configured model for one
/// hypothetical snippet and searches with it beside the question; the other
/// stages stay offline, the context keeps the question as asked, and the trace
/// shows the snippet. Without a configured model `--expand` is refused.
#[test]
fn expand_searches_with_the_models_hypothetical_snippet() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let reply = k.tmp.path().join("snippet.txt");
    std::fs::write(
        &reply,
        "A guess:\n```python\nfrom payment_fees.fees import cheapest_aci\n\
         cheapest_aci(rules, 100.0, card_scheme=\"NexPay\", is_credit=True)\n```\n",
    )
    .expect("reply file");
    let model = FakeModel::start(&reply, &k.tmp.path().join("asked.jsonl"));
    // No domain word the store knows: the question alone does not reach it.
    let question = "Which one is the least costly way to authorise a payment?";
    let retrieve = |expand: bool| -> Value {
        let mut cmd = k.cmd();
        cmd.args([
            "retrieve",
            question,
            "--strategy",
            "unified",
            "--offline",
            "--format",
            "json",
        ])
        .env("KGFUSE_LLM_BASE_URL", model.url())
        .env("KGFUSE_LLM_MODEL", "fake");
        if expand {
            cmd.arg("--expand");
        }
        let out = cmd.output().expect("run kgfuse");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON context")
    };
    let plain = retrieve(false);
    assert!(
        !names(&plain).contains(&"cheapest_aci".to_owned()),
        "{:?}",
        names(&plain)
    );
    // With the snippet it is among the first two: the loader of the fee rules
    // it needs (SGKR's back-chaining) may come first.
    let expanded = retrieve(true);
    assert!(
        names(&expanded)[..2].contains(&"cheapest_aci".to_owned()),
        "{:?}",
        names(&expanded)
    );
    assert_eq!(expanded["query"], question);
    assert_eq!(expanded["trace"][0]["stage"], "expansion");
    assert!(
        expanded["trace"][0]["kept"][0]
            .as_str()
            .is_some_and(|kept| kept.contains("cheapest_aci(rules, 100.0")),
        "{}",
        expanded["trace"][0]
    );

    let refused = k.fails(&["retrieve", question, "--expand"]);
    assert!(refused.contains("KGFUSE_LLM_BASE_URL"), "{refused}");
}
