//! The Python package as a user meets it: the module this build made, installed
//! into a venv with the frameworks its retrievers serve (`make test-deps` creates
//! it from requirements-test.txt, pinned), then `tests/test_kgfuse.py` under
//! pytest. Missing venv: skipped with a note, a failure under
//! KGFUSE_REQUIRE_SERVERS (which `make test` sets).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv: `KGFUSE_PYTHON_VENV`, else `<target dir>/python-venv`.
fn venv(target: &Path) -> Option<PathBuf> {
    let venv = std::env::var_os("KGFUSE_PYTHON_VENV")
        .map_or_else(|| target.join("python-venv"), PathBuf::from);
    if venv.join("bin/python").exists() {
        return Some(venv);
    }
    assert!(
        std::env::var_os("KGFUSE_REQUIRE_SERVERS").is_none(),
        "{} holds no venv: run `make test-deps`",
        venv.display()
    );
    eprintln!("skipped: {} holds no venv (make test-deps)", venv.display());
    None
}

/// `<target>/<profile>`, from this test binary's path (`<profile>/deps/python-<hash>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .filter(|deps| deps.ends_with("deps"))
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} is not in a cargo deps directory", exe.display()))
        .to_owned()
}

/// The extension module cargo built with this test (the library of this crate):
/// the copy in `deps/`, which every build of the test refreshes (the one cargo
/// copies up to `<profile>/` can be older).
fn built_module(profile: &Path) -> PathBuf {
    let name = format!(
        "{}kgfuse_native{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let module = profile.join("deps").join(&name);
    assert!(module.exists(), "{} was not built", module.display());
    module
}

/// Runs `python` with `args`, panicking with its output when it fails.
fn run(python: &Path, args: &[&str], env: &[(&str, &Path)]) -> String {
    let output = Command::new(python)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .env_remove("KGFUSE_LLM_BASE_URL")
        .env_remove("KGFUSE_LLM_MODEL")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{} {args:?} failed:\n{stdout}\n{}",
        python.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Installs the package into the venv's site-packages, replacing an earlier
/// install: its Python half and the built module, named as maturin's wheel names it.
fn install(python: &Path, module: &Path, sources: &Path) {
    let code = "import sysconfig; print(sysconfig.get_paths()['purelib'])";
    let site = PathBuf::from(run(python, &["-c", code], &[]).trim());
    let package = site.join("kgfuse");
    let _ = std::fs::remove_dir_all(&package);
    std::fs::create_dir_all(&package).expect("the package directory");
    for entry in std::fs::read_dir(sources).expect("python/kgfuse") {
        let path = entry.expect("a package file").path();
        if path.is_file() {
            let name = path.file_name().expect("a file name");
            std::fs::copy(&path, package.join(name)).expect("copy a package file");
        }
    }
    // A hard link where it can be (the dev build is ~500 MB), else a copy.
    let installed = package.join("_native.abi3.so");
    if std::fs::hard_link(module, &installed).is_err() {
        std::fs::copy(module, &installed).expect("copy the module");
    }
}

#[test]
fn the_python_package_passes_its_pytest_suite() {
    let profile = profile_dir();
    let target = profile.parent().expect("the target directory").to_owned();
    let Some(venv) = venv(&target) else {
        return;
    };
    let python = venv.join("bin/python");
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    install(
        &python,
        &built_module(&profile),
        &crate_dir.join("python/kgfuse"),
    );

    let scratch = target.join("kgfuse-test-servers/python");
    let _ = std::fs::remove_dir_all(&scratch);
    let repo = crate_dir.join("../..");
    let suite = crate_dir.join("tests/test_kgfuse.py");
    let basetemp = format!("--basetemp={}", scratch.display());
    let output = run(
        &python,
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            &basetemp,
            suite.to_str().expect("a UTF-8 path"),
        ],
        &[("KGFUSE_REPO", &repo)],
    );
    eprintln!("{output}");
}
