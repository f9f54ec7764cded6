//! `kgfuse sparql`: formats, files with bindings, errors, timeouts, updates.

use crate::harness::{Kgfuse, root};

fn loaded() -> Kgfuse {
    let k = Kgfuse::hash();
    let ontology = root().join("ontology/kgfuse.ttl").display().to_string();
    k.ok(&["load", &ontology]);
    k
}

#[test]
fn select_ask_construct_in_every_format() {
    let k = loaded();
    let q = "SELECT ?c ?label WHERE { ?c a owl:Class ; rdfs:label ?label } ORDER BY ?c";
    let table = k.ok(&["sparql", q]);
    assert!(
        table.contains("kgfuse:Function") && table.contains("│"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&k.ok(&["sparql", q, "--format", "json"])).expect("json");
    let rows = json["results"]["bindings"].as_array().expect("bindings");
    assert!(rows.len() >= 15, "{} classes", rows.len());
    for format in ["csv", "tsv", "xml"] {
        assert!(
            k.ok(&["sparql", q, "--format", format])
                .contains("Function"),
            "{format}"
        );
    }
    assert_eq!(
        k.ok(&["sparql", "ASK { kgfuse:calls a owl:ObjectProperty }"])
            .trim(),
        "true"
    );
    let turtle = k.ok(&[
        "sparql",
        "CONSTRUCT { ?c rdfs:label ?l } WHERE { ?c rdfs:subClassOf kgfuse:CodeEntity ; rdfs:label ?l }",
        "--format",
        "turtle",
    ]);
    assert!(turtle.contains("kgfuse:Package rdfs:label"), "{turtle}");
}

#[test]
fn a_query_file_names_the_files_beside_it_with_relative_iris() {
    let k = Kgfuse::hash();
    let dir = k.data().join("queries-beside-data");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("people.ttl"), "<urn:ann> <urn:name> \"Ann\" .\n").expect("write");
    std::fs::write(
        dir.join("names.rq"),
        "SELECT ?n FROM <people.ttl> WHERE { ?s <urn:name> ?n }",
    )
    .expect("write");
    k.ok(&["load", &dir.join("people.ttl").display().to_string()]);
    let query = dir.join("names.rq").display().to_string();
    let out = k.ok(&["sparql", "--file", &query, "--format", "csv"]);
    assert_eq!(
        out.trim().lines().collect::<Vec<_>>(),
        ["n", "Ann"],
        "{out}"
    );
    // Given as text, the same query has no base to resolve `<people.ttl>` against.
    let text = std::fs::read_to_string(&query).expect("read");
    let err = k.fails(&["sparql", &text]);
    assert!(err.contains("relative IRI needs a BASE"), "{err}");
}

#[test]
fn canned_queries_run_from_files_with_bindings() {
    let k = loaded();
    let out = k.ok(&[
        "sparql",
        "--file",
        "queries/describe.rq",
        "--bind",
        "entity=kgfuse:calls",
        "--format",
        "csv",
    ]);
    assert!(
        out.contains("http://www.w3.org/2000/01/rdf-schema#subPropertyOf"),
        "{out}"
    );
    let stderr = k.fails(&[
        "sparql",
        "--file",
        "queries/describe.rq",
        "--bind",
        "entity=nope:x",
    ]);
    assert!(stderr.contains("unknown prefix"), "{stderr}");
}

#[test]
fn syntax_errors_name_the_position_and_timeouts_cancel() {
    let k = loaded();
    let stderr = k.fails(&["sparql", "SELECT ?s WHERE {\n  ?s ?p \n}"]);
    assert!(
        stderr.contains("at 3:2"),
        "line:column expected, got: {stderr}"
    );
    let bad = k.file("bad.rq", "SELECT * WHERE { ?s ?p ?o");
    let stderr = k.fails(&["sparql", "--file", &bad]);
    assert!(stderr.contains("bad.rq"), "{stderr}");
    let stderr = k.fails(&[
        "sparql",
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }",
        "--timeout",
        "1",
    ]);
    assert!(stderr.contains("timeout"), "{stderr}");
}

#[test]
fn updates_keep_vectors_in_step() {
    let k = loaded();
    let rows = |k: &Kgfuse| k.stats()["vector_rows"].as_u64().expect("rows");
    let before = rows(&k);
    k.ok(&[
        "sparql",
        "--update",
        "INSERT DATA { GRAPH <urn:x:notes> { <urn:x:n1> rdfs:label \"A note about CAN frames\" } }",
    ]);
    assert_eq!(rows(&k), before + 1);
    k.assert_consistent();
    k.ok(&[
        "sparql",
        "--update",
        "DELETE { ?c rdfs:comment ?x } WHERE { ?c rdfs:comment ?x FILTER(?c = kgfuse:Case) }",
    ]);
    k.assert_consistent();
    k.ok(&["sparql", "--update", "DROP GRAPH <urn:x:notes>"]);
    assert_eq!(rows(&k), before);
    k.assert_consistent();
    let stderr = k.fails(&["sparql", "--update", "INSERT DATA { <urn:a> }"]);
    assert!(stderr.contains("syntax"), "{stderr}");
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    use std::io::Read;
    let k = loaded();
    // Enough rows to fill the pipe: every triple of the vocabulary, a few times over.
    let mut child = k
        .std_cmd()
        .args([
            "sparql",
            "SELECT * WHERE { ?s ?p ?o . VALUES ?n { 1 2 3 4 5 6 7 8 } }",
            "--format",
            "tsv",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("the first bytes");
    // The pipe's read end is dropped here, as `| head -c 16` would.
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("error"),
        "{stderr}"
    );
    assert!(
        out.status.success() || out.status.code() == Some(141),
        "{:?}",
        out.status
    );
}
