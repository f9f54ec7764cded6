//! The on-disk response cache: one file per prompt, holding the assistant's raw
//! reply, so reruns are reproducible and cost nothing.

use crate::LlmError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The cache key of a request: hex SHA-256 of the model, the JSON-mode flag and
/// both messages, each part length-prefixed so parts cannot run into each other.
pub(crate) fn key(model: &str, json_mode: bool, system: &str, user: &str) -> String {
    let mut hasher = Sha256::new();
    let flag = if json_mode { "json" } else { "text" };
    for part in [model, flag, system, user] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Replies stored as `<dir>/<key>.json`; without a directory, nothing is cached.
#[derive(Debug)]
pub(crate) struct ResponseCache {
    dir: Option<PathBuf>,
    /// Makes temporary file names unique within this process.
    writes: AtomicU64,
}

impl ResponseCache {
    /// A cache in `dir` (created if missing), or no cache.
    pub(crate) fn open(dir: Option<&Path>) -> Result<Self, LlmError> {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(|error| {
                LlmError::Service(format!(
                    "cannot create the response cache directory {}: {error}",
                    dir.display()
                ))
            })?;
        }
        Ok(Self {
            dir: dir.map(Path::to_path_buf),
            writes: AtomicU64::new(0),
        })
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.join(format!("{key}.json")))
    }

    /// The stored reply for `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.path(key)?).ok()
    }

    /// Stores `reply` under `key`: written to a temporary file, then renamed, so a
    /// reader never sees half a file. Failures are logged, not returned: a cache
    /// that cannot be written only costs a later call.
    pub(crate) fn put(&self, key: &str, reply: &str) {
        let (Some(dir), Some(path)) = (&self.dir, self.path(key)) else {
            return;
        };
        let serial = self.writes.fetch_add(1, Ordering::Relaxed);
        let temporary = dir.join(format!(".{key}.{}.{serial}.tmp", std::process::id()));
        let written =
            std::fs::write(&temporary, reply).and_then(|()| std::fs::rename(&temporary, &path));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temporary);
            tracing::warn!(
                "cannot write the response cache file {}: {error}",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_part() {
        let base = key("m", true, "sys", "user");
        assert_eq!(base.len(), 64);
        assert_eq!(base, key("m", true, "sys", "user"));
        for other in [
            key("m2", true, "sys", "user"),
            key("m", false, "sys", "user"),
            key("m", true, "sysu", "ser"),
            key("m", true, "sys", "user!"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn stores_and_reads_replies() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ResponseCache::open(Some(&dir.path().join("nested"))).expect("open");
        assert_eq!(cache.get("abc"), None);
        cache.put("abc", "{\"label\": 1}");
        assert_eq!(cache.get("abc").as_deref(), Some("{\"label\": 1}"));
        let files: Vec<_> = std::fs::read_dir(dir.path().join("nested"))
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(files, vec![std::ffi::OsString::from("abc.json")]);

        let none = ResponseCache::open(None).expect("open");
        none.put("abc", "x");
        assert_eq!(none.get("abc"), None);
    }
}
