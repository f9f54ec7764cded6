//! The forward pass over a packed batch: the tokens of every text one after the
//! other, no padding. The dense projections see all tokens as one matrix (one
//! product each, split across the cores by [`linear`]); attention runs per text
//! and head, on that text's tokens only, so a short text next to a long one costs
//! what it would alone.

use crate::activations::{gelu_all, softmax_rows, sum_in_lanes};
use crate::half_rows::HalfWeight;
use crate::matmul::{Kernel, View, product};
use crate::weights::{Config, Linear, Norm, Weights};
use rayon::prelude::*;
use std::ops::Range;

/// Texts as token ids, packed: text `i` is `ids[starts[i]..starts[i + 1]]`.
#[derive(Debug, Default)]
pub(crate) struct Packed {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    /// Offsets of each text, plus the total at the end.
    pub starts: Vec<usize>,
}

impl Packed {
    /// Appends one text's tokens.
    pub(crate) fn push(&mut self, ids: &[u32], type_ids: &[u32]) {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        self.ids.extend_from_slice(ids);
        self.type_ids.extend_from_slice(type_ids);
        self.starts.push(self.ids.len());
    }

    fn texts(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Tokens of every text together.
    pub(crate) fn tokens(&self) -> usize {
        self.ids.len()
    }
}

/// The mean of each text's last hidden states, scaled to unit length.
pub(crate) fn sentence_vectors(
    weights: &Weights,
    config: &Config,
    packed: &Packed,
) -> Vec<Vec<f32>> {
    let hidden = config.hidden_size;
    let mut x = embed_tokens(weights, config, packed);
    for layer in &weights.layers {
        let qkv = linear(&x, &layer.qkv);
        let context = attention(&qkv, packed, config);
        let attended = linear(&context, &layer.attention_out);
        add_and_normalise(
            &mut x,
            &attended,
            &layer.attention_norm,
            config.layer_norm_eps,
        );
        let mut inner = linear(&x, &layer.intermediate);
        inner.par_chunks_mut(4096).for_each(gelu_all);
        let out = linear(&inner, &layer.output);
        add_and_normalise(&mut x, &out, &layer.output_norm, config.layer_norm_eps);
    }
    packed
        .starts
        .windows(2)
        .map(|w| mean_unit(&x[w[0] * hidden..w[1] * hidden], hidden))
        .collect()
}

/// Word + position + token-type embeddings of every token, normalised.
fn embed_tokens(weights: &Weights, config: &Config, packed: &Packed) -> Vec<f32> {
    let hidden = config.hidden_size;
    let mut x = vec![0.0f32; packed.ids.len() * hidden];
    for text in 0..packed.texts() {
        let (start, end) = (packed.starts[text], packed.starts[text + 1]);
        for (position, token) in (start..end).enumerate() {
            let row = &mut x[token * hidden..(token + 1) * hidden];
            let word = packed.ids[token] as usize * hidden;
            let kind = packed.type_ids[token] as usize * hidden;
            let place = position * hidden;
            for (i, v) in row.iter_mut().enumerate() {
                *v = weights.word[word + i]
                    + weights.position[place + i]
                    + weights.token_type[kind + i];
            }
        }
    }
    x.par_chunks_mut(hidden)
        .for_each(|row| layer_norm(row, &weights.embedding_norm, config.layer_norm_eps));
    x
}

/// Below this many rows a product is split by output columns, above it by rows.
///
/// A few rows (a question) cost little arithmetic against reading the whole
/// weight matrix from memory, so each thread takes a block of the weight's rows
/// (of the output's columns) and reads only those; many rows (a batch of
/// documents) are bound by arithmetic, so each thread takes a block of rows.
const SPLIT_BY_COLUMNS_BELOW: usize = 128;

/// The fewest output columns a thread's block of a few rows' product gets.
const MIN_BLOCK_COLUMNS: usize = 64;

/// The fewest rows a thread's block of many rows' product gets.
const MIN_BLOCK_ROWS: usize = 32;

/// `x · Wᵀ + b` for every row of `x`, split across rayon's threads (on a machine
/// with many cores, into no more blocks than keep each one worth a thread).
fn linear(x: &[f32], layer: &Linear) -> Vec<f32> {
    let rows = x.len() / layer.inputs;
    let threads = rayon::current_num_threads().max(1);
    if rows < SPLIT_BY_COLUMNS_BELOW {
        let parts = threads.min(layer.outputs / MIN_BLOCK_COLUMNS).max(1);
        linear_by_columns(x, layer, rows, parts)
    } else {
        let parts = threads.min(rows / MIN_BLOCK_ROWS).max(1);
        linear_by_rows(x, layer, rows, parts)
    }
}

/// [`linear`] for many rows: each thread multiplies a block of rows of `x` by
/// the whole weight.
fn linear_by_rows(x: &[f32], layer: &Linear, rows: usize, parts: usize) -> Vec<f32> {
    let mut out = layer.bias.repeat(rows);
    let block = rows.div_ceil(parts).max(1);
    out.par_chunks_mut(block * layer.outputs)
        .zip(x.par_chunks(block * layer.inputs))
        .for_each(|(out, x)| multiply_by_weight_rows(out, x, layer, 0..layer.outputs));
    out
}

/// [`linear`] for a few rows: each thread computes a block of output columns
/// from its block of the weight's rows, then the blocks are laid side by side.
/// The weight is read in half precision when the layer has it: a few rows cost
/// little arithmetic against reading the weight from memory.
fn linear_by_columns(x: &[f32], layer: &Linear, rows: usize, parts: usize) -> Vec<f32> {
    let step = layer
        .half_weight
        .as_ref()
        .map_or(1, HalfWeight::column_step);
    let width = layer.outputs.div_ceil(parts).next_multiple_of(step).max(1);
    let ranges: Vec<Range<usize>> = (0..layer.outputs)
        .step_by(width)
        .map(|first| first..(first + width).min(layer.outputs))
        .collect();
    let blocks: Vec<(Range<usize>, Vec<f32>)> = ranges
        .into_par_iter()
        .map(|columns| {
            let mut block = layer.bias[columns.clone()].repeat(rows);
            match &layer.half_weight {
                Some(half) => half.add_products(&mut block, x, columns.clone()),
                None => multiply_by_weight_rows(&mut block, x, layer, columns.clone()),
            }
            (columns, block)
        })
        .collect();
    let mut out = vec![0.0f32; rows * layer.outputs];
    for (columns, block) in blocks {
        for (row, values) in block.chunks(columns.len()).enumerate() {
            let start = row * layer.outputs + columns.start;
            out[start..start + columns.len()].copy_from_slice(values);
        }
    }
    out
}

/// `out += x · W[outputs]ᵀ`, where `W[outputs]` are the weight's rows (the
/// output columns) in `outputs` and `out` is dense, `rows × outputs.len()`.
fn multiply_by_weight_rows(out: &mut [f32], x: &[f32], layer: &Linear, outputs: Range<usize>) {
    let inputs = layer.inputs;
    let rows = x.len() / inputs;
    product(
        out,
        View::rows(0, outputs.len()),
        x,
        View::rows(0, inputs),
        &layer.weight,
        View::transposed(outputs.start * inputs, inputs),
        (rows, inputs, outputs.len()),
        true,
        Kernel::Large,
    );
}

/// Multi-head self-attention of each text over its own tokens. `qkv` holds each
/// token's query (pre-scaled), key and value side by side; the result holds each
/// token's heads side by side.
fn attention(qkv: &[f32], packed: &Packed, config: &Config) -> Vec<f32> {
    let hidden = config.hidden_size;
    let heads = config.num_attention_heads;
    let size = hidden / heads;
    let width = 3 * hidden;
    let mut context = vec![0.0f32; packed.ids.len() * hidden];
    // One text's rows of `context` per task: disjoint, so texts run in parallel.
    let mut rows: Vec<(usize, &mut [f32])> = Vec::with_capacity(packed.texts());
    let mut rest = context.as_mut_slice();
    for text in 0..packed.texts() {
        let tokens = packed.starts[text + 1] - packed.starts[text];
        let (mine, after) = rest.split_at_mut(tokens * hidden);
        rows.push((packed.starts[text], mine));
        rest = after;
    }
    rows.into_par_iter().for_each(|(start, out)| {
        let tokens = out.len() / hidden;
        let mut scores = vec![0.0f32; tokens * tokens];
        for head in 0..heads {
            let query = View {
                offset: start * width + head * size,
                row: width,
                col: 1,
            };
            // Keys transposed: element (i, j) is key j's i-th value.
            let keys = View {
                offset: start * width + hidden + head * size,
                row: 1,
                col: width,
            };
            product(
                &mut scores,
                View::rows(0, tokens),
                qkv,
                query,
                qkv,
                keys,
                (tokens, size, tokens),
                false,
                Kernel::Small,
            );
            softmax_rows(&mut scores, tokens);
            let values = View {
                offset: start * width + 2 * hidden + head * size,
                row: width,
                col: 1,
            };
            product(
                out,
                View {
                    offset: head * size,
                    row: hidden,
                    col: 1,
                },
                &scores,
                View::rows(0, tokens),
                qkv,
                values,
                (tokens, tokens, size),
                false,
                Kernel::Small,
            );
        }
    });
    context
}

/// `x = LayerNorm(x + residual)`, row by row.
fn add_and_normalise(x: &mut [f32], residual: &[f32], norm: &Norm, eps: f32) {
    let hidden = norm.weight.len();
    x.par_chunks_mut(hidden)
        .zip(residual.par_chunks(hidden))
        .for_each(|(row, add)| {
            row.iter_mut().zip(add).for_each(|(v, a)| *v += a);
            layer_norm(row, norm, eps);
        });
}

/// Normalises one row to zero mean and unit variance, then scales and shifts it.
fn layer_norm(row: &mut [f32], norm: &Norm, eps: f32) {
    #[allow(clippy::cast_precision_loss)]
    let n = row.len() as f32;
    let mean = sum_in_lanes(row, |v| v) / n;
    let variance = sum_in_lanes(row, |v| (v - mean) * (v - mean)) / n;
    let scale = 1.0 / (variance + eps).sqrt();
    for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
        *v = (*v - mean) * scale * w + b;
    }
}

/// The mean of a text's token rows, scaled to unit length.
fn mean_unit(rows: &[f32], hidden: usize) -> Vec<f32> {
    let mut mean = vec![0.0f32; hidden];
    let count = rows.len() / hidden;
    for row in rows.chunks(hidden) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
    }
    if count > 0 {
        #[allow(clippy::cast_precision_loss)]
        let inverse = 1.0 / count as f32;
        mean.iter_mut().for_each(|m| *m *= inverse);
    }
    let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    mean.iter_mut().for_each(|m| *m /= norm);
    mean
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense layer of `outputs × inputs` made-up weights.
    fn layer(inputs: usize, outputs: usize) -> Linear {
        #[allow(clippy::cast_precision_loss)]
        let weight: Vec<f32> = (0..inputs * outputs)
            .map(|i| (i as f32 * 0.013).sin())
            .collect();
        Linear {
            half_weight: HalfWeight::new(&weight, inputs),
            weight,
            bias: (0..outputs).map(|i| (i as f32 * 0.7).cos()).collect(),
            inputs,
            outputs,
        }
    }

    /// `x · Wᵀ + b` by the definition, with the layer's weights in half
    /// precision when `half` and it has them.
    fn by_definition(x: &[f32], layer: &Linear, half: bool) -> Vec<f32> {
        let rows = x.len() / layer.inputs;
        let weight: Vec<f32> = match &layer.half_weight {
            Some(weight) if half => weight.widened(),
            _ => layer.weight.clone(),
        };
        let mut out = Vec::with_capacity(rows * layer.outputs);
        for r in 0..rows {
            for c in 0..layer.outputs {
                let dot: f32 = (0..layer.inputs)
                    .map(|i| x[r * layer.inputs + i] * weight[c * layer.inputs + i])
                    .sum();
                out.push(dot + layer.bias[c]);
            }
        }
        out
    }

    #[test]
    fn a_dense_layer_split_by_columns_or_by_rows_gives_the_definitions_values() {
        let dense = layer(24, 37); // 37 columns: the blocks differ in width
        for rows in [1, 3, SPLIT_BY_COLUMNS_BELOW + 5] {
            #[allow(clippy::cast_precision_loss)]
            let x: Vec<f32> = (0..rows * dense.inputs)
                .map(|i| (i as f32 * 0.31).sin())
                .collect();
            for parts in [1, 2, 3] {
                for (got, want) in [
                    (
                        linear_by_columns(&x, &dense, rows, parts),
                        by_definition(&x, &dense, true),
                    ),
                    (
                        linear_by_rows(&x, &dense, rows, parts),
                        by_definition(&x, &dense, false),
                    ),
                ] {
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() < 1e-4,
                            "rows {rows}, parts {parts}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }
}
