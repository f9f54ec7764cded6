//! `kgfuse.toml`: how a data directory was initialised.
//!
//! The file is written once by `kgfuse init` and read on every open. It records the
//! embedder and its dimension (so a store is never queried with vectors of another
//! model), the predicates whose literals are embedded, and prefixes learned from
//! loaded files.

use crate::vocab::{KGFUSE, w3c};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the on-disk layout; bumped when a data directory needs migration.
pub const SCHEMA_VERSION: u32 = 1;

/// Name of the configuration file inside a data directory.
pub const CONFIG_FILE: &str = "kgfuse.toml";

/// Errors reading or writing `kgfuse.toml`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// File concerned.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or misses required keys.
    #[error("{path}: {message}")]
    Parse {
        /// File concerned.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The file was written by a newer kgfuse.
    #[error(
        "{path}: schema version {found} is newer than this kgfuse supports ({SCHEMA_VERSION}); upgrade kgfuse"
    )]
    UnsupportedVersion {
        /// File concerned.
        path: String,
        /// Version found in the file.
        found: u32,
    },
}

/// Contents of `kgfuse.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreConfig {
    /// On-disk layout version, see [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Embedder recorded at `init`.
    pub embedder: EmbedderConfig,
    /// Predicates whose literal objects are embedded, in the order their text is
    /// concatenated into a node's searchable text.
    pub text_predicates: Vec<String>,
    /// SPARQL defaults.
    #[serde(default)]
    pub sparql: SparqlConfig,
    /// Prefixes declared by loaded files, offered to queries and the console.
    #[serde(default)]
    pub prefixes: BTreeMap<String, String>,
    /// When the approximate nearest-neighbour index over the vectors is built and
    /// refreshed.
    #[serde(default)]
    pub vector_index: VectorIndexConfig,
    /// The kgfuse vocabulary the store carries.
    #[serde(default)]
    pub ontology: OntologyConfig,
    /// What the store infers from what it is given.
    #[serde(default)]
    pub reasoning: ReasoningConfig,
    /// A graph kept on a SPARQL server instead of in the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<RemoteGraphConfig>,
    /// Vectors kept on object storage instead of in the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<RemoteVectorsConfig>,
    /// What a process that opens the store may keep in memory beside its files.
    #[serde(default)]
    pub memory: MemoryConfig,
}

/// `[memory]` in `kgfuse.toml`: the byte budgets, in mebibytes, of what a process
/// that opens the store keeps in memory beside its files. What a question needs
/// whole (the lexicon of names, one write's batch) is not budgeted here:
/// docs/memory.md, "Memory", says what grows with the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryConfig {
    /// LanceDB's cache of vector and scalar index pages (LanceDB's own default
    /// is 6 GiB; the indexes of a store of 100,000 functions take 15 MiB on disk).
    #[serde(default = "default_vector_index_cache_mib")]
    pub vector_index_cache_mib: usize,
    /// LanceDB's cache of table metadata: manifests, fragment statistics (its
    /// own default is 1 GiB).
    #[serde(default = "default_vector_metadata_cache_mib")]
    pub vector_metadata_cache_mib: usize,
    /// Vectors copied into memory for exact search without a LanceDB query: the
    /// whole table while its vectors fit this budget and it has no index; and,
    /// together within another budget of this size, the node sets asked about
    /// again and again (package rows).
    #[serde(default = "default_resident_vectors_mib")]
    pub resident_vectors_mib: usize,
    /// The graph's edges in memory for walks (about 40 bytes an edge); a larger
    /// graph is walked from Oxigraph's indexes on disk.
    #[serde(default = "default_edge_index_mib")]
    pub edge_index_mib: usize,
}

/// Bytes of one edge of the walks' edge index, with its share of the interned IRIs.
const EDGE_INDEX_BYTES_PER_EDGE: usize = 40;

const MIB: usize = 1024 * 1024;

fn default_vector_index_cache_mib() -> usize {
    512
}

fn default_vector_metadata_cache_mib() -> usize {
    128
}

fn default_resident_vectors_mib() -> usize {
    30
}

fn default_edge_index_mib() -> usize {
    80
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            vector_index_cache_mib: default_vector_index_cache_mib(),
            vector_metadata_cache_mib: default_vector_metadata_cache_mib(),
            resident_vectors_mib: default_resident_vectors_mib(),
            edge_index_mib: default_edge_index_mib(),
        }
    }
}

impl MemoryConfig {
    /// [`Self::vector_index_cache_mib`] in bytes.
    pub fn vector_index_cache_bytes(&self) -> usize {
        self.vector_index_cache_mib.saturating_mul(MIB)
    }

    /// [`Self::vector_metadata_cache_mib`] in bytes.
    pub fn vector_metadata_cache_bytes(&self) -> usize {
        self.vector_metadata_cache_mib.saturating_mul(MIB)
    }

    /// How many vectors of `dimension` values (4 bytes each)
    /// [`Self::resident_vectors_mib`] holds: 20,480 at 384 dimensions by default.
    pub fn resident_vector_rows(&self, dimension: usize) -> usize {
        self.resident_vectors_mib.saturating_mul(MIB) / dimension.max(1).saturating_mul(4)
    }

    /// How many edges [`Self::edge_index_mib`] holds: 2,097,152 by default.
    pub fn edge_index_edges(&self) -> usize {
        self.edge_index_mib.saturating_mul(MIB) / EDGE_INDEX_BYTES_PER_EDGE
    }
}

/// `[vectors]` in `kgfuse.toml`: the vector table on S3-compatible object
/// storage. Credentials come from the `AWS_*` environment variables only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteVectorsConfig {
    /// `s3://bucket/prefix`.
    pub uri: String,
    /// LanceDB storage options: `aws_endpoint`, `aws_region`, `allow_http`, …
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub storage: BTreeMap<String, String>,
}

/// `[graph]` in `kgfuse.toml`: where a graph kept on a SPARQL 1.1 server is.
/// It holds no secrets (see [`RemoteAuth`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteGraphConfig {
    /// The SPARQL 1.1 Protocol query endpoint.
    pub query: String,
    /// The update endpoint (default: the query endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    /// The Graph Store HTTP Protocol endpoint, for bulk writes (without one,
    /// `INSERT DATA` in batches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// How requests are signed.
    #[serde(default)]
    pub auth: RemoteAuth,
}

/// How kgfuse signs its requests to a SPARQL server. The secrets come from the
/// environment only (`KGFUSE_GRAPH_USER` and `KGFUSE_GRAPH_PASSWORD`, or
/// `KGFUSE_GRAPH_TOKEN`), never from `kgfuse.toml`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteAuth {
    /// No `Authorization` header.
    #[default]
    None,
    /// HTTP Basic with `KGFUSE_GRAPH_USER` and `KGFUSE_GRAPH_PASSWORD`.
    Basic,
    /// `Authorization: Bearer $KGFUSE_GRAPH_TOKEN`.
    Bearer,
}

/// Which entailment a store materialises.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Entailment {
    /// Nothing is inferred (stores made before entailment existed read as this).
    #[default]
    None,
    /// RDFS: types through subclasses, domains and ranges; super-properties; the
    /// closure of both hierarchies (new stores).
    Rdfs,
}

/// `[reasoning]` in `kgfuse.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningConfig {
    /// Which entailment the derived graph holds.
    #[serde(default)]
    pub entailment: Entailment,
}

/// Which version of kgfuse's own vocabulary a store carries, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OntologyConfig {
    /// The named graph holding it ([`crate::ontology::graph_iri`] of the kgfuse that
    /// last wrote it); absent in stores made before stores carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<String>,
}

/// When kgfuse builds and refreshes the IVF-RQ index over the vector column.
///
/// Below a few ten thousand rows an exact scan is fast (about 13 ms for 10,000 rows
/// in the release profile) and needs no upkeep; at 100,000 rows it takes about
/// 85 ms and the index answers in about 10 ms with the same top 10 (BENCHMARKS.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorIndexConfig {
    /// Build the index when a write leaves at least this many vector rows and there
    /// is none yet (0 = never automatically; `kgfuse index vectors` builds it on
    /// demand). Never below 256 rows, the fewest an index is trained on.
    #[serde(default = "default_auto_build_rows")]
    pub auto_build_rows: usize,
    /// Once an index exists, fold rows written since into it when they exceed this
    /// share of the indexed rows (until then they are scanned exactly beside it).
    #[serde(default = "default_refresh_share")]
    pub refresh_share: f64,
}

fn default_auto_build_rows() -> usize {
    50_000
}

fn default_refresh_share() -> f64 {
    0.1
}

impl Default for VectorIndexConfig {
    fn default() -> Self {
        Self {
            auto_build_rows: default_auto_build_rows(),
            refresh_share: default_refresh_share(),
        }
    }
}

/// Which embedder turns a store's texts into vectors (`kind` in `kgfuse.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// Feature hashing of words and identifier parts: no model.
    Hash,
    /// A token table distilled from MiniLM (model2vec).
    Static,
    /// all-MiniLM-L6-v2 on the CPU.
    Minilm,
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Openai,
}

impl EmbedderKind {
    /// The name `kgfuse.toml` and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hash => "hash",
            Self::Static => "static",
            Self::Minilm => "minilm",
            Self::Openai => "openai",
        }
    }
}

impl std::fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which implementation runs MiniLM (`backend` in `kgfuse.toml`). Both give the
/// same vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MiniLmBackend {
    /// kgfuse-encoder: packed batches, no padding (the default).
    #[default]
    Packed,
    /// candle's `BertModel`: padded batches.
    Candle,
}

/// Which embedder a store uses and how to reach it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedderConfig {
    /// The embedder.
    pub kind: EmbedderKind,
    /// Length of every vector in the store.
    pub dimension: usize,
    /// Model name (MiniLM model id or OpenAI-compatible model name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Directory holding config.json, tokenizer.json and model.safetensors (minilm;
    /// for static, the model the table is distilled from, which it sits beside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dir: Option<String>,
    /// Which implementation runs MiniLM (`None`: the default, `packed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<MiniLmBackend>,
    /// Base URL of an OpenAI-compatible API, e.g. `http://localhost:11434/v1` (openai).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Texts per embedding call.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
}

fn default_batch_size() -> usize {
    32
}

/// SPARQL evaluation defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SparqlConfig {
    /// Evaluate queries against the union of all graphs when they name no dataset.
    /// kgfuse keeps one named graph per source, so this is on by default.
    #[serde(default = "default_true")]
    pub union_default_graph: bool,
    /// Default query timeout in seconds (0 = none).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_true() -> bool {
    true
}

fn default_timeout() -> u64 {
    60
}

impl Default for SparqlConfig {
    fn default() -> Self {
        Self {
            union_default_graph: true,
            timeout_secs: default_timeout(),
        }
    }
}

/// Predicates embedded by default: labels first (they name the node), then
/// signatures and descriptions, then longer bodies.
///
/// Code bodies (`kgfuse:code`) are not embedded: a function is embedded by its
/// name, signature, docstring and knowledge, a case by its name and description.
/// Its code stays in the graph, where the context shows it. Measured on every
/// code set (EVALUATION.md, "Embedding code bodies"): the default strategy's
/// recall holds or rises without them, and a MiniLM ingest embeds a fraction of
/// the tokens. A store can add `kgfuse:code` to `text_predicates` in kgfuse.toml.
pub fn default_text_predicates() -> Vec<String> {
    [
        w3c::RDFS_LABEL,
        w3c::SKOS_PREF_LABEL,
        w3c::SKOS_ALT_LABEL,
        w3c::DCTERMS_TITLE,
        "https://w3id.org/kgfuse/ontology#signature",
        w3c::RDFS_COMMENT,
        w3c::SKOS_DEFINITION,
        w3c::DCTERMS_DESCRIPTION,
        "https://w3id.org/kgfuse/ontology#knowledge",
        "https://w3id.org/kgfuse/ontology#text",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

impl StoreConfig {
    /// A fresh configuration for the given embedder kind and dimension.
    pub fn new(embedder_kind: EmbedderKind, dimension: usize) -> Self {
        debug_assert!(default_text_predicates()[4].starts_with(KGFUSE));
        Self {
            schema_version: SCHEMA_VERSION,
            embedder: EmbedderConfig {
                kind: embedder_kind,
                dimension,
                model: None,
                model_dir: None,
                backend: None,
                base_url: None,
                batch_size: default_batch_size(),
            },
            text_predicates: default_text_predicates(),
            sparql: SparqlConfig::default(),
            prefixes: BTreeMap::new(),
            vector_index: VectorIndexConfig::default(),
            ontology: OntologyConfig::default(),
            reasoning: ReasoningConfig {
                entailment: Entailment::Rdfs,
            },
            graph: None,
            vectors: None,
            memory: MemoryConfig::default(),
        }
    }

    /// Reads `kgfuse.toml` from a data directory.
    pub fn read(data_dir: &Path) -> Result<Self, ConfigError> {
        let path = data_dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let config: Self = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        if config.schema_version > SCHEMA_VERSION {
            return Err(ConfigError::UnsupportedVersion {
                path: path.display().to_string(),
                found: config.schema_version,
            });
        }
        if config.embedder.dimension == 0 {
            return Err(ConfigError::Parse {
                path: path.display().to_string(),
                message: "embedder.dimension must be positive".into(),
            });
        }
        Ok(config)
    }

    /// Writes `kgfuse.toml` atomically (temporary file, fsync, rename).
    pub fn write(&self, data_dir: &Path) -> Result<(), ConfigError> {
        let path = data_dir.join(CONFIG_FILE);
        let io_err = |source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        };
        let text = toml::to_string_pretty(self).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let header = "# Written by `kgfuse init`. The embedder and dimension must not change after\n\
                      # vectors exist; text_predicates and prefixes may be edited.\n";
        crate::write_atomically(&path, format!("{header}{text}").as_bytes()).map_err(io_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = StoreConfig::new(EmbedderKind::Minilm, 384);
        config.embedder.model_dir = Some("/models/minilm".into());
        config
            .prefixes
            .insert("ex".into(), "http://example.org/".into());
        config.write(dir.path()).expect("write");
        assert_eq!(StoreConfig::read(dir.path()).expect("read"), config);
    }

    #[test]
    fn rejects_newer_schema_and_garbage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = StoreConfig::new(EmbedderKind::Hash, 64);
        config.schema_version = SCHEMA_VERSION + 1;
        config.write(dir.path()).expect("write");
        assert!(matches!(
            StoreConfig::read(dir.path()),
            Err(ConfigError::UnsupportedVersion { .. })
        ));
        std::fs::write(dir.path().join(CONFIG_FILE), "embedder = 3").expect("write");
        let err = StoreConfig::read(dir.path()).expect_err("garbage must not parse");
        assert!(err.to_string().contains(CONFIG_FILE), "{err}");
    }

    #[test]
    fn memory_budgets_default_when_absent_and_convert_to_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        StoreConfig::new(EmbedderKind::Hash, 384)
            .write(dir.path())
            .expect("write");
        let text = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).expect("read");
        let without: String = text
            .split("[memory]")
            .next()
            .expect("text before [memory]")
            .to_owned();
        std::fs::write(dir.path().join(CONFIG_FILE), without).expect("write");
        let config = StoreConfig::read(dir.path()).expect("a store made before [memory]");
        assert_eq!(config.memory, MemoryConfig::default());
        assert_eq!(config.memory.resident_vector_rows(384), 20_480);
        let small = MemoryConfig {
            resident_vectors_mib: 1,
            edge_index_mib: 4,
            ..MemoryConfig::default()
        };
        assert_eq!(small.resident_vector_rows(256), 1024);
        assert_eq!(small.edge_index_edges(), 104_857);
        assert_eq!(small.resident_vector_rows(0), MIB / 4);
    }
}
