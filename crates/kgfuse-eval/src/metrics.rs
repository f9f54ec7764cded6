//! Ranking metrics and the token estimate.

/// 1 / rank of the first relevant item (1-based), 0 when there is none.
pub fn reciprocal_rank(relevant: &[bool]) -> f64 {
    relevant.iter().position(|r| *r).map_or(0.0, |p| {
        #[allow(clippy::cast_precision_loss)]
        let rank = (p + 1) as f64;
        1.0 / rank
    })
}

/// Binary-relevance nDCG at `k`: DCG of the ranking over the DCG of an ideal one
/// with `gold` relevant items first. At most 1 (a ranking that repeats a gold item
/// under two IRIs cannot exceed the ideal).
pub fn ndcg(relevant: &[bool], gold: usize, k: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = relevant
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..gold.min(k)).map(gain).sum();
    if ideal == 0.0 {
        0.0
    } else {
        (dcg / ideal).min(1.0)
    }
}

/// A model-free token estimate: every run of letters or digits is one token, and
/// every other non-space character is one. BPE tokenizers split long words further,
/// so this undercounts prose a little and code not at all in the same way; it is
/// the same for every strategy, which is what a comparison needs.
pub fn approx_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut in_word = false;
    for ch in text.chars() {
        if ch.is_alphanumeric() || ch == '_' {
            if !in_word {
                tokens += 1;
                in_word = true;
            }
        } else {
            in_word = false;
            if !ch.is_whitespace() {
                tokens += 1;
            }
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_match_hand_computed_values() {
        assert!((reciprocal_rank(&[false, false, true]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(reciprocal_rank(&[false, false]), 0.0);
        assert!((ndcg(&[true, true], 2, 5) - 1.0).abs() < 1e-12);
        // One of two gold items, at rank 2: (1/log2 3) / (1 + 1/log2 3).
        let expected = (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&[false, true, false], 2, 5) - expected).abs() < 1e-12);
        assert_eq!(ndcg(&[false, true], 2, 1), 0.0);
        assert_eq!(approx_tokens("def f(x): return x_1 + 2"), 10);
    }
}
