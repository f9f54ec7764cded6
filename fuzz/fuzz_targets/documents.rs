//! A Markdown document with front matter and, after the first NUL byte, its
//! sidecar `<name>.meta.toml` (`kgfuse ingest docs`).
//!
//! Checked: no panic; a directory holding one Markdown file always gives an
//! extraction (a bad file or sidecar is a reported problem, not a failure).
#![no_main]

use kgfuse_core::progress::NoProgress;
use kgfuse_ingest::docs::{DocsOptions, extract_docs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (document, sidecar) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], Some(&data[nul + 1..])),
        None => (data, None),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("note.md"), document).expect("write document");
    if let Some(sidecar) = sidecar {
        std::fs::write(dir.path().join("note.md.meta.toml"), sidecar).expect("write sidecar");
    }
    let options = DocsOptions {
        max_chunk_chars: 200,
        ..DocsOptions::default()
    };
    let extraction = extract_docs(dir.path(), &[], &options, &NoProgress);
    assert!(extraction.is_ok(), "{extraction:?}");
});
