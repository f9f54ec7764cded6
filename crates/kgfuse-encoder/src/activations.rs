//! The element-wise parts of the forward pass, GELU and softmax, written so the
//! compiler turns their loops into vector instructions.
//!
//! Both spend their time in `exp`. The C library's `expf` is one call per
//! element, which no loop around it can vectorise; profiled on a batch of
//! documents (`perf record`, the 1,910 peer texts), `gelu` and `expf` were 16% of
//! the samples. Here `exp` is a short polynomial with no branches and no calls,
//! and each loop is compiled twice: for the baseline CPU (four lanes) and, chosen
//! at run time, for AVX2 with FMA (eight).

/// `e^x` to within a few units in the last place, for `x` in about
/// `[-87, 88]` (outside it, the value at the nearer end).
///
/// Cody and Waite's reduction `x = n·ln 2 + r` with `|r| <= ln 2 / 2`, then
/// Cephes' degree-6 polynomial for `e^r`, then `2^n` written into the exponent
/// bits. No branches, no calls: a loop of these vectorises.
#[inline(always)]
#[allow(clippy::excessive_precision)]
fn exp(x: f32) -> f32 {
    /// Adding then subtracting 1.5·2²³ rounds a float below 2²² to an integer.
    const ROUND: f32 = 12_582_912.0;
    const LN2_HIGH: f32 = 0.693_359_375;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let p = 1.987_569_150_0e-4;
    let p = p * r + 1.398_199_950_7e-3;
    let p = p * r + 8.333_451_907_3e-3;
    let p = p * r + 4.166_579_589_4e-2;
    let p = p * r + 1.666_666_545_9e-1;
    let p = p * r + 5.000_000_120_1e-1;
    let e_r = p * r * r + r + 1.0;
    // `shifted` lies where floats are one apart, so its bits count up with `n`
    // (a whole number in [-126, 127]): `2^n` is `n + 127` in the exponent field.
    // No conversion of a float to an integer, whose saturation would not vectorise.
    let exponent = shifted
        .to_bits()
        .wrapping_sub(ROUND.to_bits())
        .wrapping_add(127)
        << 23;
    e_r * f32::from_bits(exponent)
}

/// BERT's exact GELU, `x · Φ(x)`, with `erf` from Abramowitz & Stegun 7.1.26
/// (absolute error below 1.5e-7, under float32 resolution here). The
/// coefficients are written as published.
#[inline(always)]
#[allow(clippy::excessive_precision)]
fn gelu(x: f32) -> f32 {
    let z = x.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    // Φ(-|x|) = (1 - erf(|x| / √2)) / 2.
    let tail = 0.5 * poly * exp(-z * z);
    let phi = if x < 0.0 { tail } else { 1.0 - tail };
    x * phi
}

/// Lanes of the partial sums in [`sum_in_lanes`].
const SUM_LANES: usize = 8;

/// The sum of `term(v)` over `values`, in [`SUM_LANES`] partial sums: the
/// compiler keeps the order of a plain sum, one addition after the other.
#[inline(always)]
pub(crate) fn sum_in_lanes(values: &[f32], term: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; SUM_LANES];
    let mut chunks = values.chunks_exact(SUM_LANES);
    for chunk in &mut chunks {
        lanes
            .iter_mut()
            .zip(chunk)
            .for_each(|(sum, v)| *sum += term(*v));
    }
    let rest: f32 = chunks.remainder().iter().map(|v| term(*v)).sum();
    lanes.iter().sum::<f32>() + rest
}

/// Softmax of one row of attention scores, in place.
#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    row.iter_mut().for_each(|v| *v = exp(*v - max));
    let inverse = 1.0 / sum_in_lanes(row, |v| v);
    row.iter_mut().for_each(|v| *v *= inverse);
}

/// Replaces every value by its GELU.
pub(crate) fn gelu_all(values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide::available() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has the features `wide` is compiled for (checked above).
        unsafe {
            wide::gelu_all(values);
        }
        return;
    }
    values.iter_mut().for_each(|v| *v = gelu(*v));
}

/// Softmax of each row of `width` attention scores, in place.
pub(crate) fn softmax_rows(scores: &mut [f32], width: usize) {
    #[cfg(target_arch = "x86_64")]
    if wide::available() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has the features `wide` is compiled for (checked above).
        unsafe {
            wide::softmax_rows(scores, width);
        }
        return;
    }
    scores.chunks_mut(width).for_each(softmax);
}

/// The same loops compiled for AVX2 with FMA.
#[cfg(target_arch = "x86_64")]
mod wide {
    /// Whether this CPU runs the loops below.
    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn gelu_all(values: &mut [f32]) {
        values.iter_mut().for_each(|v| *v = super::gelu(*v));
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn softmax_rows(scores: &mut [f32], width: usize) {
        scores.chunks_mut(width).for_each(super::softmax);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_a_few_ulps_of_the_c_library_s() {
        let mut worst = 0.0f32;
        for i in -87_000..88_000 {
            #[allow(clippy::cast_precision_loss)]
            let x = i as f32 / 1_000.0 + 0.000_37;
            let relative = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(relative);
        }
        assert!(worst < 4.0 * f32::EPSILON, "worst relative error {worst}");
        let tiny = exp(-1_000.0);
        assert!(tiny > 0.0 && tiny < 1e-37, "clamped below: {tiny}");
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn gelu_matches_the_erf_definition() {
        // Φ(x) at a few points, from tables of the standard normal distribution.
        for (x, phi) in [
            (0.0f32, 0.5f32),
            (1.0, 0.841_344_7),
            (-1.0, 0.158_655_3),
            (2.5, 0.993_790_3),
            (-12.0, 0.0),
        ] {
            let mut value = [x];
            gelu_all(&mut value);
            assert!(
                (value[0] - x * phi).abs() < 1e-6,
                "gelu({x}) = {}",
                value[0]
            );
            assert!((gelu(x) - x * phi).abs() < 1e-6, "baseline gelu({x})");
        }
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        // 19 scores per row: two whole groups of partial sums and a remainder.
        #[allow(clippy::cast_precision_loss)]
        let mut rows: Vec<f32> = (0..38).map(|i| ((i * 7) % 19) as f32 * 0.9 - 4.0).collect();
        let scores = rows.clone();
        softmax_rows(&mut rows, 19);
        for (row, scores) in rows.chunks(19).zip(scores.chunks(19)) {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-6, "sum {sum}");
            let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let total: f64 = scores.iter().map(|s| f64::from(s - max).exp()).sum();
            for (p, s) in row.iter().zip(scores) {
                let expected = f64::from(s - max).exp() / total;
                assert!(
                    (f64::from(*p) - expected).abs() < 1e-6,
                    "{p} against {expected}"
                );
            }
        }
    }
}
