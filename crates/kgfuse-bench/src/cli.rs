//! `kgfuse-bench`'s command line: one subcommand per measurement; the options
//! every measurement shares are global (`--scratch`, the LUBM data).

use crate::remote;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Measures kgfuse against baselines from one run and prints ratios. Without a
/// subcommand it runs `lubm`.
#[derive(Parser)]
#[command(name = "kgfuse-bench")]
pub(crate) struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every measurement understands.
#[derive(Args)]
pub(crate) struct Common {
    /// Scratch folder (default: a temporary directory).
    #[arg(long, global = true)]
    pub scratch: Option<PathBuf>,
    /// Folder holding lubm1.tar.gz, lubm10.tar.gz (and lubm50.tar.gz).
    #[arg(long, global = true, default_value = "../shared/data/lubm")]
    pub lubm: PathBuf,
    /// Folder with the LUBM queries q01.rq ... q14.rq.
    #[arg(long, global = true, default_value = "queries/lubm")]
    pub queries: PathBuf,
    /// LUBM sizes (universities) to run.
    #[arg(long, global = true, value_delimiter = ',', default_value = "1,10")]
    pub sizes: Vec<u32>,
    /// Timed runs per query (after one warm-up run); the median is reported.
    #[arg(long, global = true, default_value_t = 5)]
    pub runs: usize,
}

/// One measurement.
#[derive(Subcommand)]
pub(crate) enum Command {
    /// kgfuse against plain Oxigraph on LUBM: load and the 14 queries (the default).
    Lubm,
    /// Code ingestion of a source tree (e.g. the CPython standard library:
    /// `python3 -c 'import os; print(os.path.dirname(os.__file__))'`).
    Ingest(IngestArgs),
    /// Retrieval strategies on synthetic API graphs of these sizes (functions).
    Retrieval(RetrievalArgs),
    /// kgfuse against the Python peer, on the peer's files and questions.
    Peer(PeerArgs),
    /// What serving over HTTP costs on LUBM-1: queries, retrieval, throughput at
    /// 1/4/16 clients.
    Http,
    /// Remote engines against embedded ones (`bench/remote.sh` starts the servers).
    Remote(RemoteArgs),
    /// Where one retrieval's time goes (embedding, LanceDB, graph, kgfuse's own
    /// code), per strategy, on an existing store.
    Profile(ProfileArgs),
}

/// `kgfuse-bench ingest`.
#[derive(Args)]
pub(crate) struct IngestArgs {
    /// The source tree.
    pub dir: PathBuf,
    /// Internal: run one ingestion configuration (G, H, S or M) and print its measurement.
    #[arg(long, hide = true)]
    pub one: Option<String>,
}

/// `kgfuse-bench retrieval`.
#[derive(Args)]
pub(crate) struct RetrievalArgs {
    /// Sizes of the synthetic graphs, in functions (comma-separated).
    #[arg(value_delimiter = ',', required = true)]
    pub functions: Vec<usize>,
    /// Keep each synthetic store (and its Turtle file) in the scratch folder, e.g.
    /// for `profile SCRATCH/retrieval-N` or `kgfuse retrieve`.
    #[arg(long, requires = "scratch")]
    pub keep: bool,
    /// With `--keep`: build each store (load, case base: their time, peak memory
    /// and size on disk) and stop before the strategies run; `profile
    /// SCRATCH/retrieval-N --synthetic-questions` times them later.
    #[arg(long, requires = "keep")]
    pub build_only: bool,
    /// On the stores an earlier `--keep` run left in the scratch folder: only
    /// what a fresh engine pays for its first questions (the stores are not
    /// rebuilt).
    #[arg(long, requires = "scratch", conflicts_with = "build_only")]
    pub first_questions: bool,
}

/// `kgfuse-bench peer`.
#[derive(Args)]
pub(crate) struct PeerArgs {
    /// Result JSON of `bench/peer/peer.py`.
    pub result: PathBuf,
    /// The questions the peer ran (JSON list).
    #[arg(long, default_value = "bench/peer/questions.json")]
    pub questions: PathBuf,
}

/// `kgfuse-bench remote`.
#[derive(Args)]
pub(crate) struct RemoteArgs {
    /// Retrieval on a synthetic graph of this many functions on every
    /// `--graph-server` (0: none).
    pub functions: usize,
    /// A SPARQL server: `NAME=QUERY[,UPDATE[,STORE]]` (repeatable).
    #[arg(long)]
    pub graph_server: Vec<remote::Server>,
    /// Load this LUBM size into the server named `virtuoso` through kgfuse and
    /// through its own Graph Store POST.
    #[arg(long)]
    pub remote_lubm: Option<u32>,
    /// `s3://bucket/prefix` to compare LanceDB on S3 with a local directory
    /// (credentials from `AWS_*`).
    #[arg(long)]
    pub vectors_s3: Option<String>,
    /// LanceDB storage option for `--vectors-s3`, `KEY=VALUE` (repeatable).
    #[arg(long)]
    pub vectors_option: Vec<String>,
    /// Vector-row sizes (functions) for `--vectors-s3`.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub vector_sizes: Vec<usize>,
}

/// `kgfuse-bench profile`.
#[derive(Args)]
pub(crate) struct ProfileArgs {
    /// The store's data directory.
    pub dir: PathBuf,
    /// Ask the 20 questions of `retrieval`'s synthetic graph instead of `--questions`.
    #[arg(long)]
    pub synthetic_questions: bool,
    /// The questions to ask (JSON list).
    #[arg(long, default_value = "bench/peer/questions.json")]
    pub questions: PathBuf,
    /// Milliseconds of idleness before each measured retrieval, as an agent's
    /// questions come (0: back to back, after the warm-up).
    #[arg(long, default_value_t = 0)]
    pub idle_ms: u64,
    /// Only these strategies (comma-separated; all when not given).
    #[arg(long, value_delimiter = ',', value_parser = parse_strategy)]
    pub strategy: Vec<kgfuse::Strategy>,
    /// Measure each question this many times (after one warm-up each); the
    /// medians are over every measurement. More passes steady the medians when
    /// comparing two builds.
    #[arg(long, default_value_t = 1)]
    pub passes: usize,
}

fn parse_strategy(name: &str) -> Result<kgfuse::Strategy, kgfuse::UnknownStrategy> {
    kgfuse::Strategy::from_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands after `kgfuse-bench` (or the Makefile's `.../kgfuse-bench"`)
    /// on a line, when followed by a subcommand or a flag.
    fn commands_on(line: &str) -> Vec<String> {
        let mut commands = Vec::new();
        let mut rest = line;
        while let Some(at) = rest.find("kgfuse-bench") {
            rest = &rest[at + "kgfuse-bench".len()..];
            let after = rest.strip_prefix('"').unwrap_or(rest);
            let Some(args) = after.strip_prefix(' ') else {
                continue;
            };
            if !args.starts_with(|c: char| c.is_ascii_lowercase() || c == '-') {
                continue;
            }
            let args = args.split(['`', '|']).next().unwrap_or_default();
            commands.push(format!("kgfuse-bench {}", args.replace('…', "X")));
        }
        commands
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn every_kgfuse_bench_command_of_the_current_docs_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut checked = 0;
        for doc in ["BENCHMARKS.md", "Makefile", "README.md"] {
            let text = std::fs::read_to_string(root.join(doc)).expect("doc reads");
            // History keeps the flags of its day.
            let current = text.split("\n## History").next().unwrap_or_default();
            for command in current.lines().flat_map(commands_on) {
                let words = shlex::split(&command).unwrap_or_else(|| panic!("{doc}: `{command}`"));
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{doc}: `{command}` does not parse: {e}");
                }
                checked += 1;
            }
        }
        assert!(checked > 10, "only {checked} commands checked");
    }
}
