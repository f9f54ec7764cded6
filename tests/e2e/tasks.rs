//! The task-success harness (`eval/tasks/run.py`) end to end: two tiny tasks, one
//! that the fixed reply passes and one that it fails, asked of a fake
//! OpenAI-compatible server under `none` and a kgfuse strategy over the fee fixture.
//! Nothing here depends on a model's quality.

use crate::harness::{FakeModel, Kgfuse, root};
use serde_json::{Value, json};
use std::process::Command;

/// Runs `run.py` and returns its report (the `--out` file).
fn run_harness(
    k: &Kgfuse,
    tasks: &std::path::Path,
    model: &FakeModel,
    scratch: &std::path::Path,
) -> Value {
    let report = scratch.join("report.json");
    let kgfuse = assert_cmd::cargo::cargo_bin("kgfuse");
    let output = Command::new("python3")
        .arg(root().join("eval/tasks/run.py"))
        .arg("--tasks")
        .arg(tasks)
        .args(["--python", "python3", "--conditions", "none,bm25"])
        .arg("--kgfuse")
        .arg(&kgfuse)
        .arg("--data")
        .arg(k.data())
        .arg("--model-url")
        .arg(model.url())
        .args(["--model", "fake", "--timeout", "20", "--max-items", "8"])
        .arg("--out")
        .arg(&report)
        .env("KGFUSE_TASKS_DIR", scratch)
        .output()
        .expect("python3 runs eval/tasks/run.py");
    assert!(
        output.status.success(),
        "run.py failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON report")
}

/// The user messages the fake model received, in order.
fn prompts(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let messages: Value = serde_json::from_str(line).expect("a logged request");
            messages[1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn the_task_harness_scores_a_passing_and_a_failing_task_and_resumes_from_its_cache() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let scratch = k.tmp.path().join("tasks");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    // The tiny tasks, asked about the fee domain; the second one may not see
    // `average_fee` (as a DS-1000 task may not see its origin's worked example).
    let average_fee = k.json(&[
        "sparql",
        "SELECT ?f WHERE { ?f <https://w3id.org/kgfuse/ontology#qualifiedName> \"payment_fees.fees.average_fee\" }",
        "--format",
        "json",
    ])["results"]["bindings"][0]["f"]["value"]
        .as_str()
        .expect("average_fee's IRI")
        .to_owned();
    // (bm25 ranks `average_fee` fifth of eight for this question.)
    let question = "average fee for a transaction value with a card scheme";
    let mut lines = String::new();
    let testdata =
        std::fs::read_to_string(root().join("eval/tasks/testdata/tiny.jsonl")).expect("tiny.jsonl");
    for (n, line) in testdata.lines().enumerate() {
        let mut task: Value = serde_json::from_str(line).expect("a task");
        task["question"] = json!(question);
        if n == 1 {
            task["exclude"] = json!([average_fee]);
        }
        lines.push_str(&format!("{task}\n"));
    }
    let tasks = scratch.join("tiny.jsonl");
    std::fs::write(&tasks, lines).expect("tasks file");

    let log = scratch.join("prompts.jsonl");
    let model = FakeModel::start(&root().join("eval/tasks/testdata/tiny-reply.txt"), &log);
    let report = run_harness(&k, &tasks, &model, &scratch);

    // The fixed reply defines `double`: the first task passes, the second fails
    // its check (a wrong answer, not a crash of the harness), under both conditions.
    for condition in ["none", "bm25"] {
        let summary = &report["conditions"][condition];
        assert_eq!(summary["tasks"], 2, "{summary}");
        assert_eq!(summary["pass_at_1"], 0.5, "{summary}");
        assert_eq!(summary["failures"], json!({"exception": 1}), "{summary}");
    }
    let kinds: Vec<(String, String, String)> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap_or_default().to_owned(),
                r["condition"].as_str().unwrap_or_default().to_owned(),
                r["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("doubles".into(), "bm25".into(), "pass".into())),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("triples".into(), "none".into(), "exception".into())),
        "{kinds:?}"
    );

    // The model saw the context under bm25 only, and the excluded function only
    // in the task that did not exclude it.
    let asked = prompts(&log);
    assert_eq!(asked.len(), 4, "{asked:?}");
    let header = "Context from the library's knowledge graph";
    let with_context: Vec<&String> = asked.iter().filter(|p| p.contains(header)).collect();
    assert_eq!(with_context.len(), 2, "{asked:?}");
    // (`FeeTable.average_fee` is another function, a method.)
    let signature = "def average_fee(fee_rules";
    assert!(with_context[0].contains(signature), "{}", with_context[0]);
    assert!(!with_context[1].contains(signature), "{}", with_context[1]);
    assert!(
        report["conditions"]["bm25"]["context_tokens"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );

    // A second run answers from the cache: the model is not asked again.
    let again = run_harness(&k, &tasks, &model, &scratch);
    assert_eq!(prompts(&log).len(), 4);
    assert_eq!(again["conditions"], report["conditions"]);
}
