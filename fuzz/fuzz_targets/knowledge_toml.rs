//! A domain-knowledge TOML file (`kgfuse ingest code --knowledge FILE.toml`).
//!
//! Checked: no panic; the file is read or refused with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("knowledge.toml");
    std::fs::write(&path, data).expect("write input");
    let _ = kgfuse_ingest::code::knowledge::read(&path);
});
