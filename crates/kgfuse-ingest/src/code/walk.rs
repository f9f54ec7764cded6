//! Finding source files and placing them in their package and module.

use super::model::{FileContext, FileRole, Language};
use crate::{IngestError, Problem};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Directories never worth descending into.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "node_modules",
    "target",
    ".tox",
    ".venv",
    "venv",
    ".mypy_cache",
    ".pytest_cache",
    ".eggs",
];

/// The files of a walk and what went wrong on the way.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Files to parse, sorted by path.
    pub files: Vec<FileContext>,
    /// Unreadable entries and symlink loops.
    pub problems: Vec<Problem>,
}

/// Collects the source files under `root` (or `root` itself).
pub(crate) fn walk(
    root: &Path,
    languages: &[Language],
    package_override: Option<&str>,
) -> Result<Walk, IngestError> {
    let root = std::fs::canonicalize(root).map_err(|source| IngestError::Io {
        path: root.display().to_string(),
        source,
    })?;
    let mut out = Walk::default();
    let paths = source_paths(&root, languages, &mut out.problems);
    if root.is_file() && paths.is_empty() {
        return Err(IngestError::Invalid(format!(
            "{}: not a {} source file",
            root.display(),
            languages
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(" or ")
        )));
    }
    let crates = CrateRoots::find(&root, &paths, package_override);
    let base = if root.is_file() {
        root.parent()
            .map_or_else(|| root.clone(), Path::to_path_buf)
    } else {
        root.clone()
    };
    for (path, language) in paths {
        let context = match language {
            Language::Python => python_context(&base, &path, package_override),
            Language::Rust => crates.context(&path),
        };
        if let Some(context) = context {
            out.files.push(context);
        }
    }
    Ok(out)
}

/// The files of `languages` under `root` (or `root` itself), sorted by path,
/// skipping [`SKIPPED_DIRS`]; unreadable entries and symlink loops go to `problems`.
fn source_paths(
    root: &Path,
    languages: &[Language],
    problems: &mut Vec<Problem>,
) -> Vec<(PathBuf, Language)> {
    let mut paths = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !(e.file_type().is_dir()
                    && e.file_name()
                        .to_str()
                        .is_some_and(|n| SKIPPED_DIRS.contains(&n)))
        });
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                problems.push(Problem::from_walk(root, &error));
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let language = match entry.path().extension().and_then(|e| e.to_str()) {
            Some("py") => Language::Python,
            Some("rs") => Language::Rust,
            _ => continue,
        };
        if languages.contains(&language) {
            paths.push((entry.path().to_path_buf(), language));
        }
    }
    paths
}

/// Turns a directory or file name into a module segment.
fn segment(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn role_of(module: &[String], path: &Path) -> FileRole {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let is_test = |s: &str| kgfuse_core::code::is_test_segment(s);
    if module.iter().any(|m| m == "examples" || m == "example") {
        FileRole::Example
    } else if is_test(name) || module.iter().any(|m| is_test(m)) {
        FileRole::Test
    } else {
        FileRole::Library
    }
}

/// A Python file's module: the chain of enclosing directories with `__init__.py`;
/// outside any package, the path below the ingest root.
fn python_context(base: &Path, path: &Path, package_override: Option<&str>) -> Option<FileContext> {
    let stem = path.file_stem()?.to_str()?;
    let mut module: Vec<String> = Vec::new();
    if stem != "__init__" {
        module.push(segment(stem));
    }
    let mut dir = path.parent();
    let mut in_package = false;
    while let Some(d) = dir {
        if !d.join("__init__.py").is_file() {
            break;
        }
        in_package = true;
        module.push(segment(d.file_name()?.to_str()?));
        dir = d.parent();
    }
    if !in_package {
        // Scripts and examples: name them by their place under the ingest root.
        if let Ok(relative) = path.parent()?.strip_prefix(base) {
            for component in relative.components().rev() {
                module.push(segment(component.as_os_str().to_str()?));
            }
        }
        // `--package textwrap` for `textwrap.py` names the module, not a parent.
        if let Some(package) = package_override
            && module.last() != Some(&segment(package))
        {
            module.push(segment(package));
        }
    }
    module.reverse();
    if module.is_empty() {
        return None;
    }
    Some(FileContext {
        path: path.to_path_buf(),
        language: Language::Python,
        package: module[0].clone(),
        role: role_of(&module, path),
        module,
    })
}

/// Rust crates under the ingest root, found from their `Cargo.toml`.
struct CrateRoots {
    /// Crate directory -> crate name.
    roots: BTreeMap<PathBuf, String>,
    fallback: String,
}

impl CrateRoots {
    fn find(root: &Path, paths: &[(PathBuf, Language)], package_override: Option<&str>) -> Self {
        let mut roots = BTreeMap::new();
        for (path, language) in paths {
            if *language != Language::Rust {
                continue;
            }
            let mut dir = path.parent();
            while let Some(d) = dir {
                if roots.contains_key(d) {
                    break;
                }
                let manifest = d.join("Cargo.toml");
                if manifest.is_file() {
                    if let Some(name) = package_override
                        .map(str::to_owned)
                        .or_else(|| crate_name(&manifest))
                    {
                        roots.insert(d.to_path_buf(), segment(&name));
                    }
                    break;
                }
                if d == root || !d.starts_with(root) {
                    break;
                }
                dir = d.parent();
            }
        }
        let fallback = package_override.map(segment).unwrap_or_else(|| {
            let dir = if root.is_file() {
                root.parent()
            } else {
                Some(root)
            };
            dir.and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .map(segment)
                .unwrap_or_else(|| "crate".to_owned())
        });
        Self { roots, fallback }
    }

    fn context(&self, path: &Path) -> Option<FileContext> {
        let (crate_dir, name) = self
            .roots
            .iter()
            .rev()
            .find(|(dir, _)| path.starts_with(dir))
            .map(|(d, n)| (Some(d.as_path()), n.clone()))
            .unwrap_or((None, self.fallback.clone()));
        let relative = match crate_dir {
            Some(dir) => path.strip_prefix(dir).ok()?,
            None => Path::new(path.file_name()?),
        };
        let mut parts: Vec<String> = relative
            .components()
            .filter_map(|c| c.as_os_str().to_str().map(str::to_owned))
            .collect();
        if parts.first().is_some_and(|p| p == "benches") {
            return None;
        }
        let file = parts.pop()?;
        if parts.first().is_some_and(|p| p == "src") {
            parts.remove(0);
        }
        let stem = file.strip_suffix(".rs")?;
        let is_root = parts.is_empty() && (stem == "lib" || stem == "main");
        if !is_root && stem != "mod" {
            parts.push(stem.to_owned());
        }
        let mut module = vec![name.clone()];
        module.extend(parts.iter().map(|p| segment(p)));
        Some(FileContext {
            path: path.to_path_buf(),
            language: Language::Rust,
            package: name,
            role: role_of(&module[1..], path),
            module,
        })
    }
}

/// `[package] name` of a manifest, `-` replaced by `_` as rustc does.
fn crate_name(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let value: toml::Value = toml::from_str(&text).ok()?;
    let name = value.get("package")?.get("name")?.as_str()?;
    Some(name.replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, relative: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "").expect("write");
    }

    fn modules(walk: &Walk) -> Vec<(String, FileRole)> {
        walk.files
            .iter()
            .map(|f| (f.module.join("."), f.role))
            .collect()
    }

    #[test]
    fn python_modules_follow_packages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = dir.path().join("lib");
        for file in [
            "json/__init__.py",
            "json/encoder.py",
            "test/__init__.py",
            "test/test_json/__init__.py",
            "test/test_json/test_dump.py",
            "textwrap.py",
            "tools/script.py",
            "json/__pycache__/x.py",
        ] {
            touch(&lib, file);
        }
        let all = walk(&lib, &[Language::Python], None).expect("walk");
        assert_eq!(
            modules(&all),
            [
                ("json".into(), FileRole::Library),
                ("json.encoder".into(), FileRole::Library),
                ("test".into(), FileRole::Test),
                ("test.test_json".into(), FileRole::Test),
                ("test.test_json.test_dump".into(), FileRole::Test),
                ("textwrap".into(), FileRole::Library),
                ("tools.script".into(), FileRole::Library),
            ]
        );
        // Ingesting a sub-package keeps its full module path.
        let sub = walk(&lib.join("test/test_json"), &[Language::Python], None).expect("walk");
        assert_eq!(sub.files[1].module.join("."), "test.test_json.test_dump");
        // A single module named as its own package stays one level deep.
        let single = walk(
            &lib.join("textwrap.py"),
            &[Language::Python],
            Some("textwrap"),
        )
        .expect("walk");
        assert_eq!(single.files[0].module.join("."), "textwrap");
    }

    #[test]
    fn rust_modules_follow_the_crate_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("my-crate");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"my-crate\"\n").expect("write");
        for file in [
            "src/lib.rs",
            "src/de.rs",
            "src/value/mod.rs",
            "src/value/ser.rs",
            "tests/it.rs",
            "examples/demo.rs",
            "benches/b.rs",
        ] {
            touch(&root, file);
        }
        let all = walk(&root, &[Language::Rust], None).expect("walk");
        assert_eq!(
            modules(&all),
            [
                ("my_crate.examples.demo".into(), FileRole::Example),
                ("my_crate.de".into(), FileRole::Library),
                ("my_crate".into(), FileRole::Library),
                ("my_crate.value".into(), FileRole::Library),
                ("my_crate.value.ser".into(), FileRole::Library),
                ("my_crate.tests.it".into(), FileRole::Test),
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_reported_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        touch(dir.path(), "a/m.py");
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("a/loop"))
            .expect("symlink");
        let walk = walk(dir.path(), &[Language::Python], None).expect("walk");
        assert_eq!(walk.files.len(), 1);
        assert!(
            walk.problems
                .iter()
                .any(|p| p.message.contains("symbolic link loop"))
        );
    }
}
