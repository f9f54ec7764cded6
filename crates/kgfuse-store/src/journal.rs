//! `journal.json`: marks a write in progress so a crash can be repaired on open.

use crate::StoreError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const JOURNAL_FILE: &str = "journal.json";

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

    /// Marks the operation complete.
    pub fn finish(self) -> Result<(), StoreError> {
        std::fs::remove_file(&self.path).map_err(|source| StoreError::Io {
            path: self.path.display().to_string(),
            source,
        })
    }
}
