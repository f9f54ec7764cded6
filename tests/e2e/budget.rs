//! The model-call budget, counted at a stand-in OpenAI-compatible server
//! (`eval/tasks/fake_model.py`, which logs every request): per question, an
//! understanding makes at most one request plus one repair of its plan; the
//! strategies that search by the words make none; `domain` asks for a package
//! and judges its candidates in one request; `ask` adds one draft. A reply
//! that is not of the form asked costs at most one retry per request.

use crate::harness::{FakeModel, Kgfuse};
use serde_json::Value;

const QUESTION: &str = "Which vendors in Norway sell pumps?";

/// A store with data (the org graph), policies and code (payment fees), so
/// that every strategy, the code channel and the answer loop have something
/// to do.
fn mixed_store() -> Kgfuse {
    let k = Kgfuse::hash();
    k.load(&[
        "ontology/kgfuse.ttl",
        "fixtures/org/org.ttl",
        "fixtures/policy/policy.ttl",
    ]);
    k.ingest_payment_fees();
    k
}

/// Runs `kgfuse ARGS` against the stand-in model and returns its JSON output
/// and how many chat requests it made.
fn counted(k: &Kgfuse, model: &FakeModel, log: &std::path::Path, args: &[&str]) -> (Value, usize) {
    let _ = std::fs::remove_file(log);
    let out = k
        .cmd()
        .args(args)
        .args(["--format", "json"])
        .env("KGFUSE_LLM_BASE_URL", model.url())
        .env("KGFUSE_LLM_MODEL", "fake")
        .output()
        .expect("run kgfuse");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = std::fs::read_to_string(log).map_or(0, |text| text.lines().count());
    let json = serde_json::from_slice(&out.stdout).expect("JSON output");
    (json, requests)
}

/// The stage names of a context's or answer's trace, for failure messages.
fn stages(json: &Value) -> Vec<String> {
    json["trace"]
        .as_array()
        .map(|stages| {
            stages
                .iter()
                .map(|s| s["stage"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A model that answers every request with `{}`: no kind, no plan, no label,
/// no judgement, no draft. Each request is retried at most once.
#[test]
fn a_model_that_replies_with_garbage_costs_at_most_one_retry_per_request() {
    let k = mixed_store();
    let reply = k.tmp.path().join("reply.txt");
    std::fs::write(&reply, "{}").expect("reply file");
    let log = k.tmp.path().join("asked.jsonl");
    let model = FakeModel::start(&reply, &log);
    for (strategy, budget) in [
        ("flat", 0),
        ("bm25", 0),
        ("hybrid", 0),
        ("paths", 0),
        ("neighborhood", 0),
        // No offline plan answers this question, so there is no choice to
        // ask for; the reading: `{}` has no plan, so there is nothing to
        // repair. (With readings to choose from, the choice comes first and
        // a `{}` choice is none: two requests, the understanding's budget.)
        ("unified", 1),
        ("auto", 1),
        // The package pick and the gate, each re-asked once.
        ("domain", 4),
    ] {
        let (context, requests) = counted(
            &k,
            &model,
            &log,
            &["retrieve", QUESTION, "--strategy", strategy],
        );
        assert_eq!(
            requests,
            budget,
            "{strategy}: {requests} requests; stages {:?}",
            stages(&context)
        );
    }
    // The understanding (a choice when the graph has readings, then the
    // reading), then the draft, re-asked once; the extractive answer stands.
    let question = "How many days a week can I work remotely?";
    let (answer, requests) = counted(&k, &model, &log, &["ask", question]);
    assert!((3..=4).contains(&requests), "{requests} requests: {answer}");
    assert_eq!(answer["usage"]["calls"], requests, "{}", answer["usage"]);
}

/// A model that reads the question well: one request answers it. Its reply
/// chooses the graph's first reading (`"reading": 1`) and, were it asked for a
/// plan instead, is one too.
#[test]
fn a_model_that_reads_the_question_answers_it_in_one_request() {
    let k = mixed_store();
    let reply = k.tmp.path().join("reply.txt");
    std::fs::write(
        &reply,
        r#"{"reading": 1, "answer": "rows", "class": "Vendor", "where": [{"path": "basedIn/inCountry", "is": "Norway"}, {"path": "sells", "is": "Pumps"}]}"#,
    )
    .expect("reply file");
    let log = k.tmp.path().join("asked.jsonl");
    let model = FakeModel::start(&reply, &log);
    for strategy in ["unified", "auto"] {
        let (context, requests) = counted(
            &k,
            &model,
            &log,
            &["retrieve", QUESTION, "--strategy", strategy],
        );
        assert_eq!(requests, 1, "{strategy}: stages {:?}", stages(&context));
        assert_eq!(context["dispatch"], "factual");
        let source = context["answers"]["source"].as_str().unwrap_or("");
        assert!(
            source == "model" || source == "planner",
            "{}",
            context["answers"]
        );
        let rows = context["answers"]["rows"].to_string();
        assert!(rows.contains("fjord-pumpeverk"), "{rows}");
        // The reading's prompt opens with the store's menu, the part every
        // question over this store shares.
        let asked = std::fs::read_to_string(&log).expect("log");
        let messages: Value = serde_json::from_str(asked.lines().next().expect("one request"))
            .expect("logged messages");
        let user = messages[1]["content"].as_str().unwrap_or("");
        assert!(
            user.starts_with("Classes and properties of this graph"),
            "{user}"
        );
    }
    // `ask` answers from the same reading's rows, with no other request.
    let (answer, requests) = counted(&k, &model, &log, &["ask", QUESTION]);
    assert_eq!(requests, 1, "{answer}");
    assert_eq!(answer["status"], "answered", "{answer}");
}
