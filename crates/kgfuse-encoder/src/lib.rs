//! A BERT sentence encoder for the CPU, written for all-MiniLM-L6-v2.
//!
//! [`Encoder::embed`] gives what sentence-transformers gives: the mean of the last
//! hidden states over each text's tokens, scaled to unit length. It differs from a
//! general tensor library's forward pass in how the work is laid out, not in the
//! arithmetic:
//!
//! - a batch is **packed**: the tokens of all texts one after the other, no
//!   padding, so every projection is one matrix product over real tokens only;
//! - **attention** runs per text (in parallel) and head, over that text's tokens;
//! - query, key and value are **one** stacked projection, the attention scale folded
//!   into its query rows when the weights are read;
//! - residual additions, layer norms and GELU run in place, row by row.
//!
//! The large matrix products run on OpenBLAS when the build links it (see
//! [`restart_with_faster_blas_kernels`] for CPUs it does not know), else on
//! `gemm`, the kernels candle itself uses; a question's few rows run on a kernel
//! of the crate's own over half-precision weights. The directory layout is
//! Hugging Face's: `config.json`, `tokenizer.json`, `model.safetensors`.

mod activations;
mod blas_kernels;
mod forward;
mod half_rows;
mod matmul;
mod weights;

pub use blas_kernels::{
    CORETYPE_VARIABLE, blas_kernels, blas_kernels_to_request, restart_with_faster_blas_kernels,
};

use forward::Packed;
use std::path::Path;
use tokenizers::{Tokenizer, TruncationParams};
use weights::{Config, Weights};

/// Most tokens run through the model at once: about 100 MB for the largest
/// intermediate (tokens x 1,536 floats for MiniLM).
pub const TOKEN_BUDGET: usize = 16_384;

/// Errors while loading or running the encoder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncoderError {
    /// A model file is missing.
    #[error("{0} is missing")]
    Missing(String),
    /// A model file is unreadable or not what a BERT model holds.
    #[error("{0}")]
    Model(String),
    /// The tokenizer failed on a text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
}

/// A loaded model and its tokenizer.
pub struct Encoder {
    config: Config,
    weights: Weights,
    tokenizer: Tokenizer,
    vocabulary: usize,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("hidden_size", &self.config.hidden_size)
            .field("layers", &self.config.num_hidden_layers)
            .finish_non_exhaustive()
    }
}

impl Encoder {
    /// Loads the model in `dir`; texts are cut at `max_tokens` tokens (special
    /// tokens included), which must fit the model's position embeddings.
    pub fn load(dir: &Path, max_tokens: usize) -> Result<Self, EncoderError> {
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(file).is_file() {
                return Err(EncoderError::Missing(file.into()));
            }
        }
        let model =
            |e: &dyn std::fmt::Display| EncoderError::Model(format!("{}: {e}", dir.display()));
        let config: Config = serde_json::from_str(
            &std::fs::read_to_string(dir.join("config.json")).map_err(|e| model(&e))?,
        )
        .map_err(|e| model(&e))?;
        if config.hidden_act != "gelu" || config.position_embedding_type != "absolute" {
            return Err(model(&format!(
                "only BERT models with exact GELU and absolute positions are supported \
                 (hidden_act {}, position_embedding_type {})",
                config.hidden_act, config.position_embedding_type
            )));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(model(
                &"hidden_size is not a multiple of num_attention_heads",
            ));
        }
        if max_tokens == 0 || max_tokens > config.max_position_embeddings {
            return Err(model(&format!(
                "{max_tokens} tokens do not fit the model's {} positions",
                config.max_position_embeddings
            )));
        }
        let mut tokenizer =
            Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| model(&e))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| model(&e))?;
        let bytes = std::fs::read(dir.join("model.safetensors")).map_err(|e| model(&e))?;
        let weights = Weights::read(&bytes, &config)?;
        let vocabulary = weights.word.len() / config.hidden_size;
        matmul::keep_blas_on_callers_thread();
        Ok(Self {
            config,
            weights,
            tokenizer,
            vocabulary,
        })
    }

    /// Length of every vector.
    pub fn dimension(&self) -> usize {
        self.config.hidden_size
    }

    /// One unit-length vector per text, in order. A batch costs what its texts
    /// cost one by one, without padding to the longest; larger batches make
    /// larger (more efficient) products. Texts are run [`TOKEN_BUDGET`] tokens at
    /// a time, which bounds memory whatever the batch.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EncoderError::Tokenizer(e.to_string()))?;
        let mut out = Vec::with_capacity(texts.len());
        let mut packed = Packed::default();
        for encoding in &encodings {
            if packed.tokens() + encoding.len() > TOKEN_BUDGET && packed.tokens() > 0 {
                out.extend(self.run(&packed)?);
                packed = Packed::default();
            }
            packed.push(encoding.get_ids(), encoding.get_type_ids());
        }
        if packed.tokens() > 0 {
            out.extend(self.run(&packed)?);
        }
        Ok(out)
    }

    /// One vector per sequence of token ids given as they are (no special tokens
    /// added, no truncation beyond the model's positions).
    pub fn embed_ids(&self, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let mut packed = Packed::default();
        for ids in sequences {
            if ids.len() > self.config.max_position_embeddings {
                return Err(EncoderError::Model(format!(
                    "a sequence of {} tokens exceeds the model's {} positions",
                    ids.len(),
                    self.config.max_position_embeddings
                )));
            }
            packed.push(ids, &vec![0; ids.len()]);
        }
        self.run(&packed)
    }

    /// The id of a token of the vocabulary (such as `[CLS]`).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.tokenizer.token_to_id(token)
    }

    fn run(&self, packed: &Packed) -> Result<Vec<Vec<f32>>, EncoderError> {
        let types = self.weights.token_type.len() / self.config.hidden_size;
        if let Some(id) = packed
            .ids
            .iter()
            .find(|&&id| id as usize >= self.vocabulary)
        {
            return Err(EncoderError::Model(format!(
                "token id {id} is outside the model's vocabulary of {}",
                self.vocabulary
            )));
        }
        if packed.type_ids.iter().any(|&t| t as usize >= types) {
            return Err(EncoderError::Model(
                "a token type id the model lacks".into(),
            ));
        }
        // The whole pass runs on one of rayon's threads: its parallel steps then
        // split work by joining (this thread takes one half, and the other half
        // too when no other thread is awake to take it) instead of handing each
        // step to the pool and sleeping until it is done. A caller thread that
        // sleeps between steps costs a wake-up per step, which a machine back
        // from idle pays dearly: the same question took twice as long after a
        // 50 ms pause (BENCHMARKS.md, "Release profile, 2026-11-27, afternoon").
        Ok(rayon::scope(|_| {
            forward::sentence_vectors(&self.weights, &self.config, packed)
        }))
    }
}
