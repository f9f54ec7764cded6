//! `kgfuse console` driven through stdin, line by line.

use crate::harness::{Kgfuse, root};

#[test]
fn console_answers_queries_typed_line_by_line_and_survives_errors() {
    let k = Kgfuse::hash();
    let ontology = root().join("ontology/kgfuse.ttl").display().to_string();
    let script = format!(
        ".load {ontology}
.help
SELECT ?label
WHERE {{ kgfuse:Case rdfs:label ?label }}

SELECT ?oops WHERE {{ ?s ?p }};
PREFIX ex: <urn:example:>
INSERT DATA {{ GRAPH <urn:g> {{ ex:w rdfs:label \"widget\" }} }};
SELECT ?l WHERE {{ ex:w rdfs:label ?l }};
.format json
ASK {{ ex:w ?p ?o }};
.format nonsense
.timeout 5
.run queries/siblings.rq function=kgfuse:calls
.stats
.quit
SELECT ?never WHERE {{ ?s ?p ?o }};
"
    );
    let out = k
        .cmd()
        .arg("console")
        .write_stdin(script)
        .output()
        .expect("console");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("quads written"), "{stdout}");
    assert!(stdout.contains(".format [table"), "help shown: {stdout}");
    assert!(
        stdout.lines().any(|l| l.trim() == "case"),
        "multi-line query ran: {stdout}"
    );
    assert!(stderr.contains("error: SPARQL syntax error"), "{stderr}");
    assert!(stdout.contains("update done"), "{stdout}");
    assert!(
        stdout.contains("widget"),
        "prefix ex: remembered from the update: {stdout}"
    );
    assert!(stdout.contains("\"boolean\":true"), "json format: {stdout}");
    assert!(stderr.contains("unknown format 'nonsense'"), "{stderr}");
    assert!(stdout.contains("vector rows"), ".stats: {stdout}");
    assert!(
        !stdout.contains("never"),
        "nothing runs after .quit: {stdout}"
    );
    k.assert_consistent();
}
