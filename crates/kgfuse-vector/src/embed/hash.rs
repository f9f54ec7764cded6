//! Deterministic feature-hashing embedder.
//!
//! Text is split into words (also at `snake_case` and `camelCase` boundaries and
//! lower-cased). Features are the words (weight 1), adjacent word pairs (0.5) and
//! the character 3- to 5-grams of each word padded with `<` `>` (0.5 shared across
//! a word's n-grams, so long words do not dominate). Each feature is hashed with
//! 64-bit FNV-1a to a dimension and a sign, and the sum is scaled to unit length.
//! Same text, same vector, on every machine; similar spellings share n-grams.

use super::{EmbedError, Embedder, normalize};
use kgfuse_core::text::identifier_words;

/// Feature-hashing embedder with no model.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dimension: usize,
}

impl HashEmbedder {
    /// A hashing embedder producing `dimension`-long vectors (384 matches MiniLM).
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(1),
        }
    }

    /// The embedding of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0f32; self.dimension];
        let words = identifier_words(text);
        let mut padded: Vec<char> = Vec::new();
        for word in &words {
            self.add(&mut vector, Fnv::new().str("w:").str(word), 1.0);
            padded.clear();
            padded.push('<');
            padded.extend(word.chars());
            padded.push('>');
            let grams: usize = (3..=5).map(|n| padded.len().saturating_sub(n - 1)).sum();
            #[allow(clippy::cast_precision_loss)]
            let weight = 0.5 / (grams.max(1) as f32).sqrt();
            for n in 3..=5 {
                for gram in padded.windows(n) {
                    let mut hash = Fnv::new().str("c:");
                    for c in gram {
                        hash = hash.char(*c);
                    }
                    self.add(&mut vector, hash, weight);
                }
            }
        }
        for pair in words.windows(2) {
            let hash = Fnv::new().str("b:").str(&pair[0]).str(" ").str(&pair[1]);
            self.add(&mut vector, hash, 0.5);
        }
        if vector.iter().all(|x| *x == 0.0) {
            // No word at all: a fixed unit vector keeps cosine distances defined.
            vector[0] = 1.0;
        }
        normalize(&mut vector);
        vector
    }

    /// Adds a feature, given its hash, to its dimension with its sign.
    fn add(&self, vector: &mut [f32], feature: Fnv, weight: f32) {
        let h = feature.0;
        let index = (h % self.dimension as u64) as usize;
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        vector[index] += sign * weight;
    }
}

/// 64-bit FNV-1a over a feature's text, fed piece by piece (the same hash as of
/// the pieces joined, without building the string).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(mut self, bytes: &[u8]) -> Self {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    fn str(self, s: &str) -> Self {
        self.bytes(s.as_bytes())
    }

    fn char(self, c: char) -> Self {
        self.bytes(c.encode_utf8(&mut [0; 4]).as_bytes())
    }
}

impl Embedder for HashEmbedder {
    fn kind(&self) -> &'static str {
        "hash"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::math::cosine;

    /// The embedder as first written, building each feature's string: the
    /// vectors of stores embedded then must not change.
    fn embed_by_strings(dimension: usize, text: &str) -> Vec<f32> {
        fn fnv1a(bytes: &[u8]) -> u64 {
            bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
                (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        }
        let add = |vector: &mut [f32], feature: &str, weight: f32| {
            let h = fnv1a(feature.as_bytes());
            let index = (h % dimension as u64) as usize;
            vector[index] += if h >> 63 == 0 { weight } else { -weight };
        };
        let mut vector = vec![0f32; dimension];
        let words = identifier_words(text);
        for word in &words {
            add(&mut vector, &format!("w:{word}"), 1.0);
            let padded: Vec<char> = format!("<{word}>").chars().collect();
            let grams: Vec<String> = (3..=5)
                .flat_map(|n| padded.windows(n).map(|w| w.iter().collect::<String>()))
                .collect();
            let weight = 0.5 / (grams.len().max(1) as f32).sqrt();
            for gram in grams {
                add(&mut vector, &format!("c:{gram}"), weight);
            }
        }
        for pair in words.windows(2) {
            add(&mut vector, &format!("b:{} {}", pair[0], pair[1]), 0.5);
        }
        if vector.iter().all(|x| *x == 0.0) {
            vector[0] = 1.0;
        }
        normalize(&mut vector);
        vector
    }

    #[test]
    fn vectors_are_those_of_the_string_built_features() {
        let texts = [
            "",
            "a",
            "ab",
            "decode_signal(getMessageByName, CAN-FD 2.0)",
            "Größe der Straße — naïve café, 東京 and 🚀 rockets",
            "UndergraduateStudent123 takes GraduateCourse7",
            "def parse(self, data: bytes) -> Message:\n    return Message(data)",
        ];
        for dimension in [384, 7] {
            let embedder = HashEmbedder::new(dimension);
            for text in texts {
                assert_eq!(
                    embedder.embed_one(text),
                    embed_by_strings(dimension, text),
                    "{text:?} at {dimension} dimensions"
                );
            }
        }
    }

    #[test]
    fn splits_identifiers_into_words() {
        assert_eq!(
            identifier_words("decode_signal(getMessageByName, CAN-FD 2.0)"),
            [
                "decode", "signal", "get", "message", "by", "name", "can", "fd", "2", "0"
            ]
        );
    }

    #[test]
    fn is_deterministic_unit_length_and_meaningful() {
        let e = HashEmbedder::new(384);
        let a = e.embed_one("decode the engine speed signal from a CAN frame");
        assert_eq!(
            a,
            e.embed_one("decode the engine speed signal from a CAN frame")
        );
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let near = e.embed_one("decode_signal: engine speed from CAN frames");
        let far = e.embed_one("employees may work remotely two days per week");
        assert!(cosine(&a, &near) > cosine(&a, &far) + 0.2);
        let empty = e.embed_one("  ...  ");
        assert!((empty.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
    }
}
