//! `kgfuse`: the command-line interface to a kgfuse data directory.
//!
//! Results go to stdout, logs and progress bars to stderr; every failure exits
//! non-zero with a message on stderr. `cli.rs` holds the flags, `commands/` one
//! module per command, `render.rs` what people read.
#![allow(clippy::print_stdout)]

mod cli;
mod commands;
mod console;
mod demo;
mod hints;
mod progress;
mod render;

use clap::Parser;
use cli::Cli;
use std::io::IsTerminal;
use std::process::ExitCode;

/// jemalloc instead of the system's allocator: a retrieval builds and drops many
/// small strings (IRIs, terms, query rows), and glibc's malloc took 14% of the
/// CPU samples of `unified` retrievals (`perf`, BENCHMARKS.md). Its thread
/// caches keep blocks of up to 1 MiB (`tcache_max`, set for the build in
/// `.cargo/config.toml`), so the encoder's buffers stay cached between
/// questions. The library crates leave the choice of allocator to the program
/// that links them.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// `kgfuse ... | head` closes stdout early: end quietly with the status a shell
/// gives a process killed by SIGPIPE (141), instead of a panic and a backtrace.
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // Before any thread starts: OpenBLAS picks its kernels as the process loads.
    let restart_failed = kgfuse::blas::restart_with_faster_kernels();
    exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KGFUSE_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(format!("kgfuse={level},{level}"))
            }),
        )
        .init();
    if let Some(e) = restart_failed {
        tracing::warn!("could not restart with faster OpenBLAS kernels: {e}");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) if is_closed_stdout(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line, each cause once: many errors already
/// carry their cause's words (`graph storage: IO error: ...`), and printing
/// the cause again would repeat them. A full disk gets a hint on its own line.
fn error_text(error: &anyhow::Error) -> String {
    let disk_full = kgfuse::error_chain_mentions_disk_full(error.as_ref());
    let mut text = String::new();
    for cause in error.chain() {
        let words = cause.to_string();
        if text.contains(&words) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&words);
    }
    if let Some(hint) = hints::hint(error) {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    if disk_full {
        text.push_str(
            "\nhint: the disk holding the store is full; free space, then run the command again",
        );
    }
    text
}

/// Whether writing results failed because the reader of stdout went away (some
/// writers report it as text: serialisation errors carry the io error's message).
fn is_closed_stdout(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.to_string().ends_with("Broken pipe (os error 32)")
    })
}
