//! `kgfuse ingest code` and `kgfuse ingest docs` on real code and documents.

use crate::harness::{Kgfuse, root};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The machine's CPython standard library (`python3` ships it).
fn python_stdlib() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, os; print(os.path.dirname(os.path.dirname(json.__file__)))",
        ])
        .output()
        .expect("python3 must be installed (it ships the standard library we ingest)");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn ingest(k: &Kgfuse, args: &[&str]) -> Value {
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    all.push("--json");
    k.json(&all)
}

/// Runs an ASK query and returns its answer.
fn ask(k: &Kgfuse, query: &str) -> bool {
    k.json(&["sparql", query, "--format", "json"])["boolean"]
        .as_bool()
        .expect("boolean result")
}

/// Runs a SELECT and returns the values of one variable in order.
fn column(k: &Kgfuse, query: &str, var: &str) -> Vec<String> {
    k.json(&["sparql", query, "--format", "json"])["results"]["bindings"]
        .as_array()
        .expect("bindings")
        .iter()
        .filter_map(|b| b[var]["value"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn cpython_json_gives_the_api_hierarchy_call_graph_and_test_cases() {
    let stdlib = python_stdlib();
    let k = Kgfuse::hash();
    let json_dir = stdlib.join("json").display().to_string();
    let report = ingest(&k, &["code", &json_dir]);
    assert!(report["files"].as_u64().expect("files") >= 4, "{report}");
    assert!(report["calls"].as_u64().expect("calls") > 10, "{report}");

    // `dumps` in module `json`, parameters in order.
    let params = column(
        &k,
        "SELECT ?name WHERE { ?f kgfuse:qualifiedName \"json.dumps\" ; kgfuse:inModule ?m ; \
         kgfuse:hasParameter ?p . ?m kgfuse:qualifiedName \"json\" . \
         ?p kgfuse:name ?name ; kgfuse:position ?pos } ORDER BY ?pos",
        "name",
    );
    assert_eq!(
        params,
        [
            "obj",
            "skipkeys",
            "ensure_ascii",
            "check_circular",
            "allow_nan",
            "cls",
            "indent",
            "separators",
            "default",
            "sort_keys",
            "**kw"
        ]
    );
    // json.dumps -> JSONEncoder.encode (through the module-level `_default_encoder`).
    assert!(ask(
        &k,
        "ASK { ?f kgfuse:qualifiedName \"json.dumps\" ; kgfuse:calls ?g . \
         ?g kgfuse:qualifiedName \"json.encoder.JSONEncoder.encode\" }"
    ));
    k.assert_consistent();

    // The test suite, ingested afterwards, links its cases to the library.
    let tests_dir = stdlib.join("test/test_json").display().to_string();
    let report = ingest(&k, &["code", &tests_dir]);
    assert!(
        report["code"]["cases"].as_u64().expect("cases") > 50,
        "{report}"
    );
    for function in ["json.loads", "json.dumps"] {
        assert!(
            ask(
                &k,
                &format!(
                    "ASK {{ ?case a kgfuse:Case ; kgfuse:exercises|kgfuse:exercisesByName ?f . \
                     ?f kgfuse:qualifiedName \"{function}\" }}"
                )
            ),
            "no case exercises {function}"
        );
    }
    k.assert_consistent();
}

fn write(dir: &Path, name: &str, text: &[u8]) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn count(k: &Kgfuse, query: &str) -> usize {
    column(k, query, "n")
        .first()
        .and_then(|n| n.parse().ok())
        .expect("count")
}

#[test]
fn reingest_rewrites_only_what_changed_and_removes_deleted_files() {
    let k = Kgfuse::hash();
    let tree = k.tmp.path().join("tree/shop");
    write(&tree, "__init__.py", b"");
    write(
        &tree,
        "orders.py",
        b"from .prices import price_of\n\ndef total(items):\n    \"\"\"Sum of prices.\"\"\"\n    return sum(price_of(i) for i in items)\n",
    );
    write(
        &tree,
        "prices.py",
        b"def price_of(item):\n    \"\"\"Price of one item.\"\"\"\n    return 1\n",
    );
    let path = tree.display().to_string();
    let first = ingest(&k, &["code", &path]);
    assert_eq!(first["written"], 3, "{first}");
    assert_eq!(first["calls"], 1, "{first}");
    k.assert_consistent();
    let rows = k.stats()["vector_rows"].as_u64().expect("rows");

    let again = ingest(&k, &["code", &path]);
    assert_eq!(
        (again["written"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(3)),
        "{again}"
    );
    assert_eq!(again["vectors"]["added"], 0);
    assert_eq!(k.stats()["vector_rows"].as_u64(), Some(rows));

    // Renaming the callee changes prices.py and, through the call edge, orders.py.
    write(
        &tree,
        "prices.py",
        b"def unit_price(item):\n    \"\"\"Price of one item.\"\"\"\n    return 1\n",
    );
    let changed = ingest(&k, &["code", &path]);
    assert_eq!(changed["written"], 2, "{changed}");
    assert_eq!(changed["unchanged"], 1, "{changed}");
    assert_eq!(
        count(
            &k,
            "SELECT (COUNT(*) AS ?n) WHERE { ?f kgfuse:qualifiedName \"shop.prices.price_of\" }"
        ),
        0
    );
    k.assert_consistent();

    // Deleting a file drops its graph and its vector rows.
    std::fs::remove_file(tree.join("prices.py")).expect("remove");
    let deleted = ingest(&k, &["code", &path]);
    assert_eq!(deleted["removed"], 1, "{deleted}");
    assert_eq!(
        count(
            &k,
            "SELECT (COUNT(*) AS ?n) WHERE { ?f kgfuse:qualifiedName \"shop.prices.unit_price\" }"
        ),
        0
    );
    assert!(k.stats()["vector_rows"].as_u64().expect("rows") < rows);
    k.assert_consistent();
}

#[test]
fn bad_files_are_reported_with_a_reason_and_skipped() {
    let k = Kgfuse::hash();
    let tree = k.tmp.path().join("bad");
    write(&tree, "good.py", b"def fine():\n    return 1\n");
    write(&tree, "binary.py", b"\x7fELF\x00\x00\x01");
    write(&tree, "latin1.py", b"# caf\xe9\ndef f():\n    pass\n");
    write(
        &tree,
        "broken.py",
        b"def ok():\n    pass\n\ndef broken(:\n    pass\n",
    );
    write(
        &tree,
        "huge.py",
        format!("X = '{}'\n", "a".repeat(200_000)).as_bytes(),
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(&tree, tree.join("loop")).expect("symlink");
    let out = k.run(&[
        "ingest",
        "code",
        &tree.display().to_string(),
        "--max-file-size",
        "0.1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for expected in [
        "binary.py: skipped: binary file",
        "latin1.py: skipped: not UTF-8 text (invalid byte at offset 5)",
        "broken.py:4: syntax error",
        "huge.py: skipped: 0.2 MiB is above the 0.1 MiB file-size limit",
    ] {
        assert!(
            stderr.contains(expected),
            "missing `{expected}` in:\n{stderr}"
        );
    }
    #[cfg(unix)]
    assert!(stderr.contains("symbolic link loop"), "{stderr}");
    // The good file and the good part of the broken one are in.
    assert!(ask(&k, "ASK { ?f kgfuse:qualifiedName \"good.fine\" }"));
    assert!(ask(&k, "ASK { ?f kgfuse:qualifiedName \"broken.ok\" }"));
    k.assert_consistent();

    // An empty directory is an error that says so.
    let empty = k.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let stderr = k.fails(&["ingest", "code", &empty.display().to_string()]);
    assert!(
        stderr.contains("no python or rust source files"),
        "{stderr}"
    );
}

/// The first version of a crate in the local cargo registry.
fn registry_crate(prefix: &str) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .filter_map(|e| e.ok())
        .flat_map(|index| std::fs::read_dir(index.path()).into_iter().flatten())
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    found.sort();
    found.pop()
}

#[test]
fn a_real_rust_crate_yields_public_functions_methods_and_calls() {
    // walkdir is a dependency of kgfuse, so it is in the registry wherever this builds.
    let walkdir = registry_crate("walkdir-2.").expect("walkdir sources in ~/.cargo/registry/src");
    let k = Kgfuse::hash();
    let report = ingest(
        &k,
        &["code", &walkdir.display().to_string(), "--lang", "rust"],
    );
    assert!(
        report["code"]["functions"].as_u64().expect("functions") > 50,
        "{report}"
    );
    assert!(ask(
        &k,
        "ASK { ?f a kgfuse:Method ; kgfuse:qualifiedName \"walkdir::WalkDir::new\" }"
    ));
    assert!(ask(
        &k,
        "ASK { ?f a kgfuse:Method ; kgfuse:qualifiedName \"walkdir::WalkDir::max_depth\" ; kgfuse:signature ?s }"
    ));
    let methods_with_calls = count(
        &k,
        "SELECT (COUNT(DISTINCT ?f) AS ?n) WHERE { ?f a kgfuse:Method ; kgfuse:calls ?g . ?g a kgfuse:Method }",
    );
    assert!(
        methods_with_calls > 10,
        "only {methods_with_calls} methods call methods"
    );
    k.assert_consistent();
}

#[test]
fn the_sgkr_payment_fees_fixture_computes_and_links_its_examples() {
    let fixture = root().join("fixtures/payment-fees");
    // The fee functions compute the DABstep answers (stdlib-only Python).
    let status = std::process::Command::new("python3")
        .args(["-m", "unittest", "discover", "-s"])
        .arg(fixture.join("tests"))
        .output()
        .expect("python3");
    assert!(
        status.status.success(),
        "fixture tests failed:\n{}",
        String::from_utf8_lossy(&status.stderr)
    );

    let k = Kgfuse::hash();
    let report = ingest(
        &k,
        &[
            "code",
            &fixture.display().to_string(),
            "--knowledge",
            &fixture.join("knowledge.toml").display().to_string(),
        ],
    );
    assert!(
        report["problems"].as_array().expect("problems").is_empty(),
        "{report}"
    );
    // Example questions are cases exercising the functions their solutions call.
    for (case, function) in [
        (
            "examples.q_dev1273_avg_fee_credit_globalcard",
            "payment_fees.fees.average_fee",
        ),
        (
            "examples.q_dev1305_avg_fee_account_h_restaurants_globalcard",
            "payment_fees.table.FeeTable.average_fee",
        ),
        (
            "examples.q_dev1305_avg_fee_account_h_restaurants_globalcard",
            "payment_fees.merchants.mcc_for_description",
        ),
        (
            "examples.q_mcc_eating_places",
            "payment_fees.merchants.mcc_for_description",
        ),
        (
            "examples.q_most_expensive_card_scheme_100eur",
            "payment_fees.fees.most_expensive_card_scheme",
        ),
    ] {
        assert!(
            ask(
                &k,
                &format!(
                    "ASK {{ ?c a kgfuse:Case ; kgfuse:qualifiedName \"{case}\" ; kgfuse:exercises ?f . \
                     ?f kgfuse:qualifiedName \"{function}\" }}"
                )
            ),
            "{case} should exercise {function}"
        );
    }
    // Domain knowledge is attached to the function and its I/O tags exist.
    assert!(ask(
        &k,
        "ASK { ?f kgfuse:qualifiedName \"payment_fees.fees.compute_fee\" ; kgfuse:hasKnowledge ?ku ; \
         kgfuse:produces ?out . ?ku kgfuse:knowledge ?text . ?out rdfs:label \"fee\" }"
    ));
    // The fee computation depends on rule matching through the call graph.
    assert!(ask(
        &k,
        "ASK { ?f kgfuse:qualifiedName \"payment_fees.fees.average_fee\" ; kgfuse:calls+ ?g . \
         ?g kgfuse:qualifiedName \"payment_fees.fees.compute_fee\" }"
    ));
    k.assert_consistent();
}

#[test]
fn documents_become_chunks_that_mention_known_entities_and_reingest_incrementally() {
    let k = Kgfuse::hash();
    k.load(&["fixtures/policy/policy.ttl"]);
    let docs = k.tmp.path().join("docs");
    write(
        &docs,
        "handbook.md",
        b"---\ntitle: Staff handbook 2026\nauthority: 0.9\neffective_date: 2026-01-01\n---\n\
# Staff handbook 2026\n\n## Remote work\n\nThe WFH policy allows two days a week with manager approval.\n\n\
## Hours\n\nCore hours are 10:00-15:00. Contractors follow their contract.\n",
    );
    write(
        &docs,
        "notes.txt",
        b"Plain notes about the VPN usage rules.\n\nA second paragraph.\n",
    );
    let path = docs.display().to_string();
    let first = ingest(&k, &["docs", &path]);
    assert_eq!(first["written"], 2, "{first}");
    assert_eq!(first["chunks"], 3, "{first}"); // two sections + one packed text chunk
    // Chunk ids are stable `source::section::n`; the chunk mentions the policy by alias.
    let ids = column(
        &k,
        "SELECT ?id WHERE { ?c a kgfuse:Chunk ; kgfuse:chunkId ?id ; kgfuse:mentions ?e . \
         ?e rdfs:label \"Remote Work Policy 2025\"@en \
         FILTER(STRSTARTS(?id, \"handbook::\")) }",
        "id",
    );
    assert_eq!(ids, ["handbook::remote-work::1"]);
    assert!(ask(
        &k,
        "ASK { ?d a kgfuse:Document ; dcterms:title \"Staff handbook 2026\" ; kgfuse:authority ?a ; \
         kgfuse:effectiveDate ?date ; kgfuse:hasChunk ?c . ?c kgfuse:mentions ?e . ?e rdfs:label \"Contractors\"@en }"
    ));
    k.assert_consistent();

    let again = ingest(&k, &["docs", &path]);
    assert_eq!(
        (again["written"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(2))
    );
    std::fs::remove_file(docs.join("notes.txt")).expect("remove");
    let removed = ingest(&k, &["docs", &path]);
    assert_eq!(removed["removed"], 1, "{removed}");
    assert!(!ask(
        &k,
        "ASK { ?c kgfuse:text ?t FILTER(CONTAINS(?t, \"Plain notes\")) }"
    ));
    k.assert_consistent();
}
