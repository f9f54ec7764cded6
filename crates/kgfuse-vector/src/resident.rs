//! A resident copy of a small table, for exact searches without a LanceDB query.
//!
//! An exact LanceDB search plans and runs a DataFusion query each time: at 2,000
//! rows that costs several times the scan itself (BENCHMARKS.md, "The floor of a
//! `flat` retrieval"). A table whose vectors fit the resident budget
//! (`[memory] resident_vectors_mib` in kgfuse.toml, 20,480 rows of 384 values by
//! default) and that has no vector index is therefore read once per table version into memory (IRIs,
//! kinds, texts, graphs and one contiguous array of vectors) and searched there
//! exactly, with the same cosine LanceDB computes. A write makes a new version:
//! the next search reads the table again. LanceDB stays the store of record;
//! bigger or indexed tables are searched by LanceDB as before.

use crate::kinds::KindFilter;
use crate::table::rank_order;
use crate::{VectorError, VectorHit};
use kgfuse_core::math::dot;
use std::collections::HashSet;

/// One table version's rows, in table order.
#[derive(Debug, Default)]
pub(crate) struct Resident {
    dimension: usize,
    iris: Vec<String>,
    kinds: Vec<String>,
    texts: Vec<String>,
    graphs: Vec<String>,
    /// Row-major, `dimension` values per row.
    vectors: Vec<f32>,
    /// Each row's Euclidean norm.
    norms: Vec<f32>,
}

impl Resident {
    /// An empty copy for vectors of `dimension` values.
    pub(crate) fn new(dimension: usize) -> Self {
        Self {
            dimension,
            ..Self::default()
        }
    }

    /// Appends one row (in table order).
    pub(crate) fn push(
        &mut self,
        iri: &str,
        kind: &str,
        text: &str,
        graph: &str,
        vector: &[f32],
    ) -> Result<(), VectorError> {
        if vector.len() != self.dimension {
            return Err(VectorError::Invalid(format!(
                "{iri}: stored vector has {} values, expected {}",
                vector.len(),
                self.dimension
            )));
        }
        self.iris.push(iri.to_owned());
        self.kinds.push(kind.to_owned());
        self.texts.push(text.to_owned());
        self.graphs.push(graph.to_owned());
        self.vectors.extend_from_slice(vector);
        self.norms.push(norm(vector));
        Ok(())
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.iris.len()
    }

    fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dimension..(row + 1) * self.dimension]
    }

    /// The `k` rows nearest to `query` by cosine among those `keep` admits, best
    /// first, ties by IRI (the order [`crate::VectorStore::search`] returns).
    fn nearest(&self, query: &[f32], k: usize, keep: impl Fn(usize) -> bool) -> Vec<VectorHit> {
        let query_norm = norm(query);
        let mut scored: Vec<(f32, usize)> = (0..self.len())
            .filter(|&row| keep(row))
            .map(|row| (self.cosine(query, query_norm, row), row))
            .collect();
        let better = |a: &(f32, usize), b: &(f32, usize)| {
            rank_order(a.0, &self.iris[a.1], b.0, &self.iris[b.1])
        };
        if k < scored.len() {
            if k == 0 {
                return Vec::new();
            }
            scored.select_nth_unstable_by(k - 1, better);
            scored.truncate(k);
        }
        scored.sort_by(better);
        scored
            .into_iter()
            .map(|(score, row)| VectorHit {
                iri: self.iris[row].clone(),
                kind: self.kinds[row].clone(),
                text: self.texts[row].clone(),
                graph: self.graphs[row].clone(),
                score,
            })
            .collect()
    }

    /// Cosine similarity of `query` (of norm `query_norm`) and a row; 0 when
    /// either is the zero vector.
    fn cosine(&self, query: &[f32], query_norm: f32, row: usize) -> f32 {
        cosine_of(dot(query, self.vector(row)), query_norm, self.norms[row])
    }

    /// [`crate::VectorStore::search`] over this copy.
    pub(crate) fn search(&self, query: &[f32], k: usize, filter: KindFilter<'_>) -> Vec<VectorHit> {
        self.nearest(query, k, |row| filter.admits(&self.kinds[row]))
    }

    /// The `k` rows among `iris` nearest to `query`, best first.
    pub(crate) fn nearest_among(&self, query: &[f32], iris: &[String], k: usize) -> Vec<VectorHit> {
        let wanted: HashSet<&str> = iris.iter().map(String::as_str).collect();
        self.nearest(query, k, |row| wanted.contains(self.iris[row].as_str()))
    }

    /// [`crate::VectorStore::vectors_of`] over this copy: table order.
    pub(crate) fn vectors_of(&self, iris: &[String]) -> Vec<(String, Vec<f32>)> {
        let wanted: HashSet<&str> = iris.iter().map(String::as_str).collect();
        (0..self.len())
            .filter(|&row| wanted.contains(self.iris[row].as_str()))
            .map(|row| (self.iris[row].clone(), self.vector(row).to_vec()))
            .collect()
    }
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// The cosine from a dot product and the two norms; 0 when a norm is 0.
fn cosine_of(dot: f32, query_norm: f32, row_norm: f32) -> f32 {
    let denominator = query_norm * row_norm;
    if denominator == 0.0 {
        return 0.0;
    }
    dot / denominator
}

/// The score an exact search of the table gives a row of `vector` for `query`
/// (its cosine, 0 for a zero vector), to the bit: a copy of a few rows kept
/// elsewhere ranks as the table would rank them.
pub fn exact_score(query: &[f32], vector: &[f32]) -> f32 {
    cosine_of(dot(query, vector), norm(query), norm(vector))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy() -> Resident {
        let mut resident = Resident::new(3);
        for (iri, kind, vector) in [
            ("urn:a", "Function", [1.0, 0.0, 0.0]),
            ("urn:b", "Case", [0.0, 2.0, 0.0]),
            ("urn:c", "Function", [1.0, 1.0, 0.0]),
            ("urn:d", "owl:Class", [0.0, 0.0, 0.0]),
            ("urn:e", "Function", [1.0, 1.0, 0.0]),
        ] {
            resident
                .push(iri, kind, "text", "urn:g", &vector)
                .expect("row");
        }
        resident
    }

    #[test]
    fn nearest_rows_by_cosine_with_ties_by_iri() {
        let resident = copy();
        let hits = resident.search(&[2.0, 0.0, 0.0], 3, KindFilter::Any);
        let found: Vec<(&str, f32)> = hits.iter().map(|h| (h.iri.as_str(), h.score)).collect();
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(found[0], ("urn:a", 1.0));
        assert_eq!(found[1].0, "urn:c");
        assert_eq!(found[2].0, "urn:e", "a tie goes to the smaller IRI");
        assert!((found[1].1 - half).abs() < 1e-6);
        let only = resident.search(&[0.0, 1.0, 0.0], 10, KindFilter::OneOf(&["Case"]));
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].iri, "urn:b");
        let zero = resident.search(&[0.0, 0.0, 1.0], 10, KindFilter::NoPrefix(&["Func"]));
        assert_eq!(
            zero.iter().map(|h| h.score).collect::<Vec<_>>(),
            vec![0.0, 0.0],
            "the zero vector and an orthogonal row both score 0"
        );
        assert!(
            resident
                .search(&[1.0, 0.0, 0.0], 0, KindFilter::Any)
                .is_empty()
        );
    }

    #[test]
    fn among_and_vectors_of_keep_to_the_given_iris() {
        let resident = copy();
        let among = resident.nearest_among(
            &[0.0, 1.0, 0.0],
            &["urn:a".into(), "urn:b".into(), "urn:zz".into()],
            3,
        );
        assert_eq!(
            among.iter().map(|h| h.iri.as_str()).collect::<Vec<_>>(),
            ["urn:b", "urn:a"]
        );
        let vectors = resident.vectors_of(&["urn:c".into(), "urn:a".into()]);
        assert_eq!(
            vectors,
            vec![
                ("urn:a".to_owned(), vec![1.0, 0.0, 0.0]),
                ("urn:c".to_owned(), vec![1.0, 1.0, 0.0])
            ],
            "table order"
        );
        let mut wrong = Resident::new(2);
        assert!(wrong.push("urn:x", "K", "t", "g", &[1.0]).is_err());
    }
}
