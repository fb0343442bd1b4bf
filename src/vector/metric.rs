//! Cosine similarity on normalised vectors, and the graph's distance.
//!
//! Vectors are L2-normalised when they enter the engine, so cosine similarity is a dot
//! product. The dot product is the one hot loop of the vector leg (exact scans and graph
//! traversal): it runs with AVX2 and FMA where the CPU has them, detected at run time.

use hnsw_rs::prelude::Distance;

/// Dot product of two vectors of the same length.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports the features `dot_avx2` is compiled for.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    // The same code as `dot_portable`, compiled with AVX2 and FMA enabled: eight
    // independent accumulators let the compiler keep a full vector register per lane.
    dot_portable(a, b)
}

#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let (rest_a, rest_b) = (chunks_a.remainder(), chunks_b.remainder());
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for lane in 0..16 {
            acc[lane] = ca[lane].mul_add(cb[lane], acc[lane]);
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, y) in rest_a.iter().zip(rest_b) {
        sum += x * y;
    }
    sum
}

/// L2-normalises `v` in place; returns `false` (leaving it untouched) for a zero vector.
pub(crate) fn normalize(v: &mut [f32]) -> bool {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

/// The vector score of a cosine similarity: `max(0, cosine)`, at most 1.
pub(crate) fn score_of_cosine(cosine: f32) -> f64 {
    f64::from(cosine).clamp(0.0, 1.0)
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

    fn naive(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn dot_matches_naive_for_every_length() {
        for len in 0..70 {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            assert!((dot(&a, &b) - naive(&a, &b)).abs() < 1e-4, "len {len}");
        }
    }

    #[test]
    fn normalize_handles_zero() {
        let mut zero = vec![0.0; 4];
        assert!(!normalize(&mut zero));
        let mut v = vec![3.0, 4.0];
        assert!(normalize(&mut v));
        assert!((dot(&v, &v) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn distance_never_negative() {
        let mut v: Vec<f32> = (0..384).map(|i| (i as f32).sin()).collect();
        normalize(&mut v);
        assert!(CosineDistance.eval(&v, &v) >= 0.0);
        assert_eq!(score_of_cosine(-0.5), 0.0);
    }
}
