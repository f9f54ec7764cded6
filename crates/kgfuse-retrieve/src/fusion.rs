//! One fused ranking of nodes: every channel (lexical, graph walk, answers of the
//! generated queries, domain functions, dependency paths, …) ranks its own
//! candidates, and reciprocal rank fusion merges them:
//! `score(node) = sum over channels of weight / (RRF_K + rank)` (rank from 1).
//!
//! Ranks, not scores, are fused because the channels' scores are not comparable
//! (BM25, cosine, path counts). Each fused item keeps its rank in every channel
//! that found it, for the trace.

use std::collections::HashMap;

/// The usual RRF constant (Cormack et al. 2009): damps the weight of the top ranks,
/// so a node several channels agree on beats the top of one channel.
pub(crate) const RRF_K: f32 = 60.0;

/// One channel's candidates, best first.
#[derive(Debug, Clone)]
pub(crate) struct Channel {
    /// Its name in the trace (`lexical`, `walk`, ...).
    pub name: &'static str,
    /// Its weight in the fusion.
    pub weight: f32,
    /// Node IRIs, best first, no repeats needed.
    pub ranked: Vec<String>,
}

impl Channel {
    /// A channel of weight 1.
    pub fn new(name: &'static str, ranked: Vec<String>) -> Self {
        Self {
            name,
            weight: 1.0,
            ranked,
        }
    }
}

/// A node of the fused ranking.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused {
    /// The node.
    pub iri: String,
    /// Its fused score.
    pub score: f32,
    /// Its rank (from 1) in each channel that found it, in channel order.
    pub ranks: Vec<(&'static str, usize)>,
}

impl Fused {
    /// `rrf 0.0325 = lexical #1, walk #4` for the trace.
    pub fn describe(&self) -> String {
        let ranks: Vec<String> = self
            .ranks
            .iter()
            .map(|(channel, rank)| format!("{channel} #{rank}"))
            .collect();
        format!("rrf {:.4} = {}", self.score, ranks.join(", "))
    }
}

/// Fuses the channels: best first, ties broken by IRI so the order is stable.
/// A node listed twice in one channel counts at its first rank.
pub(crate) fn fuse(channels: &[Channel]) -> Vec<Fused> {
    let mut fused: Vec<Fused> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for channel in channels {
        for (position, iri) in channel.ranked.iter().enumerate() {
            let slot = *index.entry(iri.as_str()).or_insert_with(|| {
                fused.push(Fused {
                    iri: iri.clone(),
                    score: 0.0,
                    ranks: Vec::new(),
                });
                fused.len() - 1
            });
            let item = &mut fused[slot];
            if item.ranks.iter().any(|(name, _)| *name == channel.name) {
                continue;
            }
            let rank = position + 1;
            #[allow(clippy::cast_precision_loss)]
            let share = channel.weight / (RRF_K + rank as f32);
            item.score += share;
            item.ranks.push((channel.name, rank));
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.iri.cmp(&b.iri)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(name: &'static str, ranked: &[&str]) -> Channel {
        Channel::new(name, ranked.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn agreement_beats_the_top_of_one_channel() {
        let fused = fuse(&[
            channel("lexical", &["a", "b", "c"]),
            channel("walk", &["d", "c", "b"]),
        ]);
        let order: Vec<&str> = fused.iter().map(|f| f.iri.as_str()).collect();
        // b (#2, #3) and c (#3, #2) tie and beat a and d (one channel each).
        assert_eq!(order, ["b", "c", "a", "d"]);
        assert_eq!(fused[0].ranks, [("lexical", 2), ("walk", 3)]);
        assert!(fused[0].describe().starts_with("rrf 0.03"));
        assert!(fused[0].describe().ends_with("lexical #2, walk #3"));
    }

    #[test]
    fn weights_scale_a_channel_and_repeats_count_once() {
        let mut strong = channel("answers", &["x", "x"]);
        strong.weight = 3.0;
        let fused = fuse(&[channel("lexical", &["y", "z"]), strong]);
        assert_eq!(fused[0].iri, "x");
        assert_eq!(fused[0].ranks, [("answers", 1)]);
        assert!((fused[0].score - 3.0 / 61.0).abs() < 1e-6);
    }

    #[test]
    fn no_channels_no_nodes() {
        assert!(fuse(&[]).is_empty());
        assert!(fuse(&[channel("empty", &[])]).is_empty());
    }
}
