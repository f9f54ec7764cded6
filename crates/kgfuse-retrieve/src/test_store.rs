//! Stores for unit tests: the hash embedder, files loaded, then reopened so the
//! prefixes learned from the files are known to the parser.

use kgfuse_core::config::StoreConfig;
use kgfuse_core::progress::NoProgress;
use kgfuse_store::Store;
use std::path::PathBuf;
use tempfile::TempDir;

/// A store holding `files`, in a temporary directory that lives as long as the
/// returned guard.
pub(crate) async fn with_files(files: &[PathBuf]) -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = in_dir(&dir, files).await;
    (dir, store)
}

/// A store holding `turtle` as one file, written beside the store.
pub(crate) async fn with_turtle(turtle: &str) -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data.ttl");
    std::fs::write(&file, turtle).expect("write");
    let store = in_dir(&dir, &[file]).await;
    (dir, store)
}

async fn in_dir(dir: &TempDir, files: &[PathBuf]) -> Store {
    let data = dir.path().join("data");
    {
        let store = Store::init(&data, StoreConfig::new("hash", 384))
            .await
            .expect("init");
        let sources: Vec<_> = files.iter().map(|f| f.as_path().into()).collect();
        store
            .load_files(&sources, None, &NoProgress)
            .await
            .expect("load");
    }
    Store::open(&data, &NoProgress).await.expect("reopen")
}
