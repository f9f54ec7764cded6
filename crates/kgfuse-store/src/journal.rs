//! `journal.json`: marks a write in progress so a crash can be repaired on open;
//! `writes`: how many writes have finished, the store's content version.

use crate::StoreError;
use crate::changes::ChangedNodes;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const JOURNAL_FILE: &str = "journal.json";
/// The count of finished writes, as decimal text.
const WRITES_FILE: &str = "writes";

/// An operation that started and has not finished.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub operation: String,
    pub detail: String,
    pub pid: u32,
}

/// Handle of an open journal entry; [`Journal::finish`] removes it.
#[must_use = "call finish() when the operation completed"]
pub(crate) struct Journal {
    path: PathBuf,
}

impl Journal {
    /// Records that `operation` starts (durably, before any store is touched).
    pub fn begin(dir: &Path, operation: &str, detail: &str) -> Result<Self, StoreError> {
        let path = dir.join(JOURNAL_FILE);
        let entry = Entry {
            operation: operation.to_owned(),
            detail: detail.to_owned(),
            pid: std::process::id(),
        };
        let bytes =
            serde_json::to_vec_pretty(&entry).map_err(|e| StoreError::Invalid(e.to_string()))?;
        kgfuse_core::write_atomically(&path, &bytes).map_err(|source| StoreError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Self { path })
    }

    /// The operation a previous process left unfinished, if any.
    pub fn pending(dir: &Path) -> Result<Option<Entry>, StoreError> {
        let path = dir.join(JOURNAL_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).unwrap_or(Entry {
                operation: "write".into(),
                detail: "unreadable journal".into(),
                pid: 0,
            }))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Marks an operation that may have changed anything complete.
    pub fn finish(self) -> Result<(), StoreError> {
        self.finish_with(&ChangedNodes::everything())
    }

    /// Marks the operation complete: records the nodes it changed, counts it
    /// in `writes`, then removes the journal (a crash in between counts it
    /// again at the repair, which records everything: readers of the count
    /// only look at the store once more).
    pub fn finish_with(self, changed: &ChangedNodes) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent() {
            let count = finished_writes(dir)?.saturating_add(1);
            changed.record(dir, count)?;
            let path = dir.join(WRITES_FILE);
            kgfuse_core::write_atomically(&path, count.to_string().as_bytes()).map_err(
                |source| StoreError::Io {
                    path: path.display().to_string(),
                    source,
                },
            )?;
        }
        std::fs::remove_file(&self.path).map_err(|source| StoreError::Io {
            path: self.path.display().to_string(),
            source,
        })
    }
}

/// How many writes have finished in the store at `dir` (0 before the first, and
/// for a store written before the count was kept; an unreadable count is 0 too,
/// which only makes a reader look at the store again).
pub(crate) fn finished_writes(dir: &Path) -> Result<u64, StoreError> {
    let path = dir.join(WRITES_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text.trim().parse().unwrap_or(0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(StoreError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}
