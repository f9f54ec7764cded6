//! ARCHITECTURE.md's map of the crates matches the Cargo.toml files: every crate
//! has a section, and its "May use" line names exactly the kgfuse crates under the
//! crate's `[dependencies]`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// kgfuse crate names in a piece of text (`kgfuse`, `kgfuse-core`, ...).
fn crate_names(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| *word == "kgfuse" || word.starts_with("kgfuse-"))
        .map(|word| word.trim_end_matches('-').to_owned())
        .collect()
}

/// The kgfuse crates under `[dependencies]` (and its target-specific forms).
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).expect("manifest reads");
    let mut in_dependencies = false;
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line.ends_with("dependencies]") && !line.contains("dev-dependencies");
        } else if in_dependencies && !line.starts_with('#') {
            let key = line.split(['=', '.', ' ']).next().unwrap_or_default();
            names.extend(crate_names(key));
        }
    }
    names
}

#[test]
fn the_architecture_map_matches_every_cargo_toml() {
    let root = workspace();
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md reads");
    let mut sections = BTreeSet::new();
    for section in map.split("\n### ").skip(1) {
        let heading = section.lines().next().unwrap_or_default();
        let name = heading
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let Some(may_use) = section.split("**May use:**").nth(1) else {
            continue;
        };
        let paragraph = may_use.split("\n\n").next().unwrap_or_default();
        let paragraph = paragraph.replace("no kgfuse crate", "");
        let dir = if name == "kgfuse-w3c" {
            root.join("tests/w3c")
        } else {
            root.join("crates").join(&name)
        };
        let declared = dependencies(&dir.join("Cargo.toml"));
        assert_eq!(
            crate_names(&paragraph),
            declared,
            "ARCHITECTURE.md's \"May use\" for {name} differs from {}",
            dir.join("Cargo.toml").display()
        );
        sections.insert(name);
    }
    for entry in std::fs::read_dir(root.join("crates")).expect("crates/ lists") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            sections.contains(&name),
            "ARCHITECTURE.md has no section for {name}"
        );
    }
}
