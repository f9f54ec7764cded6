//! The [`Embedder`] trait and its four implementations.

pub mod distilled;
pub mod hash;
pub mod minilm;
pub mod openai;

use kgfuse_core::config::{EmbedderConfig, EmbedderKind};
use kgfuse_core::progress::Progress;

/// Errors while embedding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The MiniLM model directory is missing or incomplete.
    #[error(
        "MiniLM model not found in {dir}: {reason}. Run `make models` to install all-MiniLM-L6-v2, \
         point KGFUSE_MINILM_DIR at a directory with config.json, tokenizer.json and model.safetensors, \
         or use the hash embedder (no model needed)"
    )]
    ModelMissing {
        /// Directory searched.
        dir: String,
        /// What is missing.
        reason: String,
    },
    /// The model failed to load or run.
    #[error("embedding model: {0}")]
    Model(String),
    /// The embedding service failed after retries, or answered nonsense.
    #[error("embedding service: {0}")]
    Service(String),
    /// Configuration is inconsistent (unknown embedder, wrong dimension...).
    #[error("{0}")]
    Config(String),
}

/// Turns texts into unit-length vectors of a fixed dimension.
pub trait Embedder: Send + Sync {
    /// Embedder kind as recorded in `kgfuse.toml`: `hash`, `static`, `minilm` or
    /// `openai`.
    fn kind(&self) -> &'static str;
    /// Length of every vector.
    fn dimension(&self) -> usize;
    /// Embeds a batch; returns one vector per text, in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Builds the embedder a store was initialised with.
pub fn build_embedder(config: &EmbedderConfig) -> Result<Box<dyn Embedder>, EmbedError> {
    let embedder: Box<dyn Embedder> = match config.kind {
        EmbedderKind::Hash => Box::new(HashEmbedder::new(config.dimension)),
        EmbedderKind::Minilm => {
            let dir = config
                .model_dir
                .as_ref()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(default_minilm_dir);
            let backend = config.backend.unwrap_or_default();
            Box::new(MiniLmEmbedder::load_on(&dir, backend)?)
        }
        EmbedderKind::Static => {
            // `model_dir` names the teacher; the table sits beside it.
            let minilm_dir = config
                .model_dir
                .as_ref()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(default_minilm_dir);
            let dir = default_static_dir(&minilm_dir);
            Box::new(StaticEmbedder::load_or_distill(&dir, &minilm_dir)?)
        }
        EmbedderKind::Openai => Box::new(OpenAiEmbedder::new(OpenAiConfig::from_store(config))?),
    };
    if embedder.dimension() != config.dimension {
        return Err(EmbedError::Config(format!(
            "the store was initialised with {}-dimensional vectors but the {} embedder produces {}; \
             re-initialise a new data directory to change embedders",
            config.dimension,
            embedder.kind(),
            embedder.dimension()
        )));
    }
    Ok(embedder)
}

/// Embeds many texts in batches of `batch_size`, reporting progress per text.
///
/// Texts are batched in order of length so a batch holds texts of similar size:
/// transformer embedders pad every text of a batch to the longest one, and mixing
/// three-word labels with 256-token code blocks would waste most of the compute.
/// Results come back in the order of `texts`.
pub fn embed_in_batches(
    embedder: &dyn Embedder,
    texts: &[String],
    batch_size: usize,
    progress: &dyn Progress,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
    for batch in order.chunks(batch_size.max(1)) {
        let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
        let vectors = embedder.embed(&batch_texts)?;
        if vectors.len() != batch.len() {
            return Err(EmbedError::Service(format!(
                "asked for {} embeddings, got {}",
                batch.len(),
                vectors.len()
            )));
        }
        for (&i, vector) in batch.iter().zip(vectors) {
            if vector.len() != embedder.dimension() {
                return Err(EmbedError::Config(format!(
                    "{} embedder returned a {}-dimensional vector, expected {}",
                    embedder.kind(),
                    vector.len(),
                    embedder.dimension()
                )));
            }
            out[i] = vector;
        }
        progress.advance(batch.len() as u64);
    }
    Ok(out)
}

/// Scales a vector to unit length in place (left as is when zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

pub use distilled::{StaticEmbedder, default_static_dir};
pub use hash::HashEmbedder;
pub use minilm::{MiniLmEmbedder, default_minilm_dir};
pub use openai::{OpenAiConfig, OpenAiEmbedder};

/// What the real-model tests of the embedders share: three texts (a question,
/// the function that answers it, an unrelated policy sentence) and their check
/// that every vector is unit length.
#[cfg(test)]
pub(crate) mod sample {
    /// The question, its answer, and an unrelated text.
    pub(crate) fn texts() -> [String; 3] {
        [
            "How do I decode a signal from a CAN bus frame?",
            "decode_signal: extract a physical value from the raw bytes of a CAN frame",
            "Employees may work remotely two days per week with manager approval.",
        ]
        .map(String::from)
    }

    /// Panics unless every vector has unit length.
    pub(crate) fn assert_unit_length(vectors: &[Vec<f32>]) {
        for vector in vectors {
            let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::progress::NoProgress;

    #[test]
    fn batching_by_length_keeps_the_callers_order() {
        let embedder = HashEmbedder::new(32);
        let texts: Vec<String> = ["a much longer text about CAN frames", "b", "mid length", ""]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let batched = embed_in_batches(&embedder, &texts, 2, &NoProgress).expect("embed");
        let direct = embedder.embed(&texts).expect("embed");
        assert_eq!(batched, direct);
    }
}
