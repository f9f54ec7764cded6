//! The real all-MiniLM-L6-v2 model, end to end (provisioned by `make models`).

use crate::harness::{Kgfuse, minilm_dir as model_dir, root};

#[test]
fn minilm_store_loads_checks_and_reports_its_embedder() {
    let dir = model_dir();
    assert!(
        dir.join("model.safetensors").is_file(),
        "MiniLM is not provisioned in {}: run `make models` (make test does)",
        dir.display()
    );
    let k = Kgfuse::empty();
    let dir = dir.display().to_string();
    k.ok(&["init", "--embedder", "minilm", "--model-dir", &dir]);
    let fixture = root().join("fixtures/policy").display().to_string();
    let files: Vec<String> = std::fs::read_dir(&fixture)
        .expect("policy fixture")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ttl"))
        .map(|p| p.display().to_string())
        .collect();
    let mut args = vec!["load"];
    args.extend(files.iter().map(String::as_str));
    k.ok(&args);
    let stats = k.stats();
    assert_eq!(stats["embedder"], "minilm");
    assert_eq!(stats["dimension"], 384);
    assert!(stats["vector_rows"].as_u64().unwrap_or(0) > 10, "{stats}");
    k.assert_consistent();
}

#[test]
fn init_without_a_model_names_the_fix_and_writes_nothing() {
    let k = Kgfuse::empty();
    let out = k
        .cmd()
        .env("KGFUSE_MINILM_DIR", k.tmp.path().join("no-model"))
        .arg("init")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("make models") && stderr.contains("--embedder hash"),
        "{stderr}"
    );
    assert!(!k.data().join("kgfuse.toml").exists());
}

/// Debian 12's OpenBLAS does not know every CPU it runs on and then falls back
/// to its SSE3 kernels; `kgfuse` starts itself again asking for the ones the CPU
/// runs. OpenBLAS names the kernels it picks each time it loads
/// (`OPENBLAS_VERBOSE=2`): the last pick must be what this CPU runs.
#[test]
fn kgfuse_runs_on_the_blas_kernels_this_cpu_runs() {
    let Some(here) = kgfuse::blas::kernels() else {
        return; // built without OpenBLAS: gemm's kernels, nothing to pick
    };
    // What this test process would have asked for is what `kgfuse` must end on.
    let want = kgfuse::blas::kernels_to_request().map_or(here, str::to_owned);
    let out = Kgfuse::empty()
        .std_cmd()
        .env("OPENBLAS_VERBOSE", "2")
        .arg("--version")
        .output()
        .expect("run kgfuse");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let picks: Vec<&str> = stderr
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Core: "))
        .collect();
    match picks.last() {
        Some(last) => assert_eq!(*last, want, "{stderr}"),
        // An OpenBLAS built for one CPU names none, and has nothing to pick.
        None => assert_eq!(kgfuse::blas::kernels_to_request(), None, "{stderr}"),
    }
}

/// A clinic's staff, with classes named otherwise than the question says them.
const CLINIC: &str = "@prefix ex: <http://example.org/> .\n\
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
    ex:Doctor rdfs:label \"doctor\" .\n\
    ex:Clinic rdfs:label \"clinic\" .\n\
    ex:worksAt rdfs:label \"works at\" ; rdfs:domain ex:Doctor ; rdfs:range ex:Clinic .\n\
    ex:riverside a ex:Clinic ; rdfs:label \"Riverside\" .\n\
    ex:hill a ex:Clinic ; rdfs:label \"Hill Street\" .\n\
    ex:okafor a ex:Doctor ; rdfs:label \"Ada Okafor\" ; ex:worksAt ex:riverside .\n\
    ex:lund a ex:Doctor ; rdfs:label \"Per Lund\" ; ex:worksAt ex:hill .\n";

/// The classes the `linking` stage of a unified context kept.
fn linked_classes(context: &serde_json::Value) -> Vec<String> {
    crate::harness::stage(context, "linking")["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .filter_map(|line| line.as_str()?.strip_prefix("class ").map(str::to_owned))
        .collect()
}

#[test]
fn a_class_word_links_by_meaning_with_a_semantic_embedder_only() {
    let k = Kgfuse::minilm();
    k.load(&[&k.file("clinic.ttl", CLINIC)]);
    let context = k.retrieve("Which physicians work at Riverside?", "unified");
    let classes = linked_classes(&context);
    assert!(
        classes
            .iter()
            .any(|c| c.starts_with("http://example.org/Doctor ")),
        "{classes:?}"
    );
    let answers = context["answers"].to_string();
    assert!(
        answers.contains("okafor") && !answers.contains("lund"),
        "{answers}"
    );
    // A word unlike every class links to none.
    let context = k.retrieve("Which physicians work on Sunday?", "unified");
    let classes = linked_classes(&context);
    assert!(
        classes
            .iter()
            .all(|c| c.starts_with("http://example.org/Doctor ")),
        "{classes:?}"
    );

    // The hash embedder knows words, not meanings.
    let hash = Kgfuse::hash();
    hash.load(&[&hash.file("clinic.ttl", CLINIC)]);
    let context = hash.retrieve("Which physicians work at Riverside?", "unified");
    assert!(
        linked_classes(&context).is_empty(),
        "{:?}",
        linked_classes(&context)
    );
}
