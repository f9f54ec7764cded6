//! SHACL validation: `kgfuse validate` reports what violates kgfuse's shapes and a
//! user's, with focus node and path; `kgfuse load --validate` refuses such a file
//! and writes nothing.

use crate::harness::Kgfuse;

const K: &str = "https://w3id.org/kgfuse/ontology#";

/// A method without a name (a function through the carried ontology's subclass
/// axiom), whose call edge points at a literal, and a policy without a date.
const BAD: &str = "@prefix k: <https://w3id.org/kgfuse/ontology#> .\n\
    @prefix ex: <http://example.org/code#> .\n\
    ex:f a k:Method ; k:calls \"g\" .\n\
    ex:pol a k:Policy ; k:authority 2 .\n";

/// (focus node, path) of each result of a JSON report.
fn focus_and_path(results: &serde_json::Value) -> Vec<(String, String)> {
    results
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["focus_node"].as_str().unwrap_or_default().to_owned(),
                r["path"].as_str().unwrap_or_default().replace(K, "k:"),
            )
        })
        .collect()
}

#[test]
fn ingested_code_conforms_and_a_bad_file_is_reported_with_focus_node_and_path() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let report = k.json(&["validate", "--format", "json"]);
    assert_eq!(report["conforms"], true, "{report:#}");

    let file = k.file("bad.ttl", BAD);
    k.ok(&["load", &file]);
    let out = k.run(&["validate", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(report["conforms"], false);
    let f = "http://example.org/code#f".to_owned();
    let pol = "http://example.org/code#pol".to_owned();
    assert_eq!(
        focus_and_path(&report["results"]),
        [
            (f.clone(), "k:calls".to_owned()),
            // kgfuse:calls is a sub-property of kgfuse:dependsOn: entailed, and checked.
            (f.clone(), "k:dependsOn".to_owned()),
            (f, "k:name".to_owned()),
            (pol.clone(), "k:authority".to_owned()),
            (pol, "k:effectiveDate".to_owned()),
        ]
    );
    let text = String::from_utf8_lossy(&k.run(&["validate"]).stdout).into_owned();
    assert!(
        // Compacted with the prefixes the loaded file declared.
        text.contains("violation ex:pol k:effectiveDate: a policy needs"),
        "{text}"
    );
    assert!(text.contains("validate FAILED: 5 violation(s)"), "{text}");
}

#[test]
fn load_validate_refuses_a_violating_file_and_writes_nothing() {
    let k = Kgfuse::hash();
    let good = k.file(
        "good.ttl",
        "@prefix k: <https://w3id.org/kgfuse/ontology#> .\n\
         @prefix ex: <http://example.org/code#> .\n\
         ex:f a k:Function ; k:name \"f\" .\n",
    );
    let bad = k.file("bad.ttl", BAD);
    let before = k.stats()["triples"].as_u64().expect("triples");
    let err = k.fails(&["load", "--validate", &good, &bad]);
    assert!(
        err.contains("bad.ttl: violation <http://example.org/code#f> kgfuse:name:"),
        "{err}"
    );
    assert!(err.contains("1 of 2 file(s) violate the shapes"), "{err}");
    assert!(err.contains("nothing was loaded"), "{err}");
    assert_eq!(k.stats()["triples"].as_u64(), Some(before));
    k.assert_consistent();

    // A file that only adds to a node the store already describes is checked
    // with what the store holds: ex:f has its name, so a comment on it passes.
    k.ok(&["load", "--validate", &good]);
    let comment = k.file(
        "comment.ttl",
        "<http://example.org/code#f> <http://www.w3.org/2000/01/rdf-schema#comment> \"adds\" .\n",
    );
    k.ok(&["load", "--validate", &comment]);

    // The user's shapes are checked too, with the core ones.
    let shapes = k.file(
        "shapes.ttl",
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n\
         @prefix ex: <http://example.org/code#> .\n\
         ex:Documented a sh:NodeShape ; sh:targetClass <https://w3id.org/kgfuse/ontology#Function> ;\n\
           sh:property [ sh:path <http://www.w3.org/2000/01/rdf-schema#comment> ; sh:minCount 1 ;\n\
             sh:message \"document every function\" ] .\n",
    );
    let undocumented = k.file(
        "g.ttl",
        "@prefix k: <https://w3id.org/kgfuse/ontology#> .\n\
         <http://example.org/code#g> a k:Function ; k:name \"g\" .\n",
    );
    let err = k.fails(&["load", "--shapes", &shapes, &undocumented]);
    assert!(err.contains("document every function"), "{err}");
    let report = k.json(&[
        "validate",
        "--shapes",
        &shapes,
        "--no-core-shapes",
        "--format",
        "json",
    ]);
    assert_eq!(
        report["conforms"], true,
        "ex:f is documented, ex:g was refused: {report:#}"
    );
    let broken = k.file(
        "broken.ttl",
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n<a> sh:minCount",
    );
    let err = k.fails(&["validate", "--shapes", &broken]);
    assert!(err.contains("broken.ttl"), "{err}");
}
