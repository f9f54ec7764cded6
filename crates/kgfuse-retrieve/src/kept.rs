//! Whole-store values kept on disk in the store's directory and stamped with
//! its content version ([`Store::content_version`]), as the lexicon's index
//! is: `paths`' data-flow graph, `domain`'s packages. A process that opens an
//! unchanged store reads the file instead of the graph; after writes, the
//! value is brought in step from the nodes they changed
//! ([`Store::changed_between`]) and written back. Reading again is
//! idempotent, so a file written while another process wrote is mended by the
//! next reader.
//!
//! The file: a magic line, the format number, the stamp, then the value's own
//! bytes ([`KeptFile::encode`]); written whole under a name of its own, then
//! renamed over the old one.

use crate::RetrieveError;
use kgfuse_store::{Store, StoreError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A value kept on disk beside the graph.
pub(crate) trait KeptFile: Sized {
    /// What it is, for logs and errors ("the data-flow graph").
    const WHAT: &'static str;
    /// The file's first bytes.
    const MAGIC: &'static [u8];
    /// Bumped when what the file holds changes: a file of another format is
    /// read again from the graph.
    const FORMAT: u32;
    /// Appends the value's bytes.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads the value's bytes; all of them.
    fn decode(input: &mut Reader<'_>) -> Result<Self, FileError>;
}

/// How a process came by a kept value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Read from the file, in step with the store.
    Read,
    /// Read from the file, then the nodes written since read again.
    Updated,
    /// Read from the whole graph.
    Built,
}

/// What the file says against the store now.
pub(crate) enum Found<T> {
    /// In step: the value as it is.
    InStep(T),
    /// Behind: the value and the nodes changed since.
    Behind(T, BTreeSet<String>),
    /// Absent, unreadable, of another format, or behind by writes whose
    /// changes are not on record: read the whole graph.
    Nothing,
}

/// The file at `path` against the store's content version, and that version
/// (`None` on a SPARQL server, where nothing is kept).
pub(crate) fn look<T: KeptFile>(
    store: &Store,
    path: &Path,
) -> Result<(Found<T>, Option<u64>), RetrieveError> {
    let version = store.content_version()?;
    let kept = match read::<T>(path) {
        Ok(kept) => kept,
        Err(e) => {
            if path.exists() {
                tracing::warn!("{}: {e}; {} is read again", path.display(), T::WHAT);
            }
            None
        }
    };
    let found = match (kept, version) {
        (Some((stamp, value)), Some(now)) if stamp == now => Found::InStep(value),
        (Some((stamp, value)), Some(now)) if stamp < now => {
            match store.changed_between(stamp, now)? {
                Some(nodes) => Found::Behind(value, nodes),
                None => Found::Nothing,
            }
        }
        _ => Found::Nothing,
    };
    Ok((found, version))
}

/// Writes `value`, stamped with `version`, after a read that was not in step;
/// a failure is logged (the value is then read again by the next process).
pub(crate) fn keep<T: KeptFile>(path: &Path, version: Option<u64>, value: &T) {
    if let Some(version) = version
        && let Err(e) = write(path, version, value)
    {
        tracing::warn!("{}: {e}; {} is not kept on disk", path.display(), T::WHAT);
    }
}

/// The value of the file at `path` when it says it is in step with the store
/// (for `kgfuse check`); `None` when absent, unreadable or behind: the next
/// question brings it in step, as it is meant to.
pub(crate) fn in_step<T: KeptFile>(store: &Store, path: &Path) -> Result<Option<T>, RetrieveError> {
    let version = store.content_version()?;
    Ok(match read::<T>(path) {
        Ok(Some((stamp, value))) if version == Some(stamp) => Some(value),
        _ => None,
    })
}

/// Writes `value` stamped with the store's version now (`kgfuse check
/// --repair`, after reading the whole graph); nothing on a SPARQL server.
pub(crate) fn rewrite<T: KeptFile>(
    store: &Store,
    path: &Path,
    value: &T,
) -> Result<(), RetrieveError> {
    let Some(version) = store.content_version()? else {
        return Ok(());
    };
    write(path, version, value).map_err(|source| {
        RetrieveError::Store(StoreError::Io {
            path: path.display().to_string(),
            source,
        })
    })
}

/// A kept file's failures.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("not a file of this kgfuse: {0}")]
    Format(&'static str),
}

/// The stamp and value of the file at `path`; `None` when there is none.
pub(crate) fn read<T: KeptFile>(path: &Path) -> Result<Option<(u64, T)>, FileError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut input = Reader(&bytes);
    if input.take(T::MAGIC.len())? != T::MAGIC || input.u32()? != T::FORMAT {
        return Err(FileError::Format("another header or format"));
    }
    let version = input.u64()?;
    let value = T::decode(&mut input)?;
    if !input.0.is_empty() {
        return Err(FileError::Format("trailing bytes"));
    }
    Ok(Some((version, value)))
}

/// Writes `value`, stamped with `version`, to `path`: whole or not at all (a
/// file of this process's own, renamed over the old one: readers in other
/// processes may write the same file at the same time). Not
/// `kgfuse_core::write_atomically`, whose one `.tmp` name two such writers
/// would share, and whose sync is not needed for a value the next reader
/// rebuilds when it is lost.
pub(crate) fn write<T: KeptFile>(path: &Path, version: u64, value: &T) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(T::MAGIC);
    bytes.extend_from_slice(&T::FORMAT.to_le_bytes());
    bytes.extend_from_slice(&version.to_le_bytes());
    value.encode(&mut bytes);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let own: PathBuf = path.with_extension(format!(
        "{}-{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&own, &bytes)?;
    std::fs::rename(&own, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&own);
    })?;
    Ok(())
}

/// Appends a count as four little-endian bytes.
pub(crate) fn put_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

/// Appends a text, its length first.
pub(crate) fn put_text(out: &mut Vec<u8>, text: &str) {
    put_count(out, text.len());
    out.extend_from_slice(text.as_bytes());
}

/// Appends numbers, their count first.
pub(crate) fn put_floats(out: &mut Vec<u8>, values: &[f32]) {
    put_count(out, values.len());
    for value in values {
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// Little-endian numbers, texts and bytes off the front of a slice.
pub(crate) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], FileError> {
        if self.0.len() < n {
            return Err(FileError::Format("cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// A four-byte number.
    pub(crate) fn u32(&mut self) -> Result<u32, FileError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().unwrap_or_default()))
    }

    /// An eight-byte number.
    pub(crate) fn u64(&mut self) -> Result<u64, FileError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap_or_default()))
    }

    /// A count written by [`put_count`].
    pub(crate) fn count(&mut self) -> Result<usize, FileError> {
        Ok(self.u32()? as usize)
    }

    /// A text written by [`put_text`].
    pub(crate) fn text(&mut self) -> Result<&'a str, FileError> {
        let length = self.count()?;
        std::str::from_utf8(self.take(length)?)
            .map_err(|_| FileError::Format("a text is not UTF-8"))
    }

    /// Numbers written by [`put_floats`].
    pub(crate) fn floats(&mut self) -> Result<Vec<f32>, FileError> {
        let count = self.count()?;
        Ok(self
            .take(count.saturating_mul(4))?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// The path of a kept file: `<store>/<dir>/<name>`.
pub(crate) fn path(store: &Store, dir: &str, name: &str) -> PathBuf {
    store.dir().join(dir).join(name)
}
