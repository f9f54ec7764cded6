//! The few numeric helpers every part shares: vector similarity and quantiles.

/// The dot product of two vectors (the cosine when both have unit length); over
/// the shorter length when they differ.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight partial sums: the compiler keeps them in vector registers.
    let mut sums = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Cosine similarity of two vectors; 0 when either is the zero vector.
///
/// ```
/// use kgfuse_core::math::cosine;
/// assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
/// assert_eq!(cosine(&[1.0, 0.0], &[0.0, 0.0]), 0.0);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The `p` quantile (0 to 1) of sorted values by nearest rank; `None` for none.
///
/// ```
/// use kgfuse_core::math::percentile;
/// assert_eq!(percentile(&[1, 2, 3, 4, 5], 0.5), Some(3));
/// assert_eq!(percentile(&[1, 2, 3, 4, 5], 0.95), Some(5));
/// assert_eq!(percentile::<u8>(&[], 0.5), None);
/// ```
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = (sorted.len().checked_sub(1)? as f64 * p.clamp(0.0, 1.0)).round() as usize;
    sorted.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_products_cover_the_tail() {
        let a: Vec<f32> = (1..=11).map(|i| i as f32).collect();
        let expected: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), expected);
    }

    #[test]
    fn the_lane_wise_dot_product_matches_the_plain_sum() {
        let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..21).map(|i| 1.0 - i as f32 * 0.25).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-3);
        assert_eq!(dot(&[], &[]), 0.0);
    }
}
