//! RDFS entailment: the derived graph answers class and property questions the
//! asserted triples alone do not, stays in step with reloads, and survives a crash.

use crate::harness::Kgfuse;

const INFERRED: &str = "https://w3id.org/kgfuse/graph/inferred";

const HR: &str = "@prefix ex: <http://example.org/hr#> .\n\
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
    ex:Manager rdfs:subClassOf ex:Employee .\n\
    ex:manages rdfs:domain ex:Manager ; rdfs:range ex:Team .\n\
    ex:ann a ex:Manager ; rdfs:label \"Ann\" .\n\
    ex:bob a ex:Employee ; rdfs:label \"Bob\" .\n\
    ex:cid ex:manages ex:payments ; rdfs:label \"Cid\" .\n";

/// One CSV column of a query's rows, without the header.
fn column(k: &Kgfuse, query: &str) -> Vec<String> {
    k.ok(&["sparql", query, "--format", "csv"])
        .replace('\r', "")
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

const EMPLOYEES: &str = "SELECT ?e WHERE { ?e a <http://example.org/hr#Employee> } ORDER BY ?e";

fn employees(k: &Kgfuse) -> Vec<String> {
    column(k, EMPLOYEES)
        .into_iter()
        .map(|e| e.trim_start_matches("http://example.org/hr#").to_owned())
        .collect()
}

#[test]
fn all_employees_include_managers_and_asserted_only_is_one_filter_away() {
    let k = Kgfuse::hash();
    let file = k.file("hr.ttl", HR);
    k.ok(&["load", &file]);
    // Ann through the subclass, Cid through the domain of ex:manages.
    assert_eq!(employees(&k), ["ann", "bob", "cid"]);
    assert_eq!(
        column(&k, "SELECT ?t WHERE { ?t a <http://example.org/hr#Team> }"),
        ["http://example.org/hr#payments"]
    );
    // Leaving the derived graph out gives the asserted triples only.
    let asserted = format!(
        "SELECT ?e WHERE {{ GRAPH ?g {{ ?e a <http://example.org/hr#Employee> }} \
         FILTER(?g != <{INFERRED}>) }}"
    );
    assert_eq!(column(&k, &asserted), ["http://example.org/hr#bob"]);
    // Only asserted text is embedded: the derived graph adds no vector row.
    k.assert_consistent();
    assert!(
        k.stats()["inferred_triples"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );

    // A changed file without the subclass axiom: Ann is no longer an employee.
    std::fs::write(
        &file,
        HR.replace("ex:Manager rdfs:subClassOf ex:Employee .\n", ""),
    )
    .expect("edit");
    k.ok(&["load", &file]);
    assert_eq!(employees(&k), ["bob"]);
    // An update that asserts it again brings Ann back, and Cid (a manager through
    // the domain of ex:manages).
    k.ok(&[
        "sparql",
        "--update",
        "INSERT DATA { GRAPH <urn:schema> { <http://example.org/hr#Manager> \
         rdfs:subClassOf <http://example.org/hr#Employee> } }",
    ]);
    assert_eq!(employees(&k), ["ann", "bob", "cid"]);
}

#[test]
fn why_names_the_rule_and_the_asserted_premise() {
    let k = Kgfuse::hash();
    let file = k.file("hr.ttl", HR);
    k.ok(&["load", &file]);
    let why = |who: &str| k.json(&["why", &format!("ex:{who}"), "a", "ex:Employee", "--json"]);

    // Bob is asserted an employee, in the file's graph, and nothing derives it.
    let bob = why("bob");
    assert_eq!(bob["inferred"], false);
    assert!(
        bob["asserted_in"][0]
            .as_str()
            .is_some_and(|g| g.ends_with("hr.ttl"))
    );
    assert_eq!(bob["derivations"], serde_json::json!([]));

    // Ann through the subclass; Cid through the domain of ex:manages, lifted by
    // the subclass (the last step's rule is named).
    let ann = why("ann");
    assert_eq!(ann["inferred"], true);
    assert_eq!(ann["asserted_in"], serde_json::json!([]));
    assert_eq!(ann["derivations"][0]["rule"], "rdfs9");
    assert_eq!(
        ann["derivations"][0]["premise"],
        "<http://example.org/hr#ann> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/hr#Manager>"
    );
    let cid = why("cid");
    let premises: Vec<&str> = cid["derivations"]
        .as_array()
        .expect("derivations")
        .iter()
        .filter_map(|d| d["premise"].as_str())
        .collect();
    assert_eq!(
        premises,
        [
            "<http://example.org/hr#cid> <http://example.org/hr#manages> <http://example.org/hr#payments>"
        ]
    );

    // A triple the store does not hold is an error naming it.
    let err = k.fails(&["why", "ex:bob", "a", "ex:Manager"]);
    assert!(err.contains("does not hold"), "{err}");
}

#[test]
fn ingested_methods_are_functions() {
    let k = Kgfuse::hash();
    k.ingest_payment_fees();
    let count = |query: &str| -> u64 { column(&k, query)[0].parse().expect("a count") };
    let methods = count("SELECT (COUNT(DISTINCT ?m) AS ?n) WHERE { ?m a kgfuse:Method }");
    assert!(methods > 0);
    let asserted = count(&format!(
        "SELECT (COUNT(DISTINCT ?f) AS ?n) WHERE {{ GRAPH ?g {{ ?f a kgfuse:Function }} \
         FILTER(?g != <{INFERRED}>) }}"
    ));
    let all = count("SELECT (COUNT(DISTINCT ?f) AS ?n) WHERE { ?f a kgfuse:Function }");
    assert!(
        all >= asserted + methods,
        "{all} functions, {asserted} asserted, {methods} methods"
    );
    // The derived graph never repeats an asserted triple: no duplicate rows.
    let rows = count("SELECT (COUNT(?f) AS ?n) WHERE { ?f a kgfuse:Function }");
    assert_eq!(rows, all);
    assert_eq!(
        k.ok(&[
            "sparql",
            "ASK { ?m a kgfuse:Method FILTER NOT EXISTS { ?m a kgfuse:Function } }"
        ])
        .trim(),
        "false"
    );
}

#[test]
fn a_store_made_without_entailment_infers_nothing() {
    let k = Kgfuse::empty();
    k.ok(&["init", "--embedder", "hash", "--entailment", "none"]);
    let file = k.file("hr.ttl", HR);
    k.ok(&["load", &file]);
    assert_eq!(employees(&k), ["bob"]);
    assert_eq!(k.stats()["inferred_triples"], 0);
}

#[test]
fn a_crash_between_the_asserted_and_the_inferred_write_is_repaired_on_open() {
    let k = Kgfuse::hash();
    let file = k.file("hr.ttl", HR);
    k.load_crashing_after_graph_commit(&file);
    // The next open rebuilds the derived graph before answering.
    k.assert_consistent();
    assert_eq!(employees(&k), ["ann", "bob", "cid"]);
}

#[test]
fn cyclic_self_referencing_and_blank_node_heavy_ontologies_terminate_consistently() {
    let k = Kgfuse::hash();
    // A subclass cycle, a class declared its own subclass, OWL restrictions and
    // an intersection (blank-node classes), a property that is its own
    // sub-property, and a list-valued domain (a blank node).
    let owl = k.file(
        "strange.ttl",
        "@prefix ex: <http://example.org/s#> .\n\
         @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
         @prefix owl: <http://www.w3.org/2002/07/owl#> .\n\
         ex:A rdfs:subClassOf ex:B . ex:B rdfs:subClassOf ex:C . ex:C rdfs:subClassOf ex:A .\n\
         ex:D rdfs:subClassOf ex:D .\n\
         ex:A rdfs:subClassOf [ a owl:Restriction ; owl:onProperty ex:p ; owl:someValuesFrom ex:D ] .\n\
         ex:E owl:equivalentClass [ owl:intersectionOf ( ex:A ex:D ) ] .\n\
         ex:p rdfs:subPropertyOf ex:p ; rdfs:domain [ owl:unionOf ( ex:A ex:D ) ] ; rdfs:range ex:D .\n\
         ex:x a ex:A ; ex:p ex:y .\n",
    );
    k.ok(&["load", &owl]);
    let types = |node: &str| {
        column(
            &k,
            &format!("SELECT ?t WHERE {{ <http://example.org/s#{node}> a ?t }} ORDER BY ?t"),
        )
    };
    let s = |local: &str| format!("http://example.org/s#{local}");
    // Every class of the cycle, once each; the range's type; no blank-node class.
    assert_eq!(types("x"), [s("A"), s("B"), s("C")]);
    assert_eq!(types("y"), [s("D")]);
    // No class becomes its own strict superclass through the cycle.
    assert_eq!(
        column(
            &k,
            "SELECT ?c WHERE { GRAPH <https://w3id.org/kgfuse/graph/inferred> { ?c rdfs:subClassOf ?c } }"
        ),
        Vec::<String>::new()
    );
    k.assert_consistent();
    assert!(k.ok(&["validate"]).contains("validate ok"));
}
