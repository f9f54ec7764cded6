//! Spherical K-means over unit vectors, deterministic: the same input gives the
//! same clusters on every machine and run (no random seeding).
//!
//! Seeding is farthest-point: the first centre is the point nearest the mean, each
//! next one the point farthest (lowest best cosine) from the centres so far; ties go
//! to the lower index, and callers pass points sorted by IRI. Then Lloyd iterations
//! with cosine similarity until no assignment changes (at most `MAX_ITERATIONS`).

use kgfuse_core::math::dot;

/// Lloyd iterations at most; small packages converge in a handful.
const MAX_ITERATIONS: usize = 50;

/// The unit-length mean of `vectors`; `None` when there are none or they cancel out.
pub(crate) fn unit_mean<'a>(vectors: impl IntoIterator<Item = &'a [f32]>) -> Option<Vec<f32>> {
    let mut sum: Vec<f32> = Vec::new();
    for v in vectors {
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    let norm = dot(&sum, &sum).sqrt();
    (norm > f32::EPSILON).then(|| sum.into_iter().map(|s| s / norm).collect())
}

/// A rule of thumb for the number of clusters: about sqrt(n / 2), at least 1, at
/// most `max`.
pub(crate) fn cluster_count(points: usize, max: usize) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let k = ((points as f64 / 2.0).sqrt().round() as usize).max(1);
    k.min(max.max(1)).min(points.max(1))
}

/// Cluster index of every point, with `k` clusters (fewer when there are fewer
/// distinct points).
pub(crate) fn kmeans(points: &[&[f32]], k: usize) -> Vec<usize> {
    if points.is_empty() {
        return Vec::new();
    }
    let k = k.clamp(1, points.len());
    let mut centres = seed(points, k);
    let mut assignment = vec![usize::MAX; points.len()];
    for _ in 0..MAX_ITERATIONS {
        let mut changed = false;
        for (i, point) in points.iter().enumerate() {
            let best = nearest(point, &centres);
            if assignment[i] != best {
                assignment[i] = best;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        for (c, centre) in centres.iter_mut().enumerate() {
            let members = points
                .iter()
                .zip(&assignment)
                .filter(|(_, a)| **a == c)
                .map(|(p, _)| *p);
            // An emptied cluster keeps its centre.
            if let Some(mean) = unit_mean(members) {
                *centre = mean;
            }
        }
    }
    assignment
}

fn nearest(point: &[f32], centres: &[Vec<f32>]) -> usize {
    let mut best = (0, f32::NEG_INFINITY);
    for (c, centre) in centres.iter().enumerate() {
        let similarity = dot(point, centre);
        if similarity > best.1 {
            best = (c, similarity);
        }
    }
    best.0
}

fn seed(points: &[&[f32]], k: usize) -> Vec<Vec<f32>> {
    let Some(mean) = unit_mean(points.iter().copied()) else {
        return points.iter().take(k).map(|p| p.to_vec()).collect();
    };
    let first = nearest(
        &mean,
        &points.iter().map(|p| p.to_vec()).collect::<Vec<_>>(),
    );
    let mut centres = vec![points[first].to_vec()];
    let mut closest: Vec<f32> = points.iter().map(|p| dot(p, points[first])).collect();
    while centres.len() < k {
        let mut far = (0, f32::INFINITY);
        for (i, similarity) in closest.iter().enumerate() {
            if *similarity < far.1 {
                far = (i, *similarity);
            }
        }
        let next = points[far.0];
        for (i, point) in points.iter().enumerate() {
            closest[i] = closest[i].max(dot(point, next));
        }
        centres.push(next.to_vec());
    }
    centres
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = dot(v, v).sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn separates_two_groups_the_same_way_every_time() {
        let raw = [
            unit(&[1.0, 0.1, 0.0]),
            unit(&[0.9, 0.0, 0.1]),
            unit(&[0.0, 1.0, 0.1]),
            unit(&[0.1, 0.9, 0.0]),
            unit(&[1.0, 0.0, 0.05]),
        ];
        let points: Vec<&[f32]> = raw.iter().map(Vec::as_slice).collect();
        let first = kmeans(&points, 2);
        assert_eq!(first[0], first[1]);
        assert_eq!(first[0], first[4]);
        assert_eq!(first[2], first[3]);
        assert_ne!(first[0], first[2]);
        assert_eq!(kmeans(&points, 2), first);
    }

    #[test]
    fn cluster_count_grows_slowly_and_is_bounded() {
        assert_eq!(cluster_count(1, 8), 1);
        assert_eq!(cluster_count(10, 8), 2);
        assert_eq!(cluster_count(50, 8), 5);
        assert_eq!(cluster_count(10_000, 8), 8);
        assert_eq!(kmeans(&[], 3), Vec::<usize>::new());
    }
}
