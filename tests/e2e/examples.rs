//! The narrated programs in `examples/` really run: each is executed from the
//! workspace root, must succeed, and must print what its narration promises.
//!
//! `cargo test --workspace` builds the examples (into `<target>/debug/examples/`)
//! before running tests; a narrower run (`--test e2e`) does not, so build them
//! first with `cargo build --workspace --examples`.

use crate::harness::root;
use std::path::PathBuf;
use std::process::Command;

/// The built example `name`: `<target>/<profile>/examples/<name>`, found from this
/// test binary's own path (`<target>/<profile>/deps/e2e-<hash>`). Fails, never skips,
/// when it is missing or older than its source.
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .filter(|deps| deps.ends_with("deps"))
        .and_then(|deps| deps.parent())
        .unwrap_or_else(|| panic!("{} is not in a cargo deps directory", exe.display()));
    let binary = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let hint = "`cargo test --workspace` builds the examples; \
                after a narrower build run `cargo build --workspace --examples`";
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| {
            panic!(
                "example {name} is not built ({}: {e}): {hint}",
                binary.display()
            )
        });
    let source = root().join("examples").join(format!("{name}.rs"));
    let edited = std::fs::metadata(&source)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    assert!(
        edited <= built,
        "{} is older than {}: {hint}",
        binary.display(),
        source.display()
    );
    binary
}

/// Runs an example from the workspace root, offline; asserts success, returns stdout.
fn run_example(name: &str) -> String {
    let binary = example_binary(name);
    let out = Command::new(&binary)
        .current_dir(root())
        .env_remove("KGFUSE_LLM_BASE_URL")
        .env_remove("KGFUSE_LLM_MODEL")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "example {name} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn agent_loop_builds_a_prompt_from_real_functions_and_cases() {
    let out = run_example("agent_loop");
    for step in [
        "== 1. Memory",
        "== 2. Agent -> search_domain_kg",
        "== 3. Agent -> search_case_base",
        "== 4. Prompt",
        "== 5. Model",
    ] {
        assert!(out.contains(step), "no {step:?} in:\n{out}");
    }
    assert!(out.contains("language model: rule-based"), "{out}");
    assert!(out.contains("offline: set KGFUSE_LLM_BASE_URL"), "{out}");

    let prompt =
        &out[out.find("== 4. Prompt").expect("prompt")..out.find("== 5. Model").expect("model")];
    assert!(
        prompt.contains("# Task\n\nWrite a function that finds the cheapest card scheme"),
        "{prompt}"
    );
    // The task's own function, with its real signature.
    assert!(
        prompt.contains(
            "## payment_fees.fees.cheapest_card_scheme\n\n```python\ndef cheapest_card_scheme("
        ),
        "{prompt}"
    );
    // Every API function in the prompt exists in the fixture's source, with the
    // signature the prompt shows.
    let api = &prompt[..prompt.find("# Worked examples").unwrap_or(prompt.len())];
    let mut functions = 0;
    for heading in api.lines().filter_map(|l| l.strip_prefix("## ")) {
        let (module, name) = heading.rsplit_once('.').expect("module.function");
        let path = root()
            .join("fixtures/payment-fees")
            .join(format!("{}.py", module.replace('.', "/")));
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{heading}: {}: {e}", path.display()));
        assert!(
            source.contains(&format!("def {name}(")),
            "{heading} is not defined in {}",
            path.display()
        );
        functions += 1;
    }
    assert!(
        (1..=5).contains(&functions),
        "{functions} functions:\n{prompt}"
    );
    // One or two worked examples with their code.
    let examples = prompt
        .split("# Worked examples")
        .nth(1)
        .unwrap_or_else(|| panic!("no worked examples:\n{prompt}"));
    let cases = examples.matches("\n## ").count();
    assert!((1..=2).contains(&cases), "{cases} cases:\n{examples}");
    assert!(examples.contains("```python\n"), "{examples}");
}

#[test]
fn ontology_query_walks_typed_results_templates_vectors_and_entities() {
    let out = run_example("ontology_query");
    // The two example ontologies loaded, each into its own graph (the core
    // vocabulary is already carried).
    assert_eq!(out.matches("inserted").count(), 2, "{out}");
    assert!(!out.contains("ontology/kgfuse.ttl"), "{out}");
    assert!(out.contains("ontology/examples/support.ttl"), "{out}");
    // SELECT rows read as terms: compact IRIs, language-tagged labels, OPTIONAL cells.
    let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        out.lines().any(|l| words(l)
            == "sup:PerformanceGap \"performance gap\"@en subclass of sup:LearningNeed"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| words(l).ends_with("subclass of (no parent)")),
        "{out}"
    );
    // ASK and CONSTRUCT.
    assert!(out.contains("-> true"), "{out}");
    assert!(
        out.contains("sup:Interaction --sup:handledBy--> sup:Agent"),
        "{out}"
    );
    // The neighbours template, bound to sup:PerformanceGap: both directions.
    assert!(
        out.lines()
            .any(|l| l.starts_with("  in ") && l.ends_with(" sup:hasGap")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("  out ") && l.ends_with(" sup:LearningNeed")),
        "{out}"
    );
    // describe_entity by label and by prefixed name.
    assert!(
        out.contains("sup:PerformanceGap (matched by Label)"),
        "{out}"
    );
    assert!(
        out.contains("kgfuse:Case (matched by PrefixedName)"),
        "{out}"
    );
    assert!(out.contains("vector rows: in step"), "{out}");
}
