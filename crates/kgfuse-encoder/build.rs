//! Links OpenBLAS when the machine has it (Debian: `libopenblas-dev`, which `make
//! deps` installs): the encoder's large products then run on OpenBLAS's kernels,
//! which use AVX-512 where the CPU has it (gemm's stable kernels stop at AVX2).
//! Without it, everything runs on gemm, with the same results. `KGFUSE_BLAS=off`
//! builds without OpenBLAS; `KGFUSE_OPENBLAS_DIR` names a directory to look in
//! first. A build made before OpenBLAS was installed keeps gemm until this crate
//! is built again (`cargo clean -p kgfuse-encoder`): watching the library
//! directories would rebuild it, and everything above it, on every build.
use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(openblas)");
    println!("cargo:rerun-if-env-changed=KGFUSE_BLAS");
    println!("cargo:rerun-if-env-changed=KGFUSE_OPENBLAS_DIR");
    if std::env::var("KGFUSE_BLAS").is_ok_and(|v| v == "off") {
        return;
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::var_os("KGFUSE_OPENBLAS_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.extend(
        [
            format!("/usr/lib/{arch}-linux-gnu"),
            "/usr/lib64".into(),
            "/usr/lib".into(),
            "/usr/local/lib".into(),
        ]
        .map(PathBuf::from),
    );
    for dir in dirs {
        if dir.join("libopenblas.so").exists() {
            println!(
                "cargo:rerun-if-changed={}",
                dir.join("libopenblas.so").display()
            );
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=dylib=openblas");
            println!("cargo:rustc-cfg=openblas");
            return;
        }
    }
    println!(
        "cargo:warning=OpenBLAS not found (Debian: libopenblas-dev, installed by `make deps`); \
         kgfuse-encoder runs every product on gemm's kernels (same vectors, slower on AVX-512 CPUs)"
    );
}
