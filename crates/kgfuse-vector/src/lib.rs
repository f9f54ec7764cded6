//! The vector side of kgfuse: one [LanceDB](https://lancedb.com) table whose rows are
//! keyed by the IRI of a graph node, and the embedders that fill it.
//!
//! This is the only kgfuse crate that talks to LanceDB. Embedders share one trait,
//! [`Embedder`]:
//!
//! - [`HashEmbedder`]: deterministic feature hashing of words, word pairs and
//!   character n-grams; no model, for air-gapped use and fast tests;
//! - [`StaticEmbedder`]: a token table distilled from MiniLM, summed per text;
//! - [`MiniLmEmbedder`]: all-MiniLM-L6-v2 from a local directory, run by
//!   `kgfuse-encoder` (the default) or candle;
//! - [`OpenAiEmbedder`]: any OpenAI-compatible `/v1/embeddings` endpoint.
//!
//! ```
//! use kgfuse_vector::{Embedder, HashEmbedder};
//!
//! let embedder = HashEmbedder::new(256);
//! let vectors = embedder.embed(&["decode a CAN signal".to_owned()])?;
//! let norm: f32 = vectors[0].iter().map(|x| x * x).sum::<f32>().sqrt();
//! assert!((norm - 1.0).abs() < 1e-5);
//! # Ok::<(), kgfuse_vector::EmbedError>(())
//! ```

mod embed;
mod kinds;
mod location;
mod resident;
mod table;

pub use embed::distilled::{StaticEmbedder, default_static_dir};
pub use embed::hash::HashEmbedder;
pub use embed::minilm::{MiniLmBackend, MiniLmEmbedder, default_minilm_dir};
pub use embed::openai::{OpenAiConfig, OpenAiEmbedder};
pub use embed::{EmbedError, Embedder, build_embedder, embed_in_batches};
pub use kgfuse_core::math::cosine;
pub use kgfuse_encoder::{blas_kernels, blas_kernels_to_request, restart_with_faster_blas_kernels};
pub use kinds::KindFilter;
pub use location::{READ_CONSISTENCY, VectorLocation};
pub use resident::exact_score;
pub use table::{
    MIN_ROWS_FOR_VECTOR_INDEX, VectorError, VectorHit, VectorIndexStatus, VectorRow, VectorStore,
};
