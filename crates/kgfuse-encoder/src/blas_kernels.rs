//! Which OpenBLAS kernels the large products run on, and asking for better ones
//! when OpenBLAS does not know the CPU.
//!
//! A `DYNAMIC_ARCH` OpenBLAS (Debian's) carries kernels for many CPUs and picks
//! one set as the process loads it, by the CPU's model number. A model newer than
//! the library is unknown to it, and it falls back to its SSE3 kernels
//! (`Prescott`) even on a CPU with AVX-512: Debian 12's OpenBLAS 0.3.21 does so on
//! Emerald Rapids (model 207), where the encoder's batches then run almost
//! three times slower (BENCHMARKS.md, "The encoder on a CPU OpenBLAS does not
//! know"). The only way to pick again is the `OPENBLAS_CORETYPE` variable, which
//! OpenBLAS reads once, before `main`. Setting it from inside a running program would race with any
//! thread that reads the environment, so a program starts itself again with the
//! variable set ([`restart_with_faster_blas_kernels`]).

/// What OpenBLAS falls back to on a CPU it does not know: its SSE3 kernels.
const FALLBACK_KERNELS: &str = "Prescott";

/// The variable OpenBLAS reads for the kernels to use.
pub const CORETYPE_VARIABLE: &str = "OPENBLAS_CORETYPE";

/// The kernels OpenBLAS runs the encoder's large products on (`SkylakeX`,
/// `Haswell`, …), or `None` when the build did not link OpenBLAS (gemm's kernels
/// run them then).
pub fn blas_kernels() -> Option<String> {
    #[cfg(openblas)]
    {
        Some(crate::matmul::blas::kernels())
    }
    #[cfg(not(openblas))]
    {
        None
    }
}

/// The kernels to ask OpenBLAS for (a value of `OPENBLAS_CORETYPE`) because it
/// did not know this CPU and fell back to its SSE3 kernels while the CPU runs
/// AVX-512 or AVX2 ones; `None` when OpenBLAS's choice stands: it knew the CPU,
/// the variable is set already, the library cannot pick again, or the build did
/// not link it.
pub fn blas_kernels_to_request() -> Option<&'static str> {
    #[cfg(openblas)]
    {
        if std::env::var_os(CORETYPE_VARIABLE).is_some()
            || crate::matmul::blas::kernels() != FALLBACK_KERNELS
            || !crate::matmul::blas::picks_kernels_at_load()
        {
            return None;
        }
        kernels_this_cpu_runs()
    }
    #[cfg(not(openblas))]
    {
        None
    }
}

/// OpenBLAS's name for the fastest of its x86-64 kernel sets this CPU (and its
/// operating system) can run, by the features the standard library detects.
#[cfg(all(openblas, target_arch = "x86_64"))]
fn kernels_this_cpu_runs() -> Option<&'static str> {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512cd")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        Some("SkylakeX")
    } else if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
    {
        Some("Haswell")
    } else {
        None
    }
}

#[cfg(all(openblas, not(target_arch = "x86_64")))]
fn kernels_this_cpu_runs() -> Option<&'static str> {
    None
}

/// Starts this program again, with the same arguments and `OPENBLAS_CORETYPE`
/// set, when [`blas_kernels_to_request`] names kernels; meant for the first line
/// of `main`. Does not return when it restarts (the process image is replaced:
/// same process id, open files and standard streams); returns `None` when
/// nothing had to be done (always, off Unix), or the error when the restart
/// failed, in which case the program goes on with the fallback kernels.
pub fn restart_with_faster_blas_kernels() -> Option<std::io::Error> {
    let kernels = blas_kernels_to_request()?;
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let program = match std::env::current_exe() {
            Ok(program) => program,
            Err(e) => return Some(e),
        };
        let mut arguments = std::env::args_os();
        let mut command = std::process::Command::new(program);
        if let Some(name) = arguments.next() {
            command.arg0(name);
        }
        Some(
            command
                .args(arguments)
                .env(CORETYPE_VARIABLE, kernels)
                .exec(),
        )
    }
    #[cfg(not(unix))]
    {
        let _ = kernels;
        None
    }
}
