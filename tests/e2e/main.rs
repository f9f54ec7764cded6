//! End-to-end tests: they drive the real `kgfuse` binary on real files.
//!
//! One binary for all of them (see crates/kgfuse-cli/Cargo.toml); the harness in
//! `harness.rs` gives each test a fresh data directory.

mod harness;

mod architecture;
mod ask;
mod browser;
mod budget;
mod console;
mod crash;
mod entailment;
mod eval;
mod examples;
mod exhaustion;
mod http;
mod ingest;
mod lexicon;
mod linking;
mod load;
mod local_llm;
mod mcp;
mod minilm;
mod remote;
mod retrieve;
mod sparql;
mod tasks;
mod team;
mod validate;
mod worked_examples;
