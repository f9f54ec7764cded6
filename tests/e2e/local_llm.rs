//! Against a real local model: llama.cpp's OpenAI-compatible server (from
//! `make llm`) with SmolLM2-135M, started and stopped by each test on 127.0.0.1.
//! The tests run when the venv and the model are installed (`make test-llm`
//! requires them: KGFUSE_REQUIRE_LLM=1 turns a missing install into a failure).
//! The fake-server tests (ask.rs) keep covering the failure modes.

use crate::harness::{Kgfuse, stage};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The llama.cpp server of one test; killed when dropped.
struct LocalModel {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalModel {
    /// Starts the server with SmolLM2-135M, or `None` (with a note) when `make
    /// llm` has not been run and KGFUSE_REQUIRE_LLM is not set.
    fn start() -> Option<Self> {
        let home = std::env::var_os("KGFUSE_LLM_HOME").map_or_else(
            || PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/kgfuse/llm"),
            PathBuf::from,
        );
        let python = home.join("venv/bin/python");
        let model = home.join("models/smollm2-135m-instruct-q4_1.gguf");
        if !python.exists() || !model.exists() {
            assert!(
                std::env::var_os("KGFUSE_REQUIRE_LLM").is_none(),
                "no local model in {}: run `make llm`",
                home.display()
            );
            eprintln!("skipped: no local model in {} (make llm)", home.display());
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("address")
            .port();
        // The server's log beside the build, where scratch files belong.
        let log = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(std::env::temp_dir, PathBuf::from)
            .join(format!("kgfuse-llm-{port}.log"));
        let child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&model)
            .args(["--model_alias", "smollm2-135m", "--host", "127.0.0.1"])
            .args([
                "--port",
                &port.to_string(),
                "--n_threads",
                "2",
                "--n_ctx",
                "4096",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start the llama.cpp server");
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}/v1"),
            log,
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited ({status}): {}", server.log_text());
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                && ureq_get(&format!("{}/models", server.url))
            {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!("the server did not answer in 120 s: {}", server.log_text());
    }

    fn log_text(&mut self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            let _ = file.read_to_string(&mut text);
        }
        text
    }

    /// `kgfuse` with this server as its model.
    fn run(&self, k: &Kgfuse, args: &[&str]) -> Value {
        let out = k
            .cmd()
            .args(args)
            .env("KGFUSE_LLM_BASE_URL", &self.url)
            .env("KGFUSE_LLM_MODEL", "smollm2-135m")
            // Beside the rest of `make test` on 2 cores a reply can take minutes:
            // slowness is the machine's, not a failure of the loop under test.
            .env("KGFUSE_LLM_TIMEOUT_SECS", "600")
            .output()
            .expect("run kgfuse");
        assert!(
            out.status.success(),
            "kgfuse {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    }
}

/// Whether a GET answers 200 (the server is up), with a plain HTTP/1.0 request.
fn ureq_get(url: &str) -> bool {
    use std::io::Write;
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(stream, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

/// `kgfuse retrieve QUESTION --strategy unified --model-query --format json`
/// on `fixtures/org` with the local model (its reading, and its own query when
/// the reading's plan does not answer); `None` when none is installed.
fn unified_on_org(question: &str) -> Option<Value> {
    let model = LocalModel::start()?;
    let k = Kgfuse::hash();
    k.load(&["fixtures/org/org.ttl"]);
    Some(model.run(
        &k,
        &[
            "retrieve",
            question,
            "--strategy",
            "unified",
            "--model-query",
            "--format",
            "json",
        ],
    ))
}

#[test]
fn local_llm_writes_a_grammar_held_query_that_parses_and_names_only_known_terms() {
    let Some(context) = unified_on_org("Who manages the payments department?") else {
        return;
    };
    // A model whose plan answered has written the question's query: no
    // text-to-SPARQL stage then (the plan's own test is below).
    if context["answers"]["source"] == "model" {
        let query = context["answers"]["query"]
            .as_str()
            .expect("the plan's query");
        assert_eq!(context["sparql"][0].as_str(), Some(query));
        return;
    }
    let trace = stage(&context, "text-to-sparql");
    let kept: Vec<&str> = trace["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // The grammar holds the tiny model to a query over the store's terms: it
    // parses, names nothing unknown, and runs.
    let query = kept
        .iter()
        .find(|k| k.starts_with("SELECT") || k.starts_with("ASK"))
        .unwrap_or_else(|| panic!("no accepted query: {trace:#}"));
    for dropped in trace["dropped"].as_array().into_iter().flatten() {
        let why = dropped["why"].as_str().unwrap_or("");
        assert!(!why.contains("does not parse"), "{why}");
        assert!(!why.contains("neither declares nor uses"), "{why}");
    }
    assert!(
        context["sparql"]
            .as_array()
            .expect("executed queries")
            .iter()
            .any(|q| q.as_str() == Some(*query)),
        "{query} is among the executed queries"
    );
}

#[test]
fn local_llm_reads_the_question_held_to_the_stores_names() {
    let Some(context) = unified_on_org("How many vendors are in Norway?") else {
        return;
    };
    // When offline plans answer, the model chooses among them
    // (one request, held by a grammar to the readings' numbers) and writes no
    // plan unless it chooses none.
    let chose = context["trace"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["stage"] == "model choice");
    if let Some(choice) = chose {
        let kept: Vec<&str> = choice["kept"]
            .as_array()
            .expect("kept")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let shown = kept.iter().filter(|k| k.starts_with("reading ")).count();
        assert!(shown >= 1, "{choice:#}");
        let picked = kept
            .iter()
            .find_map(|k| k.strip_prefix("chose reading "))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("a reading chosen: {choice:#}"));
        assert!((1..=shown).contains(&picked), "{choice:#}");
        assert!(context["answers"]["query"].is_string(), "{context:#}");
        return;
    }
    let trace = stage(&context, "model plan");
    let plans: Vec<&str> = trace["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .filter_map(Value::as_str)
        .filter(|k| k.starts_with("reading "))
        .collect();
    assert!(!plans.is_empty(), "the model was asked: {trace:#}");
    // The grammar holds even the tiny model to a reading of the asked form
    // over the store's names: whatever went wrong, it was never the form or a
    // name.
    for dropped in trace["dropped"].as_array().into_iter().flatten() {
        let why = dropped["why"].as_str().unwrap_or("");
        assert!(!why.contains("not of the form asked"), "{why}");
        assert!(!why.starts_with("there is no"), "{why}");
    }
    // And an answer is there, the model's or the offline planner's.
    assert!(
        context["answers"]["query"].is_string(),
        "{:#}",
        context["answers"]
    );
}

#[test]
fn local_llm_answers_in_json_mode_with_citations_or_says_insufficient() {
    let Some(model) = LocalModel::start() else {
        return;
    };
    let k = Kgfuse::hash();
    k.load(&["ontology/kgfuse.ttl", "fixtures/policy/policy.ttl"]);
    let answer = model.run(
        &k,
        &[
            "ask",
            "How many days per week can employees work remotely?",
            "--format",
            "json",
        ],
    );
    let status = answer["status"].as_str().unwrap_or("");
    assert!(
        ["answered", "insufficient_context"].contains(&status),
        "{answer:#}"
    );
    if status == "answered" {
        // Every citation names a passage that was retrieved.
        let citations = answer["citations"].as_array().expect("citations");
        assert!(!citations.is_empty(), "{answer:#}");
    }
    let calls = answer["usage"]["calls"].as_u64().unwrap_or(0);
    assert!(calls >= 1, "the model was asked: {}", answer["usage"]);
}
