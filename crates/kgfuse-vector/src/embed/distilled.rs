//! A static embedder distilled from the installed MiniLM: the model2vec idea.
//!
//! Distillation runs MiniLM once per vocabulary token (`[CLS] token [SEP]`, mean
//! pooled as MiniLM pools a sentence, scaled to unit length) and keeps the 30,522
//! vectors as a table. Each row is then weighted by how rare its token is (the SIF
//! weight `a / (a + p)`, with `p` the token's Zipf probability by its rank in the
//! vocabulary, which for BERT's WordPiece vocabulary follows word frequency:
//! `the`, `of`, `and` come first), so common words count little. Embedding a text
//! is then a tokenisation, a table lookup per token, a sum and a scaling to unit
//! length: no attention and no matrix products.
//!
//! The table is produced locally, from the MiniLM directory `make models` installs,
//! the first time a store asks for it (85 s on 2 cores, measured under load), and
//! kept beside the model (`<minilm>-static/`): no download. The model2vec-rs crate reads the
//! same idea from model2vec's file layout, but it carries a Hub download client
//! and `ndarray` for what is a lookup and a sum here.

use super::minilm::MiniLmEmbedder;
use super::{EmbedError, Embedder, normalize};
use candle_core::{Device, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::{Tokenizer, TruncationParams};

/// File holding the weighted token table (`embeddings`: vocabulary x dimension).
const TABLE_FILE: &str = "embeddings.safetensors";
/// The tokenizer, copied from MiniLM's directory.
const TOKENIZER_FILE: &str = "tokenizer.json";
/// Longest input in tokens: the limit of the tokenizer file the table comes with
/// (MiniLM's own is 256), kept so that what was measured is what runs.
const MAX_TOKENS: usize = 128;
/// Tokens distilled per MiniLM forward pass.
const DISTILL_BATCH: usize = 512;
/// The SIF smoothing constant: a token with Zipf probability `p` weighs
/// `SIF_A / (SIF_A + p)` (the most common word about 0.01, rank 1,000 about 0.9).
const SIF_A: f32 = 1e-3;
/// First whole-word id of BERT's uncased vocabulary (`the`); the ids below are
/// padding, unused slots, special tokens and single characters.
const FIRST_WORD_ID: usize = 1996;

/// Where the distilled table of the MiniLM model in `minilm_dir` is kept.
pub fn default_static_dir(minilm_dir: &Path) -> PathBuf {
    let name = minilm_dir
        .file_name()
        .map_or_else(|| "minilm".into(), |n| n.to_string_lossy().into_owned());
    minilm_dir.with_file_name(format!("{name}-static"))
}

/// A static embedder: a weighted token table and MiniLM's tokenizer.
pub struct StaticEmbedder {
    tokenizer: Tokenizer,
    /// Row-major, `vocabulary x dimension`, each row already weighted.
    table: Vec<f32>,
    dimension: usize,
}

impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("dimension", &self.dimension)
            .field("vocabulary", &(self.table.len() / self.dimension.max(1)))
            .finish_non_exhaustive()
    }
}

impl StaticEmbedder {
    /// Loads the table in `dir`, distilling it from the MiniLM model in
    /// `minilm_dir` first when it is not there yet.
    pub fn load_or_distill(dir: &Path, minilm_dir: &Path) -> Result<Self, EmbedError> {
        if !dir.join(TABLE_FILE).is_file() {
            distill(minilm_dir, dir)?;
        }
        Self::load(dir)
    }

    /// Loads a distilled table from `dir`.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let model_err =
            |e: &dyn std::fmt::Display| EmbedError::Model(format!("{}: {e}", dir.display()));
        let mut tokenizer =
            Tokenizer::from_file(dir.join(TOKENIZER_FILE)).map_err(|e| model_err(&e))?;
        // MiniLM's tokenizer file pads every text to 128 tokens; padding rows
        // weigh nothing here, so only the lookups would be wasted.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_err(&e))?;
        let tensors = candle_core::safetensors::load(dir.join(TABLE_FILE), &Device::Cpu)
            .map_err(|e| model_err(&e))?;
        let table = tensors
            .get("embeddings")
            .ok_or_else(|| model_err(&"no `embeddings` tensor"))?;
        let (rows, dimension) = table.dims2().map_err(|e| model_err(&e))?;
        if rows != tokenizer.get_vocab_size(true) {
            return Err(model_err(&format!(
                "{rows} rows for a vocabulary of {}",
                tokenizer.get_vocab_size(true)
            )));
        }
        let table = table
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| model_err(&e))?;
        Ok(Self {
            tokenizer,
            table,
            dimension,
        })
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        let mut vector = vec![0f32; self.dimension];
        for &id in encoding.get_ids() {
            let start = id as usize * self.dimension;
            if let Some(row) = self.table.get(start..start + self.dimension) {
                vector.iter_mut().zip(row).for_each(|(v, x)| *v += x);
            }
        }
        normalize(&mut vector);
        Ok(vector)
    }
}

impl Embedder for StaticEmbedder {
    fn kind(&self) -> &'static str {
        "static"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed_one(t)).collect()
    }
}

/// The SIF weight of the token with this id: padding, unused slots and special
/// tokens weigh nothing, characters and word pieces below the first word weigh as
/// the most common word, words by their rank.
fn token_weight(id: usize, special: bool) -> f32 {
    if special {
        return 0.0;
    }
    let rank = id.saturating_sub(FIRST_WORD_ID) + 1;
    // Zipf: p(rank) = 1 / (rank * H), H the harmonic number of the vocabulary
    // (about ln 30,522 + 0.58).
    #[allow(clippy::cast_precision_loss)]
    let p = 1.0 / (rank as f32 * 10.9);
    SIF_A / (SIF_A + p)
}

/// Distils the MiniLM model in `minilm_dir` into a weighted token table in `dir`
/// (written to a scratch directory first and renamed, so a reader never sees half
/// a table and two processes distilling at once both end with a whole one).
pub fn distill(minilm_dir: &Path, dir: &Path) -> Result<(), EmbedError> {
    let started = std::time::Instant::now();
    let model = MiniLmEmbedder::load(minilm_dir)?;
    let tokenizer = Tokenizer::from_file(minilm_dir.join(TOKENIZER_FILE))
        .map_err(|e| EmbedError::Model(format!("{}: {e}", minilm_dir.display())))?;
    let vocabulary = tokenizer.get_vocab_size(true);
    let specials: HashMap<u32, bool> = tokenizer
        .get_added_tokens_decoder()
        .into_iter()
        .map(|(id, token)| (id, token.special))
        .collect();
    let unused = |id: u32| {
        tokenizer
            .id_to_token(id)
            .is_some_and(|t| t.starts_with("[unused"))
    };
    tracing::info!(
        "distilling a static embedder from {} ({vocabulary} tokens, once)",
        minilm_dir.display()
    );
    let ids: Vec<u32> = (0..u32::try_from(vocabulary).unwrap_or(u32::MAX)).collect();
    let mut table = Vec::with_capacity(vocabulary * model.dimension());
    for batch in ids.chunks(DISTILL_BATCH) {
        let vectors = model.embed_token_ids(batch)?;
        for (&id, mut vector) in batch.iter().zip(vectors) {
            let special = specials.get(&id).copied().unwrap_or(false) || unused(id);
            normalize(&mut vector);
            let weight = token_weight(id as usize, special);
            table.extend(vector.into_iter().map(|x| x * weight));
        }
    }
    let write_err =
        |e: &dyn std::fmt::Display| EmbedError::Model(format!("{}: {e}", dir.display()));
    let parent = dir.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| write_err(&e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".static-")
        .tempdir_in(parent)
        .map_err(|e| write_err(&e))?;
    let tensor = Tensor::from_vec(table, (vocabulary, model.dimension()), &Device::Cpu)
        .map_err(|e| write_err(&e))?;
    candle_core::safetensors::save(
        &HashMap::from([("embeddings".to_owned(), tensor)]),
        scratch.path().join(TABLE_FILE),
    )
    .map_err(|e| write_err(&e))?;
    std::fs::copy(
        minilm_dir.join(TOKENIZER_FILE),
        scratch.path().join(TOKENIZER_FILE),
    )
    .map_err(|e| write_err(&e))?;
    let scratch = scratch.keep();
    if let Err(e) = std::fs::rename(&scratch, dir) {
        let _ = std::fs::remove_dir_all(&scratch);
        // Another process finished first: its table is the same.
        if !dir.join(TABLE_FILE).is_file() {
            return Err(write_err(&e));
        }
    }
    tracing::info!(
        "static embedder ready in {} ({:.1} s)",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_words_weigh_little_and_special_tokens_nothing() {
        let the = token_weight(FIRST_WORD_ID, false);
        let rare = token_weight(20_000, false);
        assert!(the < 0.02, "{the}");
        assert!(rare > 0.9, "{rare}");
        assert!(token_weight(5_000, false) > token_weight(2_100, false));
        assert_eq!(token_weight(101, true), 0.0);
    }

    #[test]
    fn the_table_sits_beside_the_model() {
        assert_eq!(
            default_static_dir(Path::new("/m/all-MiniLM-L6-v2")),
            Path::new("/m/all-MiniLM-L6-v2-static")
        );
    }
}

/// Distils the real model; `make test` provisions it with `make models`.
#[cfg(test)]
mod model_tests {
    use super::*;
    use crate::embed::default_minilm_dir;
    use kgfuse_core::math::cosine;

    #[test]
    fn a_distilled_table_embeds_like_its_teacher() {
        // The table every store with `--embedder static` uses: distilled on the
        // first run on a machine, read on later ones.
        let minilm_dir = default_minilm_dir();
        let dir = default_static_dir(&minilm_dir);
        let embedder = StaticEmbedder::load_or_distill(&dir, &minilm_dir)
            .unwrap_or_else(|e| panic!("{e}\n(`make test` runs `make models` first)"));
        assert_eq!(embedder.dimension(), 384);
        let texts = crate::embed::sample::texts();
        let v = embedder.embed(&texts).expect("embed");
        crate::embed::sample::assert_unit_length(&v);
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.1);
        // A second load reads the table it wrote.
        let again = StaticEmbedder::load(&dir).expect("load");
        assert_eq!(again.embed(&texts[..1]).expect("embed")[0], v[0]);
    }
}
