//! The lexicon's index on disk (`<data>/lexicon/`): built by the first question
//! after a write, read as it is by the next process, brought in step after a
//! write and after a crash, named by `check` when it disagrees with the graph,
//! and mended by `check --repair`.

use crate::harness::Kgfuse;
use serde_json::Value;
use std::fmt::Write as _;

/// Boiler parts, labelled and described, under `urn:x:`.
fn parts(k: &Kgfuse, name: &str, parts: &[(&str, &str, &str)]) -> String {
    let mut text = String::from("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n");
    for (id, label, comment) in parts {
        let _ = writeln!(
            text,
            "<urn:x:{id}> rdfs:label \"{label}\" ; rdfs:comment \"{comment}\" ."
        );
    }
    k.file(name, &text)
}

const BOILER: &[(&str, &str, &str)] = &[
    (
        "valve",
        "pressure relief valve",
        "Opens when the pressure in the boiler is too high.",
    ),
    (
        "pump",
        "circulation pump",
        "Moves heated water through the radiators.",
    ),
    (
        "burner",
        "gas burner",
        "Burns gas to heat the water in the exchanger.",
    ),
];

/// A part the boiler's first file leaves out.
const VESSEL: &[(&str, &str, &str)] = &[(
    "vessel",
    "expansion vessel",
    "Takes up the water's expansion as it heats.",
)];

/// `kgfuse retrieve QUESTION --strategy bm25` with the log at info: the IRIs
/// it found, best first, and the log.
fn bm25(k: &Kgfuse, question: &str) -> (Vec<String>, String) {
    let out = k
        .cmd()
        .env("KGFUSE_LOG", "info")
        .args([
            "retrieve",
            question,
            "--strategy",
            "bm25",
            "--format",
            "json",
        ])
        .output()
        .expect("run kgfuse retrieve");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "retrieve failed: {log}");
    let context: Value = serde_json::from_slice(&out.stdout).expect("context JSON");
    let iris = context["unstructured"]
        .as_array()
        .expect("unstructured hits")
        .iter()
        .filter_map(|hit| hit["iri"].as_str().map(str::to_owned))
        .collect();
    (iris, log)
}

const BUILT: &str = "lexicon: index brought in step with the store";
const READ: &str = "lexicon: read from its index, in step with the store";

#[test]
fn a_second_process_reads_the_index_without_rebuilding_it() {
    let k = Kgfuse::hash();
    k.ok(&["load", &parts(&k, "boiler.ttl", BOILER)]);
    let (first, log) = bm25(&k, "which valve opens when the pressure is too high");
    assert!(log.contains(BUILT), "{log}");
    assert_eq!(first.first().map(String::as_str), Some("urn:x:valve"));
    assert!(k.data().join("lexicon").join("meta.json").exists());
    let (second, log) = bm25(&k, "which valve opens when the pressure is too high");
    assert!(log.contains(READ), "{log}");
    assert!(!log.contains(BUILT), "{log}");
    assert_eq!(second, first);
    // A write of one node: the next process reads that node again, not the
    // whole graph, and `check` (which reads the whole graph) agrees.
    let vessel = parts(&k, "vessel.ttl", VESSEL);
    k.ok(&["load", &vessel]);
    let (after, log) = bm25(&k, "expansion vessel");
    assert_eq!(after.first().map(String::as_str), Some("urn:x:vessel"));
    assert!(log.contains(BUILT), "{log}");
    assert!(log.contains("read=\"the written nodes\""), "{log}");
    assert!(log.contains("written=1"), "{log}");
    k.assert_consistent();
}

#[test]
fn a_write_and_a_crash_after_its_graph_commit_reach_the_index() {
    let k = Kgfuse::hash();
    k.ok(&["load", &parts(&k, "boiler.ttl", BOILER)]);
    let (before, _) = bm25(&k, "expansion vessel");
    assert!(!before.contains(&"urn:x:vessel".to_owned()), "{before:?}");
    // Killed right after the graph took the new node, before anything else.
    let vessel = parts(&k, "vessel.ttl", VESSEL);
    k.load_crashing_after_graph_commit(&vessel);
    let (after, log) = bm25(&k, "expansion vessel");
    assert_eq!(after.first().map(String::as_str), Some("urn:x:vessel"));
    assert!(log.contains(BUILT), "{log}");
    // Only the new entry was written; the three others were kept as they were.
    assert!(log.contains("written=1"), "{log}");
    k.assert_consistent();
    // A changed label rewrites its entry: the old name no longer finds it.
    k.ok(&[
        "sparql",
        "--update",
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> \
         DELETE { GRAPH ?g { <urn:x:pump> rdfs:label ?l } } \
         INSERT { GRAPH ?g { <urn:x:pump> rdfs:label \"heating pump\" } } \
         WHERE { GRAPH ?g { <urn:x:pump> rdfs:label ?l } }",
    ]);
    let (renamed, _) = bm25(&k, "heating pump");
    assert_eq!(renamed.first().map(String::as_str), Some("urn:x:pump"));
    let (old, _) = bm25(&k, "circulation");
    assert!(!old.contains(&"urn:x:pump".to_owned()), "{old:?}");
}

#[test]
fn check_names_an_index_that_disagrees_with_the_graph_and_repair_mends_it() {
    let k = Kgfuse::hash();
    k.ok(&["load", &parts(&k, "boiler.ttl", BOILER)]);
    let _ = bm25(&k, "gas burner");
    let writes = k.data().join("writes");
    let counted = std::fs::read_to_string(&writes).expect("the store counts its writes");
    k.ok(&[
        "load",
        &parts(
            &k,
            "more.ttl",
            &[("flue", "flue", "Carries the exhaust gases out.")],
        ),
    ]);
    // The write happened but its count was lost: the index claims to be in
    // step with a graph that has moved on.
    std::fs::write(&writes, counted).expect("rewind the count");
    let out = k.run(&["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("the lexicon's index disagrees with the graph: 1 entries to write"),
        "{stdout}"
    );
    let repaired = k.run(&["check", "--repair"]);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    k.assert_consistent();
    let (found, log) = bm25(&k, "exhaust gases");
    assert_eq!(found.first().map(String::as_str), Some("urn:x:flue"));
    assert!(log.contains(READ), "{log}");
}
