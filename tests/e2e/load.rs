//! Loading RDF: fixtures, atomicity on bad input, re-loading, dump.

use crate::harness::{Kgfuse, root, turtle_files};
use serde_json::Value;

#[test]
fn every_fixture_loads_and_check_passes() {
    let k = Kgfuse::hash();
    let files = turtle_files();
    assert!(
        files.len() >= 5,
        "ontology and fixtures expected, found {files:?}"
    );
    let mut args = vec!["load"];
    args.extend(files.iter().map(String::as_str));
    let out = k.ok(&args);
    assert!(out.contains("inserted"), "{out}");
    k.assert_consistent();
    let stats = k.stats();
    let rows = stats["vector_rows"].as_u64().expect("rows");
    assert!(
        rows > 500,
        "fixtures carry hundreds of labelled nodes, got {rows}"
    );
    assert_eq!(k.check_json()["nodes"].as_u64(), Some(rows));
    // Every kgfuse class of the fixtures shows up in the stats.
    let classes = stats["nodes_by_class"].to_string();
    for class in ["Function", "Package", "Case", "Chunk", "Policy", "Document"] {
        assert!(
            classes.contains(&format!("ontology#{class}\"")),
            "{class} missing: {classes}"
        );
    }

    // Far below the automatic size, so no vector index until asked for one.
    assert_eq!(stats["vector_index"], Value::Null);
    let flat = |k: &Kgfuse| {
        let context = k.json(&[
            "retrieve",
            "How do I decode a signal from a CAN frame?",
            "--strategy",
            "flat",
            "--format",
            "json",
        ]);
        context["unstructured"][0]["iri"].clone()
    };
    let before = flat(&k);
    assert!(before.is_string(), "a hit without the index");
    let index = k.json(&["index", "vectors", "--json"]);
    assert_eq!(index["indexed_rows"].as_u64(), Some(rows), "{index}");
    assert_eq!(index["unindexed_rows"].as_u64(), Some(0), "{index}");
    assert_eq!(k.stats()["vector_index"], index);
    assert!(k.ok(&["stats"]).contains("vector index IVF_RQ"));
    assert_eq!(flat(&k), before, "the same best hit with the index");
    k.assert_consistent();
}

#[test]
fn malformed_turtle_is_rejected_with_its_position_and_changes_nothing() {
    let k = Kgfuse::hash();
    let ontology = root().join("ontology/kgfuse.ttl").display().to_string();
    k.ok(&["load", &ontology]);
    let before = k.stats();
    let good = k.file(
        "good.ttl",
        "<urn:x:new> <http://www.w3.org/2000/01/rdf-schema#label> \"new node\" .\n",
    );
    let bad = root()
        .join("fixtures/malformed/unterminated-literal.ttl")
        .display()
        .to_string();
    let stderr = k.fails(&["load", &good, &bad]);
    assert!(
        stderr.contains("unterminated-literal.ttl:6:"),
        "error must name file:line:column, got: {stderr}"
    );
    assert_eq!(
        k.stats(),
        before,
        "graph and vectors must be exactly as before"
    );
    k.assert_consistent();
}

#[test]
fn reloading_skips_unchanged_files_and_replaces_changed_ones() {
    let k = Kgfuse::hash();
    let path = k.file(
        "team.ttl",
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
         <urn:x:alice> rdfs:label \"Alice\" ; rdfs:comment \"Leads the data team\" .\n\
         <urn:x:bob> rdfs:label \"Bob\" .\n",
    );
    let carried = k.stats()["vector_rows"].as_u64().expect("rows");
    k.ok(&["load", &path]);
    assert_eq!(k.stats()["vector_rows"], carried + 2);
    let again = k.ok(&["load", &path]);
    assert!(again.contains("unchanged"), "{again}");

    std::fs::write(
        &path,
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
         <urn:x:alice> rdfs:label \"Alice\" ; rdfs:comment \"Leads the platform team\" .\n\
         <urn:x:carol> rdfs:label \"Carol\" .\n",
    )
    .expect("edit");
    let replaced = k.ok(&["load", &path]);
    assert!(replaced.contains("replaced"), "{replaced}");
    assert!(
        replaced.contains("vector rows: 1 added, 1 updated, 1 deleted"),
        "{replaced}"
    );
    k.assert_consistent();
    let labels = k.ok(&[
        "sparql",
        "SELECT ?l WHERE { ?s rdfs:label ?l FILTER(STRSTARTS(STR(?s), \"urn:x:\")) } ORDER BY ?l",
        "--format",
        "csv",
    ]);
    assert_eq!(labels.replace('\r', ""), "l\nAlice\nCarol\n");
}

/// `rdfs:label`.
const LABEL: &str = "<http://www.w3.org/2000/01/rdf-schema#label>";

/// The same triples as `team.ttl` below, as N-Triples: another order, other
/// blank-node labels.
const TEAM_NTRIPLES: &str = "\
_:list2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
_:skills <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> \"SPARQL\" .
<urn:x:alice> <urn:x:skills> _:skills .
_:address <urn:x:city> \"Lyon\" .
<urn:x:alice> <http://www.w3.org/2000/01/rdf-schema#label> \"Alice\" .
_:skills <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:list2 .
_:list2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> \"Rust\" .
<urn:x:alice> <urn:x:address> _:address .
_:address <urn:x:geo> _:point .
_:point <urn:x:lat> \"45.76\"^^<http://www.w3.org/2001/XMLSchema#decimal> .
";

#[test]
fn a_reserialised_file_is_unchanged_by_its_fingerprint_and_an_edit_replaces_it() {
    let k = Kgfuse::hash();
    let path = k.file(
        "team.ttl",
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
         <urn:x:alice> rdfs:label \"Alice\" ;\n\
           <urn:x:address> [ <urn:x:city> \"Lyon\" ; <urn:x:geo> [ <urn:x:lat> 45.76 ] ] ;\n\
           <urn:x:skills> ( \"SPARQL\" \"Rust\" ) .\n",
    );
    let out = k.ok(&["load", &path]);
    assert!(out.contains("inserted"), "{out}");
    let stats = k.stats();
    let triples = stats["triples"].clone();
    let graph = format!(
        "file://{}",
        std::fs::canonicalize(&path).expect("path").display()
    );
    let recorded = |stats: &Value| -> String {
        let entry = stats["fingerprints"]
            .as_array()
            .expect("fingerprints")
            .iter()
            .find(|f| f["graph"] == graph.as_str())
            .unwrap_or_else(|| panic!("{graph} has no fingerprint: {stats}"));
        assert_eq!(entry["path"], path.as_str());
        entry["fingerprint"].as_str().expect("text").to_owned()
    };
    let fingerprint = recorded(&stats);
    assert!(fingerprint.starts_with("rdfc-1.0:sha256:"), "{fingerprint}");
    assert!(
        k.ok(&["stats"])
            .contains("fingerprints 1 RDFC-1.0, 0 byte hash")
    );

    // The same path, the same triples as N-Triples: unchanged, nothing written.
    std::fs::write(&path, TEAM_NTRIPLES).expect("rewrite");
    let again = k.ok(&["load", &path, "--format", "ntriples"]);
    assert!(again.contains("unchanged"), "{again}");
    let stats = k.stats();
    assert_eq!(stats["triples"], triples, "no triple added or removed");
    assert_eq!(recorded(&stats), fingerprint);

    // `why` names the asserting graph's fingerprint.
    let why = k.json(&["why", "<urn:x:alice>", LABEL, "\"Alice\"", "--json"]);
    assert_eq!(
        why["fingerprints"][graph.as_str()],
        fingerprint.as_str(),
        "{why}"
    );
    let why = k.ok(&["why", "<urn:x:alice>", LABEL, "\"Alice\""]);
    assert!(
        why.contains(&format!("{graph} fingerprint {fingerprint}")),
        "{why}"
    );

    // One literal changed: replaced, with another fingerprint.
    std::fs::write(&path, TEAM_NTRIPLES.replace("Lyon", "Paris")).expect("edit");
    let replaced = k.ok(&["load", &path, "--format", "ntriples"]);
    assert!(replaced.contains("replaced"), "{replaced}");
    let stats = k.stats();
    assert_eq!(stats["triples"], triples);
    assert_ne!(recorded(&stats), fingerprint);
    let city = k.ok(&[
        "sparql",
        "SELECT ?c WHERE { <urn:x:alice> <urn:x:address>/<urn:x:city> ?c }",
        "--format",
        "csv",
    ]);
    assert_eq!(city.replace('\r', ""), "c\nParis\n");
    k.assert_consistent();
}

#[test]
fn explicit_graph_and_formats_and_dump_round_trip() {
    let k = Kgfuse::hash();
    let nt = k.file(
        "a.nt",
        "<urn:x:a> <http://www.w3.org/2000/01/rdf-schema#label> \"alpha\" .\n",
    );
    let trig = k.file(
        "b.trig",
        "<urn:x:g> { <urn:x:b> <http://www.w3.org/2000/01/rdf-schema#label> \"beta\" . }\n",
    );
    k.ok(&["load", &nt, &trig, "--graph", "urn:x:target"]);
    let graphs = k.ok(&[
        "sparql",
        "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g",
        "--format",
        "csv",
    ]);
    assert!(
        graphs.contains("urn:x:g,1") && graphs.contains("urn:x:target,1"),
        "{graphs}"
    );

    let dump = k.ok(&["dump"]);
    let copy = Kgfuse::hash();
    let dumped = copy.file("dump.nq", &dump);
    copy.ok(&["load", &dumped, "--graph", "urn:x:unused-default"]);
    assert_eq!(copy.stats()["triples"], k.stats()["triples"]);
    copy.assert_consistent();
}

#[test]
fn clear_errors_for_misuse() {
    let k = Kgfuse::empty();
    let stderr = k.fails(&["stats"]);
    assert!(stderr.contains("kgfuse init"), "{stderr}");
    k.ok(&["init", "--embedder", "hash"]);
    let stderr = k.fails(&["init", "--embedder", "hash"]);
    assert!(stderr.contains("already holds a kgfuse store"), "{stderr}");
    let stderr = k.fails(&["load", "README.md"]);
    assert!(stderr.contains("--format"), "{stderr}");
    let stderr = k.fails(&["load", "no/such/file.ttl"]);
    assert!(stderr.contains("no/such/file.ttl"), "{stderr}");
    let stderr = k.fails(&["index", "vectors"]);
    assert!(stderr.contains("needs at least 256"), "{stderr}");

    // A store whose recorded dimension no longer matches its table is refused.
    let config = k.data().join("kgfuse.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, text.replace("dimension = 384", "dimension = 256")).expect("edit");
    let stderr = k.fails(&["stats"]);
    assert!(stderr.contains("384") && stderr.contains("256"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn prefixes_of_a_loaded_file_work_in_the_same_process() {
    let k = Kgfuse::hash();
    let file = k.file(
        "prefixed.ttl",
        "@prefix zoo: <https://example.org/zoo#> .\nzoo:lion zoo:eats zoo:zebra .\n",
    );
    let engine = kgfuse::Engine::open(k.data()).await.expect("open");
    engine
        .load(&[file], None, &kgfuse::NoProgress)
        .await
        .expect("load");
    let outcome = engine
        .sparql("SELECT ?o WHERE { zoo:lion zoo:eats ?o }")
        .expect("zoo: is known without reopening the store");
    let kgfuse::QueryOutcome::Solutions { rows, .. } = outcome else {
        panic!("not solutions");
    };
    assert_eq!(rows.len(), 1);
}
