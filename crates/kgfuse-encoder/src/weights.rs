//! The model's configuration and weights, read from `config.json` and
//! `model.safetensors` (the Hugging Face layout of a `BertModel`).

use crate::EncoderError;
use crate::half_rows::HalfWeight;
use safetensors::{Dtype, SafeTensors};

/// What the forward pass needs from `config.json`.
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_position")]
    pub position_embedding_type: String,
}

fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}
fn default_position() -> String {
    "absolute".into()
}

/// A dense layer as PyTorch stores it: `weight` is `(outputs, inputs)` row-major.
#[derive(Debug)]
pub(crate) struct Linear {
    pub weight: Vec<f32>,
    /// `weight` in half precision, for products of a few rows; `None` when the
    /// CPU runs none of the kernels that read it.
    pub half_weight: Option<HalfWeight>,
    pub bias: Vec<f32>,
    pub inputs: usize,
    pub outputs: usize,
}

/// Layer normalisation's scale and shift.
#[derive(Debug)]
pub(crate) struct Norm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// One encoder layer.
#[derive(Debug)]
pub(crate) struct Layer {
    /// Query, key and value projections stacked into one `(3 · hidden, hidden)`
    /// weight, the query rows already scaled by `1 / sqrt(head size)`.
    pub qkv: Linear,
    pub attention_out: Linear,
    pub attention_norm: Norm,
    pub intermediate: Linear,
    pub output: Linear,
    pub output_norm: Norm,
}

/// Every weight of the model.
#[derive(Debug)]
pub(crate) struct Weights {
    pub word: Vec<f32>,
    pub position: Vec<f32>,
    pub token_type: Vec<f32>,
    pub embedding_norm: Norm,
    pub layers: Vec<Layer>,
}

/// Reads one float32 tensor of the expected shape.
fn tensor(st: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>, EncoderError> {
    let view = st
        .tensor(name)
        .map_err(|e| EncoderError::Model(format!("{name}: {e}")))?;
    if view.dtype() != Dtype::F32 || view.shape() != shape {
        return Err(EncoderError::Model(format!(
            "{name}: expected F32 {shape:?}, found {:?} {:?}",
            view.dtype(),
            view.shape()
        )));
    }
    Ok(view
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl Weights {
    /// Reads every weight of a `BertModel` from a safetensors file's bytes. Names
    /// may carry a `bert.` prefix (checkpoints saved from a task head).
    pub(crate) fn read(bytes: &[u8], config: &Config) -> Result<Self, EncoderError> {
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| EncoderError::Model(format!("model.safetensors: {e}")))?;
        let prefix = if st.names().iter().any(|n| n.starts_with("bert.")) {
            "bert."
        } else {
            ""
        };
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let get = |name: &str, shape: &[usize]| tensor(&st, &format!("{prefix}{name}"), shape);
        let linear = |name: &str, outputs: usize, inputs: usize| -> Result<Linear, EncoderError> {
            let weight = get(&format!("{name}.weight"), &[outputs, inputs])?;
            Ok(Linear {
                half_weight: HalfWeight::new(&weight, inputs),
                weight,
                bias: get(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<Norm, EncoderError> {
            Ok(Norm {
                weight: get(&format!("{name}.weight"), &[hidden])?,
                bias: get(&format!("{name}.bias"), &[hidden])?,
            })
        };
        let vocabulary = st
            .tensor(&format!("{prefix}embeddings.word_embeddings.weight"))
            .map_err(|e| EncoderError::Model(format!("word embeddings: {e}")))?
            .shape()
            .first()
            .copied()
            .unwrap_or(0);
        #[allow(clippy::cast_precision_loss)]
        let scale = 1.0 / ((hidden / config.num_attention_heads) as f32).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}.");
            let mut qkv = Linear {
                weight: Vec::with_capacity(3 * hidden * hidden),
                half_weight: None,
                bias: Vec::with_capacity(3 * hidden),
                inputs: hidden,
                outputs: 3 * hidden,
            };
            for (part, factor) in [("query", scale), ("key", 1.0), ("value", 1.0)] {
                let one = linear(&format!("{p}attention.self.{part}"), hidden, hidden)?;
                qkv.weight.extend(one.weight.iter().map(|w| w * factor));
                qkv.bias.extend(one.bias.iter().map(|b| b * factor));
            }
            qkv.half_weight = HalfWeight::new(&qkv.weight, hidden);
            layers.push(Layer {
                qkv,
                attention_out: linear(&format!("{p}attention.output.dense"), hidden, hidden)?,
                attention_norm: norm(&format!("{p}attention.output.LayerNorm"))?,
                intermediate: linear(&format!("{p}intermediate.dense"), inner, hidden)?,
                output: linear(&format!("{p}output.dense"), hidden, inner)?,
                output_norm: norm(&format!("{p}output.LayerNorm"))?,
            });
        }
        Ok(Self {
            word: get("embeddings.word_embeddings.weight", &[vocabulary, hidden])?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type: {
                let types = st
                    .tensor(&format!("{prefix}embeddings.token_type_embeddings.weight"))
                    .map_err(|e| EncoderError::Model(format!("token type embeddings: {e}")))?
                    .shape()
                    .first()
                    .copied()
                    .unwrap_or(0);
                get("embeddings.token_type_embeddings.weight", &[types, hidden])?
            },
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
        })
    }
}
