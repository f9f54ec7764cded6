//! A process killed in the middle of a load must leave a store that `check`
//! accepts after the next open.

use crate::harness::Kgfuse;
use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A Turtle file with `n` labelled and commented nodes (~2n triples to embed).
fn big_turtle(k: &Kgfuse, name: &str, n: usize) -> String {
    let mut text = String::from("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n");
    for i in 0..n {
        let _ = writeln!(
            text,
            "<urn:x:sensor{i}> rdfs:label \"sensor {i}\" ; rdfs:comment \"Reads channel {} of bus {} every {} ms\" .",
            i % 64,
            i % 7,
            10 + i % 90
        );
    }
    k.file(name, &text)
}

fn kgfuse_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("kgfuse")
}

#[test]
fn kill_9_at_any_point_of_a_load_leaves_a_consistent_store() {
    let k = Kgfuse::hash();
    let journal = k.data().join("journal.json");
    for (round, delay_ms) in [0u64, 150, 600, 1500].into_iter().enumerate() {
        let file = big_turtle(&k, &format!("big{round}.ttl"), 20_000);
        let mut child = Command::new(kgfuse_bin())
            .arg("--data")
            .arg(k.data())
            .args(["load", &file])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn load");
        // Wait until the load has started writing, then give it `delay_ms` more.
        let started = Instant::now();
        while !journal.exists() && started.elapsed() < Duration::from_secs(60) {
            if child.try_wait().expect("poll").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        k.assert_consistent();
    }
    // The store stays usable: loading everything again completes and agrees.
    let file = big_turtle(&k, "big-final.ttl", 1_000);
    k.ok(&["load", &file]);
    k.assert_consistent();
}

#[test]
fn a_crash_between_graph_commit_and_vectors_is_repaired_on_open() {
    let k = Kgfuse::hash();
    // A fresh store already holds the kgfuse vocabulary's nodes.
    let carried = k.check_json()["nodes"].as_u64().expect("nodes");
    let file = big_turtle(&k, "crash.ttl", 500);
    k.load_crashing_after_graph_commit(&file);
    // The next open repairs before answering.
    let report = k.check_json();
    assert_eq!(
        report["missing_rows"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    assert_eq!(report["nodes"], carried + 500);
    assert_eq!(report["rows"], carried + 500);
    assert!(
        !k.data().join("journal.json").exists(),
        "journal cleared after repair"
    );
}
