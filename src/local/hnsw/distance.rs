//! The distances the HNSW builder (hnsw_rs) compares vectors with, and the order of
//! cosines in a heap.

use hnsw_rs::prelude::Distance;

use crate::model::metric::{dot, dot_i8, quantize};

/// A cosine (or a distance) ordered by `total_cmp`, for heaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cosine(pub(crate) f32);

impl Eq for Cosine {}

impl PartialOrd for Cosine {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cosine {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The bytes at the head of a [`graph_code`]: its codes' squared norm.
const NORM_BYTES: usize = 4;

/// Appends the code the graph's builder holds for a normalised `row`: the squared norm
/// of its 8-bit [`quantize`] codes, as a `u32` (little-endian, four bytes), then the
/// codes, `row.len() + 4` in all. hnsw_rs's points are slices of one type, so the norm
/// travels in the slice; [`CodeDistance`] reads it back.
pub(crate) fn graph_code(row: &[f32], out: &mut Vec<i8>) {
    let at = out.len();
    out.extend([0; NORM_BYTES]);
    quantize(row, out);
    let codes = &out[at + NORM_BYTES..];
    // At most 127² a dimension: a row of up to 266,000 dimensions fits.
    let norm = u32::try_from(dot_i8(codes, codes)).unwrap_or(u32::MAX);
    for (slot, byte) in out[at..at + NORM_BYTES].iter_mut().zip(norm.to_le_bytes()) {
        *slot = byte as i8;
    }
}

/// The length of the [`graph_code`] of a row of `dim` dimensions.
pub(crate) const fn graph_code_len(dim: usize) -> usize {
    dim + NORM_BYTES
}

/// A [`graph_code`]'s squared norm and codes (`None` if it is too short to be one).
fn split_graph_code(code: &[i8]) -> Option<(u32, &[i8])> {
    let (head, codes) = code.split_first_chunk::<NORM_BYTES>()?;
    Some((u32::from_le_bytes(head.map(|b| b as u8)), codes))
}

/// The graph builder's distance: `1 - cosine` of two [`graph_code`]s' 8-bit codes, in
/// `[0, 2]`: within about 0.01 of the vectors' own at 384 dimensions, and 0 exactly
/// between equal codes (copies of a vector stay each other's nearest).
///
/// The builder compares every vector it inserts with a few thousand others: on codes,
/// each comparison reads a quarter of the bytes, which is most of its cost. The graph's
/// edges only have to lead a search to the right neighbourhood; searches score what they
/// return exactly ([`super::FlatGraph::search`]). A code without a norm (a node whose
/// document was gone when the codes were made) is at distance 1 of all.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CodeDistance;

impl Distance<i8> for CodeDistance {
    fn eval(&self, va: &[i8], vb: &[i8]) -> f32 {
        let (Some((na, ca)), Some((nb, cb))) = (split_graph_code(va), split_graph_code(vb)) else {
            return 1.0;
        };
        if na == 0 || nb == 0 {
            return 1.0;
        }
        // `sqrt` of a product of two equal integers below 2^32 is exact in `f64`: equal
        // codes are at distance 0.
        let cosine = dot_i8(ca, cb) as f64 / (f64::from(na) * f64::from(nb)).sqrt();
        (1.0 - cosine).clamp(0.0, 2.0) as f32
    }
}

/// `1 - dot` on normalised vectors, clamped to `[0, 2]`.
///
/// hnsw_rs's own dot distance asserts that the result is not negative, which float
/// rounding breaks when a query equals an indexed vector; this one clamps instead.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).clamp(0.0, 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{normalize, score_of_cosine};

    #[test]
    fn the_code_distance_is_within_the_codes_error_of_the_exact_one() {
        let mut seed = 5u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for dim in [1, 3, 16, 37, 384] {
            let rows: Vec<Vec<f32>> = (0..50)
                .map(|_| {
                    let mut v: Vec<f32> = (0..dim).map(|_| next()).collect();
                    assert!(normalize(&mut v));
                    v
                })
                .collect();
            let codes: Vec<Vec<i8>> = rows
                .iter()
                .map(|row| {
                    let mut code = Vec::new();
                    graph_code(row, &mut code);
                    assert_eq!(code.len(), graph_code_len(dim));
                    code
                })
                .collect();
            for (a, (row_a, code_a)) in rows.iter().zip(&codes).enumerate() {
                assert_eq!(CodeDistance.eval(code_a, code_a), 0.0, "dim {dim}");
                for (row_b, code_b) in rows.iter().zip(&codes).skip(a) {
                    let exact = CosineDistance.eval(row_a, row_b);
                    let estimate = CodeDistance.eval(code_a, code_b);
                    assert!(
                        (exact - estimate).abs() < 0.02,
                        "dim {dim}: {exact} {estimate}"
                    );
                }
            }
        }
        // Equal codes are at distance 0; what cannot be a code, or a code without a
        // norm, at distance 1 of all.
        let mut code = Vec::new();
        graph_code(&[0.6, -0.8], &mut code);
        assert_eq!(CodeDistance.eval(&code, &code), 0.0);
        assert_eq!(CodeDistance.eval(&[1, 2], &[1, 2]), 1.0);
        let zero = [0i8; 6];
        assert_eq!(CodeDistance.eval(&zero, &zero), 1.0);
        assert_eq!(CodeDistance.eval(&zero, &code), 1.0);
    }

    #[test]
    fn distance_never_negative() {
        let mut v: Vec<f32> = (0..384).map(|i| (i as f32).sin()).collect();
        normalize(&mut v);
        assert!(CosineDistance.eval(&v, &v) >= 0.0);
        assert_eq!(score_of_cosine(-0.5), 0.0);
    }
}
