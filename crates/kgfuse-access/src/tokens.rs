//! The bearer tokens of a shared kgfuse server.
//!
//! A token file holds SHA-256 digests of tokens, never the tokens themselves, each
//! with an id, a [`Scope`] and the stores it may use. It lives outside kgfuse.toml
//! (`kgfuse serve --tokens FILE`) and is managed with `kgfuse token`:
//!
//! ```toml
//! # kgfuse access tokens: SHA-256 digests, never the tokens. Managed with `kgfuse token`.
//! [[token]]
//! id = "ci-reader"
//! sha256 = "<64 hex chars>"
//! scope = "read"            # read | write | admin (each includes the ones before it)
//! stores = ["docs", "code"] # store names this token may use; ["*"] = every store
//! created = "2026-12-02T22:10:03Z"
//! ```
//!
//! A server holds a [`TokenSource`]: it notices when the file changes (a revoked
//! token stops working at the next request, no restart) and fails closed (every
//! request refused) while the file is missing or invalid.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

/// The first line of every token file [`TokenFile::write`] writes.
const HEADER: &str =
    "# kgfuse access tokens: SHA-256 digests, never the tokens. Managed with `kgfuse token`.\n";

/// What every new token starts with, so a leaked one is recognisable (secret scanners).
const TOKEN_PREFIX: &str = "kgf_";

/// Random bytes in a new token (256 bits).
const TOKEN_BYTES: usize = 32;

/// Longest token text [`TokenFile::verify`] hashes; longer ones are refused outright.
const MAX_PRESENTED: usize = 256;

/// Longest token id and store name.
const MAX_NAME: usize = 64;

/// What a token may do. Each scope includes the ones before it: `Read < Write < Admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Queries, retrieval and answers.
    Read,
    /// Also SPARQL Update and Graph Store writes.
    Write,
    /// Also administration of the server.
    Admin,
}

impl Scope {
    /// The scope's word in the token file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = TokenError;

    /// `read`, `write` or `admin` (any case, surrounding whitespace ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let word = s.trim();
        [Self::Read, Self::Write, Self::Admin]
            .into_iter()
            .find(|scope| scope.as_str().eq_ignore_ascii_case(word))
            .ok_or_else(|| {
                TokenError::Invalid(format!(
                    "unknown scope {word:?}: expected read, write or admin"
                ))
            })
    }
}

/// One token of a token file: its digest and what it may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The token's name, for people and logs: `[A-Za-z0-9._-]{1,64}`, unique in its file.
    pub id: String,
    /// SHA-256 of the token text, 64 lowercase hex digits.
    pub sha256: String,
    /// What the token may do.
    pub scope: Scope,
    /// The store names the token may use; `"*"` means every store.
    pub stores: Vec<String>,
    /// When the token was made, RFC 3339 in UTC (`2026-12-02T22:10:03Z`).
    pub created: String,
}

impl TokenEntry {
    /// Whether this token may do what `needed` names on `store`.
    pub fn allows(&self, store: &str, needed: Scope) -> bool {
        self.scope >= needed && self.stores.iter().any(|s| s == "*" || s == store)
    }
}

/// The file's shape, as serde reads and writes it.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default, rename = "token", skip_serializing_if = "Vec::is_empty")]
    tokens: Vec<TokenEntry>,
}

/// A token file's contents: validated entries and their digests as bytes.
/// [`TokenFile::default`] is the empty file, which accepts no token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenFile {
    entries: Vec<TokenEntry>,
    /// `entries[i].sha256`, decoded.
    digests: Vec<[u8; 32]>,
}

impl TokenFile {
    /// Reads a token file's text and checks every entry: ids unique and made of
    /// `[A-Za-z0-9._-]{1,64}`, digests of 64 lowercase hex digits (and distinct),
    /// store lists non-empty with `"*"` or names of `[A-Za-z0-9_-]{1,64}`; unknown
    /// fields are refused.
    pub fn parse(text: &str) -> Result<Self, TokenError> {
        let raw: Raw = toml::from_str(text).map_err(|e| TokenError::Parse {
            path: None,
            message: toml_message(text, &e),
        })?;
        let mut file = Self::default();
        for (n, entry) in raw.tokens.into_iter().enumerate() {
            let problem = |message: String| TokenError::Parse {
                path: None,
                message: format!("token {} (id {:?}): {message}", n + 1, entry.id),
            };
            check_id(&entry.id).map_err(problem)?;
            check_stores(&entry.stores).map_err(problem)?;
            let digest = decode_digest(&entry.sha256).map_err(problem)?;
            if let Some(first) = file.entries.iter().position(|e| e.id == entry.id) {
                return Err(problem(format!(
                    "the id is already used by token {}",
                    first + 1
                )));
            }
            if let Some(first) = file.digests.iter().position(|d| *d == digest) {
                return Err(problem(format!(
                    "the same digest as token {} (id {:?})",
                    first + 1,
                    file.entries[first].id
                )));
            }
            file.entries.push(entry);
            file.digests.push(digest);
        }
        Ok(file)
    }

    /// Reads and checks the token file at `path`; a missing file is
    /// [`TokenError::Missing`].
    pub fn read(path: &Path) -> Result<Self, TokenError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TokenError::Missing {
                    path: path.to_owned(),
                });
            }
            Err(source) => {
                return Err(TokenError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Self::parse(&text).map_err(|e| match e {
            TokenError::Parse {
                path: None,
                message,
            } => TokenError::Parse {
                path: Some(path.to_owned()),
                message,
            },
            other => other,
        })
    }

    /// [`TokenFile::read`], with a missing file read as an empty one (for adding
    /// the first token).
    pub fn read_or_empty(path: &Path) -> Result<Self, TokenError> {
        match Self::read(path) {
            Err(TokenError::Missing { .. }) => Ok(Self::default()),
            other => other,
        }
    }

    /// Writes the file at `path` atomically: a temporary file in the same
    /// directory (mode 0600 on Unix), flushed to disk, then renamed over `path`.
    /// A server watching the file sees the old contents or the new, never half.
    /// The directory must exist.
    pub fn write(&self, path: &Path) -> Result<(), TokenError> {
        let io = |source| TokenError::Io {
            path: path.to_owned(),
            source,
        };
        let body = toml::to_string(&Raw {
            tokens: self.entries.clone(),
        })
        .map_err(|e| TokenError::Invalid(format!("cannot write the token file: {e}")))?;
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .ok_or_else(|| TokenError::Invalid(format!("{} names no file", path.display())))?;
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| TokenError::Random(e.to_string()))?;
        let temporary = dir.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            u64::from_le_bytes(nonce)
        ));
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&temporary)?;
            file.write_all(HEADER.as_bytes())?;
            if !body.is_empty() {
                file.write_all(b"\n")?;
                file.write_all(body.as_bytes())?;
            }
            file.sync_all()?;
            drop(file);
            std::fs::rename(&temporary, path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(io(e));
        }
        // The rename itself reaches the disk when the directory is synced (Unix).
        #[cfg(unix)]
        if let Ok(directory) = std::fs::File::open(dir) {
            let _ = directory.sync_all();
        }
        Ok(())
    }

    /// Adds a token named `id` with `scope` on `stores` (`"*"` for every store),
    /// and returns its text: `kgf_` and 32 random bytes from the operating system,
    /// base64url. Only its digest is kept, so the text is shown once.
    pub fn add(
        &mut self,
        id: &str,
        scope: Scope,
        stores: Vec<String>,
    ) -> Result<String, TokenError> {
        check_id(id).map_err(TokenError::Invalid)?;
        if self.entries.iter().any(|e| e.id == id) {
            return Err(TokenError::DuplicateId(id.to_owned()));
        }
        let mut stores = stores;
        let mut seen = std::collections::HashSet::new();
        stores.retain(|s| seen.insert(s.clone()));
        check_stores(&stores).map_err(TokenError::Invalid)?;
        if stores.iter().any(|s| s == "*") {
            stores = vec!["*".to_owned()];
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let token = format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        );
        let digest = sha256(token.as_bytes());
        if self.digests.contains(&digest) {
            // 2^-256: the random source is broken.
            return Err(TokenError::Random(
                "the new token equals an existing one".to_owned(),
            ));
        }
        self.entries.push(TokenEntry {
            id: id.to_owned(),
            sha256: hex::encode(digest),
            scope,
            stores,
            created: rfc3339_utc(SystemTime::now()),
        });
        self.digests.push(digest);
        Ok(token)
    }

    /// Removes the token named `id` and returns its entry.
    pub fn revoke(&mut self, id: &str) -> Result<TokenEntry, TokenError> {
        let index = self
            .entries
            .iter()
            .position(|e| e.id == id)
            .ok_or_else(|| TokenError::UnknownId(id.to_owned()))?;
        self.digests.remove(index);
        Ok(self.entries.remove(index))
    }

    /// The tokens, in file order.
    pub fn entries(&self) -> &[TokenEntry] {
        &self.entries
    }

    /// Whether the file holds no token (then every request is refused).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry whose digest is the SHA-256 of `presented`, if any. Every
    /// entry's digest is compared, in constant time, whichever matches; an empty
    /// text or one over 256 bytes matches nothing.
    pub fn verify(&self, presented: &str) -> Option<&TokenEntry> {
        if presented.is_empty() || presented.len() > MAX_PRESENTED {
            return None;
        }
        let digest = sha256(presented.as_bytes());
        let mut found = Choice::from(0);
        let mut index = 0u64;
        for (i, candidate) in self.digests.iter().enumerate() {
            let matches = candidate[..].ct_eq(&digest[..]);
            let first = matches & !found;
            index = u64::conditional_select(&index, &(i as u64), first);
            found |= matches;
        }
        if bool::from(found) {
            usize::try_from(index)
                .ok()
                .and_then(|i| self.entries.get(i))
        } else {
            None
        }
    }
}

/// The token of an `Authorization` header's value `Bearer <token>` (the scheme
/// in any case, whitespace around either part ignored); `None` for any other
/// scheme, a missing token, or a token with whitespace inside.
pub fn bearer(authorization_header_value: &str) -> Option<&str> {
    let value = authorization_header_value.trim();
    let (scheme, rest) = value.split_once(|c: char| c.is_ascii_whitespace())?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(|c: char| c.is_whitespace()) {
        return None;
    }
    Some(token)
}

/// What identifies one version of the file on disk: a rewrite changes at least
/// one of these, even within the same second and at the same length (a rename
/// into place brings a new inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Self> {
        let metadata = std::fs::metadata(path)?;
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Ok(Self {
            modified: metadata.modified().ok(),
            len: metadata.len(),
            #[cfg(unix)]
            inode: (metadata.dev(), metadata.ino()),
            #[cfg(unix)]
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        })
    }
}

/// What [`TokenSource`] last read: the file's stamp then (`None`: it could not
/// be read) and the tokens in force.
#[derive(Debug)]
struct Cached {
    stamp: Option<Stamp>,
    file: Arc<TokenFile>,
}

/// The token file as a server sees it: re-read when it changes, so a revoked
/// token stops working without a restart. While the file is missing or invalid
/// the server fails closed: no token is accepted (the problem is logged once).
#[derive(Debug)]
pub struct TokenSource {
    path: PathBuf,
    cached: Mutex<Cached>,
}

impl TokenSource {
    /// Reads the token file at `path`; an error when it is missing, unreadable
    /// or invalid, so a server does not start on a broken file.
    pub fn open(path: &Path) -> Result<Self, TokenError> {
        let stamp = Stamp::of(path).ok();
        let file = TokenFile::read(path)?;
        Ok(Self {
            path: path.to_owned(),
            cached: Mutex::new(Cached {
                stamp,
                file: Arc::new(file),
            }),
        })
    }

    /// The tokens in force. Costs one `stat` of the file; when its modification
    /// time, length or inode changed since the last read, the file is read again.
    /// A file that has gone or no longer parses gives the empty token file (every
    /// request refused) until a valid one appears.
    pub fn current(&self) -> Arc<TokenFile> {
        let stamp = Stamp::of(&self.path).ok();
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if stamp != cached.stamp || stamp.is_none() && !cached.file.is_empty() {
            *cached = self.load(stamp);
        }
        Arc::clone(&cached.file)
    }

    /// Reads the file again now, whether or not it changed (a server calls it on
    /// SIGHUP).
    pub fn reload(&self) {
        let stamp = Stamp::of(&self.path).ok();
        let fresh = self.load(stamp);
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = fresh;
    }

    /// The token file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file whose stamp was `stamp` just before; fails closed. The
    /// stamp is taken before the read, so a change during the read is seen at
    /// the next [`TokenSource::current`].
    fn load(&self, stamp: Option<Stamp>) -> Cached {
        match TokenFile::read(&self.path) {
            Ok(file) => {
                tracing::info!(
                    "token file {} read: {} token(s)",
                    self.path.display(),
                    file.entries().len()
                );
                Cached {
                    stamp,
                    file: Arc::new(file),
                }
            }
            Err(e) => {
                tracing::error!("{e}; refusing every token until the file is fixed");
                Cached {
                    stamp,
                    file: Arc::new(TokenFile::default()),
                }
            }
        }
    }
}

/// What can go wrong with a token file or a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token file does not exist.
    #[error("token file {} does not exist", path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The token file could not be read or written.
    #[error("token file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The token file is not valid TOML of the expected shape, or an entry breaks
    /// a rule.
    #[error("{}{message}", file_prefix(path.as_deref()))]
    Parse {
        /// The file, when read from one.
        path: Option<PathBuf>,
        /// What is wrong, and where.
        message: String,
    },
    /// A token id, store name or scope given to an operation is not valid.
    #[error("{0}")]
    Invalid(String),
    /// A token with this id already exists.
    #[error("a token with id {0:?} already exists (revoke it first, or pick another id)")]
    DuplicateId(String),
    /// No token has this id.
    #[error("no token has id {0:?}")]
    UnknownId(String),
    /// The operating system's random source failed.
    #[error("cannot draw random bytes from the operating system: {0}")]
    Random(String),
}

fn file_prefix(path: Option<&Path>) -> String {
    path.map(|p| format!("token file {}: ", p.display()))
        .unwrap_or_default()
}

/// A TOML error on one line (for logs): `line L, column C: what`.
fn toml_message(text: &str, error: &toml::de::Error) -> String {
    let what = error.message().trim_end().replace('\n', "; ");
    let Some(span) = error.span() else {
        return what;
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("line {line}, column {column}: {what}")
}

/// An id: `[A-Za-z0-9._-]{1,64}`.
fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_NAME {
        return Err(format!(
            "token id {id:?}: expected 1 to {MAX_NAME} characters"
        ));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "token id {id:?}: {c:?} is not allowed (letters, digits, '.', '_' and '-' are)"
        ));
    }
    Ok(())
}

/// A store list: non-empty, each `"*"` or `[A-Za-z0-9_-]{1,64}`.
fn check_stores(stores: &[String]) -> Result<(), String> {
    if stores.is_empty() {
        return Err("the store list is empty (use [\"*\"] for every store)".to_owned());
    }
    for store in stores {
        if store == "*" {
            continue;
        }
        if !crate::route::is_store_name(store) {
            return Err(format!(
                "store name {store:?}: expected \"*\" or 1 to {MAX_NAME} letters, digits, '_' and '-'"
            ));
        }
    }
    Ok(())
}

/// 64 lowercase hex digits as 32 bytes.
fn decode_digest(text: &str) -> Result<[u8; 32], String> {
    let problem = || format!("sha256 {text:?}: expected 64 lowercase hex digits");
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(problem());
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).map_err(|_| problem())?;
    Ok(out)
}

/// The SHA-256 digest of a token's text: what the file keeps of it.
pub fn digest(token: &str) -> [u8; 32] {
    sha256(token.as_bytes())
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC).
fn rfc3339_utc(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn digest_of(token: &str) -> String {
        hex::encode(sha256(token.as_bytes()))
    }

    fn entry_text(id: &str, token: &str, scope: &str, stores: &str) -> String {
        format!(
            "[[token]]\nid = \"{id}\"\nsha256 = \"{}\"\nscope = \"{scope}\"\nstores = {stores}\ncreated = \"2026-12-02T22:10:03Z\"\n",
            digest_of(token)
        )
    }

    fn parse_error(text: &str) -> String {
        match TokenFile::parse(text) {
            Ok(_) => panic!("parsed: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_valid_file_parses_with_its_entries() {
        let text = format!(
            "# comment\n{}\n{}",
            entry_text("ci-reader", "a", "read", "[\"docs\", \"code\"]"),
            entry_text("ops.admin_1", "b", "admin", "[\"*\"]")
        );
        let file = TokenFile::parse(&text).unwrap();
        assert_eq!(file.entries().len(), 2);
        assert_eq!(file.entries()[0].id, "ci-reader");
        assert_eq!(file.entries()[0].scope, Scope::Read);
        assert_eq!(file.entries()[0].stores, ["docs", "code"]);
        assert_eq!(file.entries()[1].scope, Scope::Admin);
        assert!(TokenFile::parse("").unwrap().is_empty());
        assert!(TokenFile::parse(HEADER).unwrap().is_empty());
    }

    #[test]
    fn invalid_files_are_refused_with_the_reason() {
        let twice = format!(
            "{}{}",
            entry_text("same", "a", "read", "[\"*\"]"),
            entry_text("same", "b", "read", "[\"*\"]")
        );
        assert!(parse_error(&twice).contains("already used by token 1"));

        let same_digest = format!(
            "{}{}",
            entry_text("one", "a", "read", "[\"*\"]"),
            entry_text("two", "a", "read", "[\"*\"]")
        );
        assert!(parse_error(&same_digest).contains("same digest"));

        let digest = digest_of("a");
        for bad in [
            digest.to_uppercase(),
            digest[..63].to_owned(),
            format!("{}g", &digest[..63]),
            format!("{digest}0"),
        ] {
            let text = entry_text("x", "a", "read", "[\"*\"]").replace(&digest, &bad);
            assert!(parse_error(&text).contains("64 lowercase hex"), "{bad}");
        }

        let unknown_field = entry_text("x", "a", "read", "[\"*\"]") + "token = \"kgf_secret\"\n";
        assert!(parse_error(&unknown_field).contains("unknown field"));
        let unknown_table = "[[tokens]]\nid = \"x\"\n";
        assert!(parse_error(unknown_table).contains("unknown field"));

        let bad_scope = entry_text("x", "a", "owner", "[\"*\"]");
        let message = parse_error(&bad_scope);
        assert!(
            message.contains("owner") && message.contains("read"),
            "{message}"
        );

        for bad_id in ["", "has space", "ü", &"x".repeat(65)] {
            let text = entry_text(bad_id, "a", "read", "[\"*\"]");
            assert!(parse_error(&text).contains("token id"), "{bad_id:?}");
        }
        assert!(TokenFile::parse(&entry_text(&"x".repeat(64), "a", "read", "[\"*\"]")).is_ok());

        for bad_stores in ["[]", "[\"a.b\"]", "[\"\"]", "[\"docs\", \"x y\"]"] {
            let text = entry_text("x", "a", "read", bad_stores);
            assert!(parse_error(&text).contains("store"), "{bad_stores}");
        }
        let missing_field = "[[token]]\nid = \"x\"\nscope = \"read\"\n";
        assert!(parse_error(missing_field).contains("missing field"));
    }

    #[test]
    fn scope_words_order_and_errors() {
        assert!(Scope::Read < Scope::Write && Scope::Write < Scope::Admin);
        for scope in [Scope::Read, Scope::Write, Scope::Admin] {
            assert_eq!(scope.to_string().parse::<Scope>().unwrap(), scope);
        }
        assert_eq!(" Write ".parse::<Scope>().unwrap(), Scope::Write);
        let error = "owner".parse::<Scope>().unwrap_err().to_string();
        assert!(
            error.contains("read") && error.contains("write") && error.contains("admin"),
            "{error}"
        );
    }

    #[test]
    fn allows_checks_scope_and_store() {
        let entry = |scope, stores: &[&str]| TokenEntry {
            id: "t".into(),
            sha256: digest_of("t"),
            scope,
            stores: stores.iter().map(|s| (*s).to_owned()).collect(),
            created: String::new(),
        };
        let reader = entry(Scope::Read, &["docs", "code"]);
        assert!(reader.allows("docs", Scope::Read));
        assert!(reader.allows("code", Scope::Read));
        assert!(!reader.allows("docs", Scope::Write));
        assert!(!reader.allows("other", Scope::Read));
        let writer = entry(Scope::Write, &["docs"]);
        assert!(writer.allows("docs", Scope::Read));
        assert!(writer.allows("docs", Scope::Write));
        assert!(!writer.allows("docs", Scope::Admin));
        let admin = entry(Scope::Admin, &["*"]);
        assert!(admin.allows("anything", Scope::Admin));
        assert!(admin.allows("docs", Scope::Read));
        assert!(!entry(Scope::Admin, &["*x"]).allows("docs", Scope::Read));
    }

    #[test]
    fn an_added_token_verifies_and_others_do_not() {
        let mut file = TokenFile::default();
        let token = file.add("ci", Scope::Write, vec!["docs".into()]).unwrap();
        assert!(token.starts_with("kgf_"));
        assert_eq!(token.len(), 4 + 43);
        assert!(
            token[4..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        let other = file.add("other", Scope::Read, vec!["*".into()]).unwrap();
        assert_ne!(token, other);

        let entry = file.verify(&token).unwrap();
        assert_eq!(entry.id, "ci");
        assert_eq!(entry.scope, Scope::Write);
        assert_eq!(entry.sha256, digest_of(&token));
        assert_eq!(entry.created.len(), "2026-12-02T22:10:03Z".len());
        assert_eq!(file.verify(&other).unwrap().id, "other");

        let mut altered = token.clone().into_bytes();
        altered[10] = if altered[10] == b'A' { b'B' } else { b'A' };
        assert!(file.verify(&String::from_utf8(altered).unwrap()).is_none());
        assert!(file.verify(&token[..token.len() - 1]).is_none());
        assert!(file.verify("").is_none());
        assert!(file.verify(&"a".repeat(257)).is_none());
        assert!(file.verify(&format!("{token} ")).is_none());
        assert!(file.verify(&entry.sha256.clone()).is_none());

        // A file's last entry matches too (no early exit misses it).
        let third = file.add("third", Scope::Admin, vec!["*".into()]).unwrap();
        assert_eq!(file.verify(&third).unwrap().id, "third");
    }

    #[test]
    fn add_refuses_bad_input() {
        let mut file = TokenFile::default();
        file.add("ci", Scope::Read, vec!["*".into()]).unwrap();
        assert!(matches!(
            file.add("ci", Scope::Read, vec!["*".into()]),
            Err(TokenError::DuplicateId(id)) if id == "ci"
        ));
        assert!(matches!(
            file.add("new", Scope::Read, vec![]),
            Err(TokenError::Invalid(_))
        ));
        assert!(matches!(
            file.add("bad id", Scope::Read, vec!["*".into()]),
            Err(TokenError::Invalid(_))
        ));
        assert!(matches!(
            file.add("new", Scope::Read, vec!["no/slash".into()]),
            Err(TokenError::Invalid(_))
        ));
        assert_eq!(file.entries().len(), 1);
        file.add("dup", Scope::Read, vec!["a".into(), "a".into(), "b".into()])
            .unwrap();
        assert_eq!(file.entries()[1].stores, ["a", "b"]);
        file.add("star", Scope::Read, vec!["a".into(), "*".into()])
            .unwrap();
        assert_eq!(file.entries()[2].stores, ["*"]);
    }

    #[test]
    fn a_revoked_token_no_longer_verifies() {
        let mut file = TokenFile::default();
        let first = file.add("first", Scope::Read, vec!["*".into()]).unwrap();
        let second = file.add("second", Scope::Read, vec!["*".into()]).unwrap();
        let revoked = file.revoke("first").unwrap();
        assert_eq!(revoked.id, "first");
        assert!(file.verify(&first).is_none());
        assert_eq!(file.verify(&second).unwrap().id, "second");
        assert!(matches!(
            file.revoke("first"),
            Err(TokenError::UnknownId(id)) if id == "first"
        ));
    }

    #[test]
    fn write_then_read_round_trips_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        assert!(matches!(
            TokenFile::read(&path),
            Err(TokenError::Missing { path: p }) if p == path
        ));
        let mut file = TokenFile::read_or_empty(&path).unwrap();
        assert!(file.is_empty());
        let token = file
            .add("ci-reader", Scope::Read, vec!["docs".into(), "code".into()])
            .unwrap();
        file.add("admin", Scope::Admin, vec!["*".into()]).unwrap();
        file.write(&path).unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(HEADER), "{text}");
        assert!(!text.contains(&token), "the token itself is never written");
        let back = TokenFile::read(&path).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.verify(&token).unwrap().id, "ci-reader");

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Nothing left behind but the file itself.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["tokens.toml"]);

        // An empty file writes and reads back empty.
        TokenFile::default().write(&path).unwrap();
        assert!(TokenFile::read(&path).unwrap().is_empty());

        // A read error names the file and the place, on one line.
        std::fs::write(&path, "[[token]]\nid = 1\n").unwrap();
        let message = TokenFile::read(&path).unwrap_err().to_string();
        assert!(message.contains("tokens.toml"), "{message}");
        assert!(message.contains("line 2, column 6"), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn a_source_sees_a_revocation_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let mut file = TokenFile::default();
        let first = file.add("first", Scope::Read, vec!["*".into()]).unwrap();
        let second = file.add("second", Scope::Read, vec!["*".into()]).unwrap();
        file.write(&path).unwrap();
        let source = TokenSource::open(&path).unwrap();
        assert_eq!(source.path(), path);
        assert!(source.current().verify(&first).is_some());

        // Revoke, and rewrite in the same instant: same second, and a file of the
        // same length (a token of the same id length is added back).
        file.revoke("first").unwrap();
        let third = file.add("third", Scope::Read, vec!["*".into()]).unwrap();
        file.write(&path).unwrap();
        let now = source.current();
        assert!(now.verify(&first).is_none(), "revoked token still accepted");
        assert!(now.verify(&second).is_some());
        assert!(now.verify(&third).is_some());

        // An unchanged file is not re-read: the same Arc comes back.
        assert!(Arc::ptr_eq(&now, &source.current()));
        // reload() re-reads regardless.
        source.reload();
        assert!(source.current().verify(&third).is_some());
    }

    #[test]
    fn a_source_notices_an_in_place_rewrite_of_the_same_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let one = entry_text("aaaa", "token-one", "read", "[\"*\"]");
        let two = entry_text("bbbb", "token-two", "read", "[\"*\"]");
        assert_eq!(one.len(), two.len());
        std::fs::write(&path, &one).unwrap();
        let source = TokenSource::open(&path).unwrap();
        assert!(source.current().verify("token-one").is_some());
        // Same inode, same length, most likely the same second; the kernel stamps
        // files with its clock tick (up to 10 ms), so let one tick pass.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, &two).unwrap();
        let now = source.current();
        assert!(now.verify("token-one").is_none());
        assert!(now.verify("token-two").is_some());
    }

    #[test]
    fn a_source_fails_closed_and_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let mut file = TokenFile::default();
        let token = file.add("ci", Scope::Write, vec!["*".into()]).unwrap();
        file.write(&path).unwrap();
        let source = TokenSource::open(&path).unwrap();
        assert!(source.current().verify(&token).is_some());

        std::fs::write(&path, "[[token]\nthis is not toml").unwrap();
        assert!(source.current().verify(&token).is_none(), "corrupt file");
        assert!(source.current().is_empty());

        file.write(&path).unwrap();
        assert!(source.current().verify(&token).is_some(), "fixed file");

        std::fs::remove_file(&path).unwrap();
        assert!(source.current().verify(&token).is_none(), "deleted file");
        source.reload();
        assert!(source.current().is_empty());

        file.write(&path).unwrap();
        assert!(source.current().verify(&token).is_some(), "restored file");
    }

    #[test]
    fn open_refuses_a_missing_or_invalid_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        assert!(matches!(
            TokenSource::open(&path),
            Err(TokenError::Missing { .. })
        ));
        std::fs::write(&path, "nonsense = 1\n").unwrap();
        assert!(matches!(
            TokenSource::open(&path),
            Err(TokenError::Parse { path: Some(_), .. })
        ));
    }

    #[test]
    fn bearer_takes_the_token_of_a_bearer_header() {
        assert_eq!(bearer("Bearer kgf_abc"), Some("kgf_abc"));
        assert_eq!(bearer("bearer kgf_abc"), Some("kgf_abc"));
        assert_eq!(bearer("BEARER   kgf_abc  "), Some("kgf_abc"));
        assert_eq!(bearer("  Bearer\tkgf_abc"), Some("kgf_abc"));
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer a b"), None);
        assert_eq!(bearer("Basic dXNlcjpwdw=="), None);
        assert_eq!(bearer("Bearerkgf_abc"), None);
        assert_eq!(bearer("kgf_abc"), None);
        assert_eq!(bearer(""), None);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        use std::time::Duration;
        assert_eq!(rfc3339_utc(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_249_403);
        assert_eq!(rfc3339_utc(time), "2026-12-02T22:10:03Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }
}
