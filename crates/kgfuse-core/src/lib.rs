//! Shared vocabulary, configuration, hashing and progress reporting for kgfuse.
//!
//! Every other kgfuse crate depends on this one; it depends on no store. It holds:
//!
//! - [`vocab`]: IRIs of the kgfuse ontology (`ontology/kgfuse.ttl`) and the W3C
//!   vocabularies kgfuse reuses;
//! - [`config`]: the `kgfuse.toml` file that records how a data directory was
//!   initialised (embedder, dimension, which predicates carry searchable text);
//! - [`content_hash`]: the hash that ties a vector row to the text it was computed from;
//! - [`context`]: the `FusedContext` every retrieval strategy returns;
//! - [`ontology`]: kgfuse's own vocabulary, which every store carries in a named graph;
//! - [`answer`]: the `Answer` the grounded answer loop returns;
//! - [`code`]: naming conventions of source code (test code, private names);
//! - [`progress`]: a small observer trait so libraries report progress without
//!   knowing whether a terminal is attached;
//! - [`timing`]: running totals of time spent inside a component.
//! - [`memory`]: this process's resident memory and its peak, for logs and benchmarks;
//! - the text toolkit every crate shares, each helper defined once: [`iri`] (local
//!   names, prefixed forms), [`text`] (identifier words, singulars, code fences) and
//!   [`math`] (dot product, cosine, quantiles).
//!
//! ```
//! use kgfuse_core::config::{EmbedderKind, StoreConfig};
//! use kgfuse_core::content_hash;
//!
//! let config = StoreConfig::new(EmbedderKind::Hash, 256);
//! assert!(config.text_predicates.iter().any(|p| p.ends_with("#label")));
//! assert_eq!(content_hash("abc").len(), 64);
//! ```

pub mod answer;
pub mod code;
pub mod config;
pub mod context;
pub mod iri;
pub mod math;
pub mod memory;
pub mod ontology;
pub mod progress;
pub mod text;
pub mod timing;
pub mod vocab;

use sha2::{Digest, Sha256};

/// SHA-256 of a UTF-8 text, as 64 lowercase hex digits.
///
/// Vector rows store the hash of the text they were embedded from; `kgfuse check`
/// recomputes it from the graph to find stale rows.
pub fn content_hash(text: &str) -> String {
    content_hash_bytes(text.as_bytes())
}

/// SHA-256 of raw bytes, as 64 lowercase hex digits.
pub fn content_hash_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of everything a reader yields, read in blocks so large source files
/// are hashed without being held in memory.
pub fn content_hash_reader(mut reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = ContentHasher::default();
    std::io::copy(&mut reader, &mut hasher)?;
    Ok(hasher.finish())
}

/// [`content_hash_bytes`] of everything written to it, computed as it is written
/// (a serialisation is hashed without being held in memory).
#[derive(Default)]
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// The hash of what was written, as 64 lowercase hex digits.
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

impl std::io::Write for ContentHasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The `file://` IRI of an absolute path: every byte outside the unreserved set and
/// `/` is percent-encoded. The named graph of a loaded or ingested file is this IRI
/// of its canonical path.
pub fn file_iri(absolute: &std::path::Path) -> String {
    let mut iri = String::from("file://");
    for byte in absolute.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            iri.push(char::from(byte));
        } else {
            iri.push_str(&format!("%{byte:02X}"));
        }
    }
    iri
}

/// Writes a file so that readers see either the old or the new content, never a
/// torn one: write a sibling temporary file, fsync it, rename it over the target.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        // Persist the rename itself; not every platform allows opening directories.
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Whether an error, or any error in its chain of causes, is the disk running
/// out of space: an `io::Error` of kind `StorageFull` (`ENOSPC`), or a message
/// carrying the operating system's words for it (RocksDB and LanceDB pass
/// their I/O failures on as text).
pub fn error_chain_mentions_disk_full(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        let io_full = error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull);
        if io_full || error.to_string().contains("No space left on device") {
            return true;
        }
        cause = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_recognised_through_wrappers_and_text() {
        #[derive(Debug, thiserror::Error)]
        #[error("storage")]
        struct Wrapper(#[source] std::io::Error);
        let enospc = std::io::Error::from_raw_os_error(28);
        assert!(error_chain_mentions_disk_full(&Wrapper(enospc)));
        let text = std::io::Error::other("IO error: No space left on device: While appending");
        assert!(error_chain_mentions_disk_full(&text));
        let other = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(!error_chain_mentions_disk_full(&Wrapper(other)));
    }

    #[test]
    fn hash_is_sha256_hex() {
        // Known SHA-256 test vector.
        assert_eq!(
            content_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(content_hash("abc"), content_hash("abd"));
        let long = "kgfuse ".repeat(20_000);
        assert_eq!(
            content_hash_reader(long.as_bytes()).expect("read"),
            content_hash(&long)
        );
    }
}
