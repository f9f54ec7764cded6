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
    let kgfuse = assert_cmd::cargo::cargo_bin("kgfuse").display().to_string();
    let (tasks, data, url) = (
        tasks.display().to_string(),
        k.data().display().to_string(),
        model.url(),
    );
    let out = report.display().to_string();
    python(
        "run.py",
        &[
            "--tasks",
            &tasks,
            "--python",
            "python3",
            "--conditions",
            "none,bm25",
            "--kgfuse",
            &kgfuse,
            "--data",
            &data,
            "--model-url",
            &url,
            "--model",
            "fake",
            "--timeout",
            "20",
            "--max-items",
            "8",
            "--out",
            &out,
        ],
        scratch,
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

/// Runs one of the harness's Python scripts with the caches in `scratch`.
fn python(script: &str, args: &[&str], scratch: &std::path::Path) -> String {
    let output = Command::new("python3")
        .arg(root().join("eval/tasks").join(script))
        .args(args)
        .env("KGFUSE_TASKS_DIR", scratch)
        .output()
        .expect("python3 runs the harness");
    assert!(
        output.status.success(),
        "{script} {args:?} failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn function_tasks_from_a_tiny_package_pass_and_fail_under_every_condition() {
    let k = Kgfuse::empty();
    let scratch = k.tmp.path().join("functions");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let at = |name: &str| scratch.join(name).display().to_string();
    let fixture = root().join("fixtures/function-tasks/tinycalc");
    // The package's suite under coverage, its tasks, the tree the store is built
    // from (every task's body left out), the store and the tasks bound to it.
    python(
        "functions.py",
        &["prepare", "--dir", &fixture.display().to_string()],
        &scratch,
    );
    python(
        "functions.py",
        &["tasks", "tinycalc==0.1", "--out", &at("tasks.jsonl")],
        &scratch,
    );
    python(
        "functions.py",
        &[
            "masked",
            "tinycalc==0.1",
            "--tasks",
            &at("tasks.jsonl"),
            "--out",
            &at("masked"),
        ],
        &scratch,
    );
    let masked = std::fs::read_to_string(scratch.join("masked/tinycalc/text.py")).expect("masked");
    assert!(
        !masked.contains("mean length"),
        "the reference body left the store's source: {masked}"
    );
    let kgfuse = assert_cmd::cargo::cargo_bin("kgfuse").display().to_string();
    python(
        "function_contexts.py",
        &[
            "--tasks",
            &at("tasks.jsonl"),
            "--masked",
            &at("masked"),
            "--kgfuse",
            &kgfuse,
            "--data",
            &at("store"),
            "--out",
            &at("bound.jsonl"),
        ],
        &scratch,
    );

    // The fixed reply writes `summary` back: that task passes, the others fail.
    let log = scratch.join("prompts.jsonl");
    let model = FakeModel::start(&root().join("eval/tasks/testdata/tinycalc-reply.txt"), &log);
    let conditions = "none,bm25-chunks,unified,oracle";
    python(
        "run.py",
        &[
            "--tasks",
            &at("bound.jsonl"),
            "--python",
            "python3",
            "--conditions",
            conditions,
            "--kgfuse",
            &kgfuse,
            "--budget-tokens",
            "600",
            "--model-url",
            &model.url(),
            "--model",
            "fake",
            "--timeout",
            "60",
            "--out",
            &at("report.json"),
        ],
        &scratch,
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.join("report.json")).expect("report"),
    )
    .expect("JSON report");
    for condition in conditions.split(',') {
        let summary = &report["conditions"][condition];
        assert_eq!(summary["tasks"], 3, "{condition}: {summary}");
        assert!(
            (summary["pass_at_1"].as_f64().unwrap_or(0.0) - 1.0 / 3.0).abs() < 1e-9,
            "{condition}: {summary}"
        );
    }
    let passed: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["kind"] == "pass")
        .filter_map(|r| r["task"].as_str())
        .collect();
    assert!(
        passed.iter().all(|t| t.ends_with("tinycalc.text.summary")),
        "{passed:?}"
    );
    // Dependency recall: the oracle shows every callee, no context none.
    assert_eq!(report["conditions"]["oracle"]["dependency_recall"], 1.0);
    assert_eq!(report["conditions"]["none"]["dependency_recall"], 0.0);
    // No context shows the test that exercises `summary`, nor its reference body.
    for prompt in prompts(&log) {
        assert!(!prompt.contains("mean length {average"), "{prompt}");
        assert!(!prompt.contains("def test_summary"), "{prompt}");
    }
}
