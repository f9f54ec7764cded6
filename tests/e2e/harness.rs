//! A fresh kgfuse data directory per test, and helpers to run the binary on it.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The workspace root (for ontology/, fixtures/, queries/).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A temporary data directory and the binary to run on it.
pub struct Kgfuse {
    pub tmp: tempfile::TempDir,
    /// Environment every command of this store gets (credentials of its servers).
    pub env: Vec<(String, String)>,
}

impl Kgfuse {
    /// A data directory not initialised yet.
    pub fn empty() -> Self {
        Self {
            tmp: tempfile::tempdir().expect("tempdir"),
            env: Vec::new(),
        }
    }

    /// A data directory initialised with the hash embedder (fast, no model).
    pub fn hash() -> Self {
        let k = Self::empty();
        k.ok(&["init", "--embedder", "hash", "--dimension", "128"]);
        k
    }

    /// A data directory initialised with the real MiniLM model (`make models`).
    pub fn minilm() -> Self {
        let dir = minilm_dir();
        assert!(
            dir.join("model.safetensors").is_file(),
            "MiniLM is not provisioned in {}: run `make models` (make test does)",
            dir.display()
        );
        let k = Self::empty();
        let dir = dir.display().to_string();
        k.ok(&["init", "--embedder", "minilm", "--model-dir", &dir]);
        k
    }

    /// Ingests the payment-fees fixture (SGKR case study) with its knowledge file.
    pub fn ingest_payment_fees(&self) {
        let fixture = root().join("fixtures/payment-fees");
        self.ok(&[
            "ingest",
            "code",
            &fixture.display().to_string(),
            "--knowledge",
            &fixture.join("knowledge.toml").display().to_string(),
        ]);
    }

    /// Loads files given relative to the workspace root.
    pub fn load(&self, files: &[&str]) {
        let mut args = vec!["load".to_owned()];
        args.extend(files.iter().map(|f| root().join(f).display().to_string()));
        self.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }

    pub fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    /// `kgfuse --data <dir>` ready for more arguments, run from the workspace root.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("kgfuse").expect("kgfuse binary");
        cmd.current_dir(root())
            .arg("--data")
            .arg(self.data())
            .env_remove("KGFUSE_FAULT")
            .env_remove("KGFUSE_LLM_BASE_URL")
            .env_remove("KGFUSE_LLM_MODEL")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// [`Kgfuse::cmd`] as a std command, for a child with pipes (a server).
    pub fn std_cmd(&self) -> std::process::Command {
        let cmd = self.cmd();
        let mut std_cmd = std::process::Command::new(cmd.get_program());
        std_cmd.args(cmd.get_args());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(value) => std_cmd.env(key, value),
                None => std_cmd.env_remove(key),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            std_cmd.current_dir(dir);
        }
        std_cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run kgfuse")
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "kgfuse {args:?} failed\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs and asserts failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kgfuse {args:?} should fail\nstdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Runs and asserts success; parses stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kgfuse {args:?}: not JSON ({e}): {out}"))
    }

    /// The FusedContext `kgfuse retrieve` gives for `question` with `strategy`.
    pub fn retrieve(&self, question: &str, strategy: &str) -> Value {
        self.json(&[
            "retrieve",
            question,
            "--strategy",
            strategy,
            "--format",
            "json",
        ])
    }

    pub fn stats(&self) -> Value {
        self.json(&["stats", "--json"])
    }

    pub fn check_json(&self) -> Value {
        let out = self.run(&["check", "--json"]);
        serde_json::from_slice(&out.stdout).expect("check json")
    }

    /// Asserts `kgfuse check` exits 0.
    /// `kgfuse load FILE` killed (like `kill -9`) right after the graph commit, before
    /// the rest of the write; asserts it died and left its journal behind.
    pub fn load_crashing_after_graph_commit(&self, file: &str) {
        let out = self
            .cmd()
            .env("KGFUSE_FAULT", "after-graph-commit")
            .args(["load", file])
            .output()
            .expect("run");
        assert!(!out.status.success(), "the fault hook aborts the process");
        assert!(
            self.data().join("journal.json").exists(),
            "journal left behind"
        );
    }

    pub fn assert_consistent(&self) {
        let out = self.ok(&["check"]);
        assert!(out.contains("check ok"), "{out}");
    }

    /// Writes a file in the temp dir and returns its path as a string.
    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.tmp.path().join(name);
        std::fs::write(&path, text).expect("write file");
        path.display().to_string()
    }
}

/// Where `make models` puts all-MiniLM-L6-v2 (`KGFUSE_MINILM_DIR` overrides).
pub fn minilm_dir() -> PathBuf {
    std::env::var_os("KGFUSE_MINILM_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/kgfuse/models/all-MiniLM-L6-v2")
        },
        PathBuf::from,
    )
}

/// Asserts that every step of an evidence path is one of the returned facts
/// (in either direction).
pub fn assert_steps_are_facts(path: &[&str], facts: &[Value]) {
    for pair in path.windows(2) {
        assert!(
            facts
                .iter()
                .any(|f| (f["subject"] == pair[0] && f["object"] == pair[1])
                    || (f["subject"] == pair[1] && f["object"] == pair[0])),
            "no fact for step {pair:?}"
        );
    }
}

/// The trace stage called `name`.
pub fn stage<'a>(context: &'a Value, name: &str) -> &'a Value {
    context["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("no {name} stage: {}", context["trace"]))
}

/// All fixture and ontology Turtle files (not the deliberately malformed ones).
pub fn turtle_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() && !path.ends_with("malformed") {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "ttl") {
                out.push(path.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("ontology"), &mut out);
    walk(&root().join("fixtures"), &mut out);
    out
}

/// An OpenAI-compatible server that gives every request the same reply
/// (`eval/tasks/fake_model.py`) and logs what it was asked; stopped when dropped.
pub struct FakeModel {
    child: std::process::Child,
    pub port: u16,
}

impl FakeModel {
    pub fn start(reply_file: &Path, log: &Path) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = std::process::Command::new("python3")
            .arg(root().join("eval/tasks/fake_model.py"))
            .arg("--reply-file")
            .arg(reply_file)
            .arg("--log")
            .arg(log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs eval/tasks/fake_model.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the fake model prints its port");
        let port = line.trim().parse().expect("a port number");
        Self { child, port }
    }

    /// The server's base URL, as KGFUSE_LLM_BASE_URL takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names of a FusedContext's functions, in order.
pub fn function_names(context: &Value) -> Vec<String> {
    context["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect()
}
