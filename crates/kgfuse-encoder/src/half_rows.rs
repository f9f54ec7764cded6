//! Products of a few rows (a question's tokens) against a dense layer's weight
//! kept in half precision ([`HalfWeight`]).
//!
//! For a few rows a product costs little arithmetic against reading the weight
//! (MiniLM: 42 MB of 32-bit weights per question, where `sgemm` also copies each
//! weight into its own layout first), so the weight is rounded to IEEE half
//! precision once, at load, and widened in registers; the sums are in single
//! precision. Each kernel has its own layout of the weight:
//!
//! - [`HalfKernel::Avx2`] reads the weight's rows as PyTorch stores them and sums
//!   each row of `x` times each weight row across eight lanes, reduced at the end;
//! - [`HalfKernel::Avx512`] reads the weight in panels of 32 outputs, input by
//!   input: each input's 32 weights are widened once and multiplied by that
//!   input's value in each of up to twelve rows of `x`, so every instruction
//!   adds into 16 outputs and no sum is reduced across lanes.

use std::ops::Range;

/// Outputs per panel of [`HalfKernel::Avx512`]'s layout: two 16-lane vectors.
const PANEL: usize = 32;

/// The kernels of [`HalfWeight::add_products`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfKernel {
    /// AVX2, FMA and F16C; the weight's rows as they are.
    Avx2,
    /// AVX-512 (and what `Avx2` needs, for the conversion); panels of 32 outputs.
    Avx512,
}

impl HalfKernel {
    /// The kernels this CPU runs, slowest first.
    pub(crate) fn available() -> Vec<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            [
                (Self::Avx2, avx2::available()),
                (Self::Avx512, avx2::available() && avx512::available()),
            ]
            .into_iter()
            .filter_map(|(kernel, runs)| runs.then_some(kernel))
            .collect()
        }
        #[cfg(not(target_arch = "x86_64"))]
        Vec::new()
    }

    /// The fastest kernel this CPU runs.
    fn fastest() -> Option<Self> {
        Self::available().pop()
    }
}

/// A dense layer's weight (`outputs × inputs`, as PyTorch stores it) rounded to
/// half precision (to nearest) and laid out for one kernel.
#[derive(Debug)]
pub(crate) struct HalfWeight {
    kernel: HalfKernel,
    inputs: usize,
    outputs: usize,
    values: Vec<u16>,
}

impl HalfWeight {
    /// The weight for the fastest kernel this CPU runs; `None` when it runs none
    /// (no AVX2, FMA and F16C).
    pub(crate) fn new(weight: &[f32], inputs: usize) -> Option<Self> {
        Some(Self::for_kernel(HalfKernel::fastest()?, weight, inputs))
    }

    /// The weight laid out for `kernel`.
    ///
    /// # Panics
    ///
    /// When `weight` is not whole rows of `inputs`, or this CPU lacks `kernel`.
    pub(crate) fn for_kernel(kernel: HalfKernel, weight: &[f32], inputs: usize) -> Self {
        assert!(
            inputs > 0 && weight.len().is_multiple_of(inputs),
            "the weight is not whole rows"
        );
        assert!(
            HalfKernel::available().contains(&kernel),
            "this CPU lacks the {kernel:?} kernel"
        );
        let outputs = weight.len() / inputs;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: every kernel this CPU runs needs AVX2, FMA and F16C (checked).
        #[allow(unsafe_code)]
        let rounded = unsafe { avx2::to_half(weight) };
        #[cfg(not(target_arch = "x86_64"))]
        let rounded: Vec<u16> = unreachable!("no kernel off x86-64");
        let values = match kernel {
            HalfKernel::Avx2 => rounded,
            HalfKernel::Avx512 => panels(&rounded, inputs, outputs),
        };
        Self {
            kernel,
            inputs,
            outputs,
            values,
        }
    }

    /// What the first output of a block of columns given to
    /// [`Self::add_products`] must be a multiple of.
    pub(crate) fn column_step(&self) -> usize {
        match self.kernel {
            HalfKernel::Avx2 => 1,
            HalfKernel::Avx512 => PANEL,
        }
    }

    /// `out[r][o - outputs.start] += x[r] · weight[o]` for every row `r` of `x`
    /// and every `o` in `outputs`; `out` is dense, `rows × outputs.len()`.
    ///
    /// # Panics
    ///
    /// When `x` is not whole rows of the weight's inputs, `outputs` is not in
    /// the weight or does not start at a multiple of [`Self::column_step`], or
    /// `out` is not `rows × outputs.len()`.
    pub(crate) fn add_products(&self, out: &mut [f32], x: &[f32], outputs: Range<usize>) {
        let inputs = self.inputs;
        assert!(x.len().is_multiple_of(inputs), "x is not whole rows");
        assert!(
            outputs.start <= outputs.end && outputs.end <= self.outputs,
            "outputs outside the weight"
        );
        assert!(
            outputs.start.is_multiple_of(self.column_step()),
            "outputs start between two panels"
        );
        assert_eq!(out.len(), x.len() / inputs * outputs.len(), "output size");
        #[cfg(target_arch = "x86_64")]
        match self.kernel {
            // SAFETY: `for_kernel` found AVX2, FMA and F16C on this CPU.
            #[allow(unsafe_code)]
            HalfKernel::Avx2 => unsafe {
                avx2::add_products(out, x, &self.values, inputs, outputs);
            },
            // SAFETY: `for_kernel` found AVX-512 on this CPU.
            #[allow(unsafe_code)]
            HalfKernel::Avx512 => unsafe {
                avx512::add_products(out, x, &self.values, inputs, outputs);
            },
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("no kernel off x86-64");
    }

    /// The weight as the kernels read it, widened by the definition of the
    /// format, in PyTorch's layout.
    #[cfg(test)]
    pub(crate) fn widened(&self) -> Vec<f32> {
        let mut weight = vec![0.0; self.outputs * self.inputs];
        for (o, row) in weight.chunks_mut(self.inputs).enumerate() {
            for (k, value) in row.iter_mut().enumerate() {
                let at = match self.kernel {
                    HalfKernel::Avx2 => o * self.inputs + k,
                    HalfKernel::Avx512 => ((o / PANEL) * self.inputs + k) * PANEL + o % PANEL,
                };
                *value = tests::widen(self.values[at]);
            }
        }
        weight
    }
}

/// `rounded` (`outputs × inputs`) in panels of [`PANEL`] outputs: panel `p`
/// holds, input by input, the values of outputs `32p..32p + 32` (zeros past the
/// last output).
fn panels(rounded: &[u16], inputs: usize, outputs: usize) -> Vec<u16> {
    let mut values = vec![0u16; outputs.div_ceil(PANEL) * inputs * PANEL];
    for (output, row) in rounded.chunks_exact(inputs).enumerate() {
        let (panel, lane) = (output / PANEL, output % PANEL);
        for (input, &value) in row.iter().enumerate() {
            values[(panel * inputs + input) * PANEL + lane] = value;
        }
    }
    values
}

/// [`HalfKernel::Avx2`]: blocks of two weight rows by four rows of `x`, eight
/// lanes at a time; each pair of weight rows is read once while it stays in the
/// first-level cache for every row of `x`. Also the conversion to half precision.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256, _MM_FROUND_TO_NEAREST_INT, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32,
        _mm_loadu_si128, _mm_movehl_ps, _mm_shuffle_ps, _mm_storeu_si128, _mm256_castps256_ps128,
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps,
    };
    use std::ops::Range;

    const LANES: usize = 8;
    const ROWS: usize = 4;
    const OUTPUTS: usize = 2;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c")
    }

    /// `weight` rounded to half precision (to nearest).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn to_half(weight: &[f32]) -> Vec<u16> {
        let mut half = vec![0u16; weight.len()];
        let whole = weight.len() - weight.len() % LANES;
        for (from, to) in weight[..whole]
            .chunks_exact(LANES)
            .zip(half.chunks_exact_mut(LANES))
        {
            let narrowed = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load(from));
            // SAFETY: `to` holds eight 16-bit values, the 16 bytes stored; the
            // store needs no alignment.
            #[allow(unsafe_code)]
            unsafe {
                _mm_storeu_si128(to.as_mut_ptr().cast::<__m128i>(), narrowed);
            }
        }
        for (i, &value) in weight.iter().enumerate().skip(whole) {
            let mut eight = [0.0f32; LANES];
            eight[0] = value;
            let narrowed = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load(&eight));
            let mut out = [0u16; LANES];
            // SAFETY: as above, into a local array of eight.
            #[allow(unsafe_code)]
            unsafe {
                _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), narrowed);
            }
            half[i] = out[0];
        }
        half
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn add_products(
        out: &mut [f32],
        x: &[f32],
        weight: &[u16],
        inputs: usize,
        outputs: Range<usize>,
    ) {
        let rows = x.len() / inputs;
        let width = outputs.len();
        for output in outputs.clone().step_by(OUTPUTS) {
            let w = &weight[output * inputs..(output + OUTPUTS).min(outputs.end) * inputs];
            let column = output - outputs.start;
            for row in (0..rows).step_by(ROWS) {
                let x = &x[row * inputs..(row + ROWS).min(rows) * inputs];
                let out = &mut out[row * width..(row + ROWS).min(rows) * width];
                match (x.len() / inputs, w.len() / inputs) {
                    (4, 2) => block::<4, 2>(out, width, column, x, w, inputs),
                    (4, _) => block::<4, 1>(out, width, column, x, w, inputs),
                    (3, 2) => block::<3, 2>(out, width, column, x, w, inputs),
                    (3, _) => block::<3, 1>(out, width, column, x, w, inputs),
                    (2, 2) => block::<2, 2>(out, width, column, x, w, inputs),
                    (2, _) => block::<2, 1>(out, width, column, x, w, inputs),
                    (_, 2) => block::<1, 2>(out, width, column, x, w, inputs),
                    _ => block::<1, 1>(out, width, column, x, w, inputs),
                }
            }
        }
    }

    /// `out[i][column + j] += x[i] · w[j]` for the `R` rows of `x` and the `O`
    /// rows of `w`.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn block<const R: usize, const O: usize>(
        out: &mut [f32],
        width: usize,
        column: usize,
        x: &[f32],
        w: &[u16],
        inputs: usize,
    ) {
        assert!(x.len() >= R * inputs && w.len() >= O * inputs);
        let mut sums = [[_mm256_setzero_ps(); O]; R];
        let whole = inputs - inputs % LANES;
        let (x_at, w_at) = (x.as_ptr(), w.as_ptr());
        for k in (0..whole).step_by(LANES) {
            let mut lanes = [_mm256_setzero_ps(); O];
            for (j, lane) in lanes.iter_mut().enumerate() {
                // SAFETY: `k + LANES <= inputs` and `j < O`, so the eight
                // values read lie in weight row `j`, inside `w` (asserted
                // above); the load needs no alignment.
                #[allow(unsafe_code)]
                let narrow = unsafe { _mm_loadu_si128(w_at.add(j * inputs + k).cast::<__m128i>()) };
                *lane = _mm256_cvtph_ps(narrow);
            }
            for (i, sums) in sums.iter_mut().enumerate() {
                // SAFETY: as above, in row `i < R` of `x`.
                #[allow(unsafe_code)]
                let xs = unsafe { _mm256_loadu_ps(x_at.add(i * inputs + k)) };
                for (sum, lane) in sums.iter_mut().zip(&lanes) {
                    *sum = _mm256_fmadd_ps(xs, *lane, *sum);
                }
            }
        }
        for (i, sums) in sums.iter().enumerate() {
            for (j, sum) in sums.iter().enumerate() {
                let mut total = horizontal_sum(*sum);
                for k in whole..inputs {
                    let mut eight = [0u16; LANES];
                    eight[0] = w[j * inputs + k];
                    let widened = _mm256_castps256_ps128(load_half(&eight));
                    total = x[i * inputs + k].mul_add(_mm_cvtss_f32(widened), total);
                }
                out[i * width + column + j] += total;
            }
        }
    }

    /// Eight values from a slice of eight.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load(eight: &[f32]) -> __m256 {
        assert_eq!(eight.len(), LANES);
        // SAFETY: the slice holds the eight values read (checked above); the
        // load needs no alignment.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_loadu_ps(eight.as_ptr())
        }
    }

    /// Eight half-precision values from a slice of eight, widened.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_half(eight: &[u16]) -> __m256 {
        assert_eq!(eight.len(), LANES);
        // SAFETY: the slice holds the eight values (16 bytes) read (checked
        // above); the load needs no alignment.
        #[allow(unsafe_code)]
        let narrow = unsafe { _mm_loadu_si128(eight.as_ptr().cast::<__m128i>()) };
        _mm256_cvtph_ps(narrow)
    }

    /// The sum of a vector's eight lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn horizontal_sum(v: __m256) -> f32 {
        let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
        let one = _mm_add_ss(pairs, _mm_shuffle_ps::<0b01>(pairs, pairs));
        _mm_cvtss_f32(one)
    }
}

/// [`HalfKernel::Avx512`]: for each panel of 32 outputs, the rows of `x` in
/// near-equal blocks of at most twelve (a question's 15 tokens: 8 and 7); a
/// block's 24 sums stay in registers while the panel's inputs go by.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::PANEL;
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_set1_ps,
        _mm512_setzero_ps, _mm512_storeu_ps,
    };
    use std::ops::Range;

    /// The most rows of `x` in a block: two sums each, 24 of the 32 registers.
    const MAX_ROWS: usize = 12;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx512f")
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn add_products(
        out: &mut [f32],
        x: &[f32],
        panels: &[u16],
        inputs: usize,
        outputs: Range<usize>,
    ) {
        let rows = x.len() / inputs;
        let width = outputs.len();
        let block_rows = rows.div_ceil(rows.div_ceil(MAX_ROWS).max(1)).max(1);
        for first in outputs.clone().step_by(PANEL) {
            let panel = &panels[first / PANEL * inputs * PANEL..][..inputs * PANEL];
            let columns = first - outputs.start..(first + PANEL).min(outputs.end) - outputs.start;
            for row in (0..rows).step_by(block_rows) {
                let here = block_rows.min(rows - row);
                let x = &x[row * inputs..(row + here) * inputs];
                let out = &mut out[row * width..(row + here) * width];
                // One instance of `block` per row count, so its sums stay in registers.
                macro_rules! by_rows {
                    ($($r:literal)*) => {
                        match here {
                            $($r => block::<$r>(out, width, columns.clone(), x, panel, inputs),)*
                            _ => unreachable!("a block has one to twelve rows"),
                        }
                    };
                }
                by_rows!(1 2 3 4 5 6 7 8 9 10 11 12);
            }
        }
    }

    /// `out[i][c] += x[i] · panel's output c - columns.start` for the `R` rows
    /// of `x` and each column `c` in `columns` (at most a panel's width).
    #[target_feature(enable = "avx512f")]
    fn block<const R: usize>(
        out: &mut [f32],
        width: usize,
        columns: Range<usize>,
        x: &[f32],
        panel: &[u16],
        inputs: usize,
    ) {
        assert!(x.len() == R * inputs && panel.len() == inputs * PANEL);
        assert!(columns.len() <= PANEL && columns.end <= width && out.len() == R * width);
        let mut sums = [[_mm512_setzero_ps(); 2]; R];
        let (x_at, w_at) = (x.as_ptr(), panel.as_ptr());
        for k in 0..inputs {
            // SAFETY: `k < inputs`, so the 32 values at `k * PANEL` lie in the
            // panel (asserted above); the loads need no alignment.
            #[allow(unsafe_code)]
            let (low, high) = unsafe {
                (
                    _mm256_loadu_si256(w_at.add(k * PANEL).cast::<__m256i>()),
                    _mm256_loadu_si256(w_at.add(k * PANEL + PANEL / 2).cast::<__m256i>()),
                )
            };
            let (low, high) = (_mm512_cvtph_ps(low), _mm512_cvtph_ps(high));
            for (i, sums) in sums.iter_mut().enumerate() {
                // SAFETY: `i < R` and `k < inputs`: inside `x` (asserted above).
                #[allow(unsafe_code)]
                let value = _mm512_set1_ps(unsafe { *x_at.add(i * inputs + k) });
                sums[0] = _mm512_fmadd_ps(value, low, sums[0]);
                sums[1] = _mm512_fmadd_ps(value, high, sums[1]);
            }
        }
        for (i, sums) in sums.iter().enumerate() {
            let mut lanes = [0.0f32; PANEL];
            let (first, second) = lanes.split_at_mut(PANEL / 2);
            // SAFETY: each half of `lanes` holds the 16 values stored.
            #[allow(unsafe_code)]
            unsafe {
                _mm512_storeu_ps(first.as_mut_ptr(), sums[0]);
                _mm512_storeu_ps(second.as_mut_ptr(), sums[1]);
            }
            let row = &mut out[i * width..(i + 1) * width];
            for (o, lane) in row[columns.clone()].iter_mut().zip(lanes) {
                *o += lane;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A half-precision value widened by the definition of the format (not by
    /// the instruction the kernels use).
    pub(crate) fn widen(half: u16) -> f32 {
        let sign = if half >> 15 == 1 { -1.0 } else { 1.0 };
        let exponent = i32::from((half >> 10) & 0x1f);
        let mantissa = f32::from(half & 0x3ff);
        sign * match exponent {
            0 => mantissa * 2f32.powi(-24),
            31 if mantissa == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            _ => (1024.0 + mantissa) * 2f32.powi(exponent - 25),
        }
    }

    #[test]
    fn half_precision_weights_round_to_nearest() {
        let weight: Vec<f32> = (0..5 * 41).map(|i| (i as f32 * 0.13).sin() * 3.0).collect();
        for kernel in HalfKernel::available() {
            let half = HalfWeight::for_kernel(kernel, &weight, 41);
            for (w, h) in weight.iter().zip(half.widened()) {
                // Half precision keeps 11 significant bits: within 2^-11 relative.
                assert!(
                    (h - w).abs() <= w.abs() * 2f32.powi(-11) + 1e-7,
                    "{kernel:?}: {w}"
                );
            }
        }
    }

    #[test]
    fn every_kernel_s_products_agree_with_the_definition() {
        if HalfKernel::available().is_empty() {
            eprintln!("this CPU lacks AVX2, FMA or F16C: no half-precision weights");
        }
        // 70 outputs: two whole panels and six outputs of a third.
        let outputs_in_all = 70;
        for kernel in HalfKernel::available() {
            for inputs in [1, 7, 8, 9, 16, 24, 33, 41, 48] {
                let weight: Vec<f32> = (0..outputs_in_all * inputs)
                    .map(|i| (i as f32 * 0.29).cos())
                    .collect();
                let half = HalfWeight::for_kernel(kernel, &weight, inputs);
                let widened = half.widened();
                let mut ranges = vec![0..70, 0..32, 32..64, 32..70, 64..70, 64..64];
                if half.column_step() == 1 {
                    ranges.push(5..9);
                }
                // Up to 27 rows: one to three blocks of the AVX-512 kernel.
                for rows in 1..=27 {
                    let x: Vec<f32> = (0..rows * inputs)
                        .map(|i| (i as f32 * 0.37).sin())
                        .collect();
                    for outputs in &ranges {
                        let width = outputs.len();
                        let mut got: Vec<f32> = (0..rows * width).map(|i| i as f32).collect();
                        half.add_products(&mut got, &x, outputs.clone());
                        for r in 0..rows {
                            for (c, o) in outputs.clone().enumerate() {
                                let dot: f32 = (0..inputs)
                                    .map(|i| x[r * inputs + i] * widened[o * inputs + i])
                                    .sum();
                                let want = (r * width + c) as f32 + dot;
                                let g = got[r * width + c];
                                assert!(
                                    (g - want).abs() < 1e-4 * (1.0 + want.abs()),
                                    "{kernel:?}, inputs {inputs}, rows {rows}, output {o}: {g} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
