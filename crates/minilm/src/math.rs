//! Element-wise and row-wise f32 math: LayerNorm, GELU (erf), softmax, and the per-row
//! quantisation of activations to i16 that feeds the integer kernels.
//!
//! Written so that LLVM vectorises it for any target: reductions use explicit lanes
//! (float addition is not associative, so a plain `sum()` would stay scalar), and erf/exp
//! are branch-free polynomials instead of libm calls.

/// Independent accumulators in reductions (one 512-bit vector).
const LANES: usize = 16;

/// Sum with `LANES` partial sums.
#[inline(always)]
pub(crate) fn sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

/// Largest absolute value (0 for an empty slice; NaN is ignored).
#[inline(always)]
pub(crate) fn max_abs(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = acc[i].max(c[i].abs());
        }
    }
    acc.iter().chain(tail).fold(0.0f32, |m, v| m.max(v.abs()))
}

/// Largest value.
#[inline(always)]
pub(crate) fn max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = acc[i].max(c[i]);
        }
    }
    acc.iter()
        .chain(tail)
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// In-place LayerNorm of one row (two-pass mean and variance, f32).
#[inline(always)]
pub(crate) fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let mut acc = [0.0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail: f32 = chunks
        .remainder()
        .iter()
        .map(|v| (v - mean) * (v - mean))
        .sum();
    for c in chunks {
        for i in 0..LANES {
            let d = c[i] - mean;
            acc[i] += d * d;
        }
    }
    let var = (acc.iter().sum::<f32>() + tail) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// erf(x) as x * P(x^2) / Q(x^2) on [-4, 4] (|erf| rounds to 1 in f32 beyond), max abs
/// error 5e-7 evaluated in f32. Coefficients fitted by `scripts/fit_erf.py`.
#[inline(always)]
#[allow(clippy::approx_constant)] // P[0] is fitted; it comes out close to 2/sqrt(pi)
pub(crate) fn erf(x: f32) -> f32 {
    const P: [f32; 6] = [
        1.128_379_1,
        0.187_124_73,
        0.052_347_146,
        0.003_636_524_5,
        0.000_283_926_3,
        2.098_561_7e-6,
    ];
    const Q: [f32; 6] = [
        1.0,
        0.499_167_86,
        0.112_782_86,
        0.014_705_545,
        0.001_135_102_2,
        3.854_968e-5,
    ];
    let x = x.clamp(-4.0, 4.0);
    let t = x * x;
    let p = ((((P[5] * t + P[4]) * t + P[3]) * t + P[2]) * t + P[1]) * t + P[0];
    let q = ((((Q[5] * t + Q[4]) * t + Q[3]) * t + Q[2]) * t + Q[1]) * t + Q[0];
    x * p / q
}

/// GELU with erf, as BERT defines it: x/2 * (1 + erf(x / sqrt 2)).
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// e^x for x <= 0 (softmax after subtracting the max), relative error ~1.2e-7; inputs below
/// -87 give ~1e-38 instead of denormals/zero, which is harmless after normalisation.
#[inline(always)]
pub(crate) fn exp_neg(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75; // ln 2 split so n * LN2_HI is exact
    const LN2_LO: f32 = 1.428_606_8e-6;
    const E: [f32; 5] = [
        0.499_999_97,
        0.166_665_8,
        0.041_667_89,
        0.008_362_821,
        0.001_381_458_6,
    ];
    let x = x.clamp(-87.0, 0.0);
    // n = round(x / ln 2) in [-126, 0], as a float and (from the same bits, without a
    // saturating float-to-int conversion) as an integer.
    let shifted = x * std::f32::consts::LOG2_E + ROUND_MAGIC;
    let n = shifted - ROUND_MAGIC;
    let n_int = (shifted.to_bits() as i32).wrapping_sub(ROUND_MAGIC_BITS);
    let r = x - n * LN2_HI - n * LN2_LO;
    let e = (((E[4] * r + E[3]) * r + E[2]) * r + E[1]) * r + E[0];
    let p = 1.0 + r + r * r * e;
    // 2^n by building the exponent field.
    p * f32::from_bits(((n_int + 127) as u32) << 23)
}

/// In-place softmax of one row.
#[inline(always)]
pub(crate) fn softmax(row: &mut [f32]) {
    let m = max(row);
    for v in row.iter_mut() {
        *v = exp_neg(*v - m);
    }
    let inv = 1.0 / sum(row);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Rounding through the mantissa: for |x| < 2^22, `x + ROUND_MAGIC` rounds x to the
/// nearest integer (ties to even) and holds it in the low mantissa bits, so
/// `(x + ROUND_MAGIC).to_bits() - ROUND_MAGIC_BITS` is that integer. Vectorises on any
/// target, unlike `round_ties_even` (SSE4.1) or a saturating `as` conversion.
const ROUND_MAGIC: f32 = 12_582_912.0;
const ROUND_MAGIC_BITS: i32 = 0x4B40_0000;

/// Largest |q| for i16 activations multiplied by int8 weights over `k` inputs such that
/// every partial sum fits in i32: k * 127 * |q| <= i32::MAX. The kernels' sums are then
/// exact, so every instruction set gives bit-identical results.
pub(crate) fn activation_bound(k: usize) -> f32 {
    let bound = i32::MAX as usize / (k.max(1) * 127);
    bound.min(i16::MAX as usize) as f32
}

/// Quantises each row of `x` (`rows * k`) to i16 with one scale per row:
/// `x[r][i] ~= q[r][i] * scale[r]`, |q| <= `bound`.
#[inline(always)]
pub(crate) fn quantize_rows(x: &[f32], k: usize, bound: f32, q: &mut [i16], scale: &mut [f32]) {
    for ((row, qrow), s) in x
        .chunks_exact(k)
        .zip(q.chunks_exact_mut(k))
        .zip(scale.iter_mut())
    {
        let amax = max_abs(row);
        if !(amax > 0.0 && amax.is_finite()) {
            qrow.fill(0);
            *s = 0.0;
            continue;
        }
        let inv = bound / amax;
        for (qv, &v) in qrow.iter_mut().zip(row) {
            // v * inv + MAGIC has the rounded integer in its low mantissa bits: reading
            // them avoids a saturating float-to-int conversion (slow to vectorise).
            *qv = ((v * inv + ROUND_MAGIC).to_bits() as i32 - ROUND_MAGIC_BITS) as i16;
        }
        *s = amax / bound;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64: Taylor series for |x| <= 3, continued fraction for erfc beyond.
    fn erf_ref(x: f64) -> f64 {
        if x.abs() > 3.0 {
            let a = x.abs();
            let mut t = a;
            for n in (1..=80).rev() {
                t = a + (n as f64 / 2.0) / t;
            }
            let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / t;
            return x.signum() * (1.0 - erfc);
        }
        let (mut sum, mut term) = (0.0f64, x);
        for n in 0..200 {
            sum += term / (2 * n + 1) as f64;
            term *= -x * x / (n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0.0f64;
        for i in -6000..=6000 {
            let x = i as f32 * 0.001;
            worst = worst.max((erf(x) as f64 - erf_ref(x as f64)).abs());
        }
        assert!(worst < 1e-6, "max abs error {worst}");
    }

    #[test]
    fn exp_is_accurate() {
        for i in 0..=86_990 {
            let x = -(i as f32) * 0.001;
            let (got, want) = (exp_neg(x) as f64, (x as f64).exp());
            assert!(
                (got / want - 1.0).abs() < 3e-7,
                "exp({x}) = {got}, want {want}"
            );
        }
        assert!(exp_neg(-1000.0) < 1e-37 && exp_neg(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn quantisation_round_trips() {
        let x: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.13)
            .collect();
        let mut q = vec![0i16; 384];
        let mut s = [0.0f32];
        quantize_rows(&x, 384, activation_bound(384), &mut q, &mut s);
        assert_eq!(q.iter().map(|v| v.unsigned_abs()).max(), Some(32767));
        for (a, b) in x.iter().zip(&q) {
            assert!((a - *b as f32 * s[0]).abs() <= s[0] * 0.5001);
        }
        assert_eq!(activation_bound(1536), 11008.0);
    }

    #[test]
    fn layer_norm_normalises() {
        let mut row: Vec<f32> = (0..384).map(|i| i as f32).collect();
        layer_norm(&mut row, &[1.0; 384], &[0.0; 384], 1e-12);
        assert!(sum(&row).abs() < 1e-3);
        assert!((row.iter().map(|v| v * v).sum::<f32>() / 384.0 - 1.0).abs() < 1e-4);
    }
}
