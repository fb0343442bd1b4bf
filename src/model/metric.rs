//! Cosine similarity on normalised vectors, and its 8-bit quantized form for exact scans.
//!
//! Vectors are L2-normalised when they enter the engine, so cosine similarity is a dot
//! product. The dot product is the one hot loop of the vector leg (exact scans and graph
//! traversal): it runs with AVX2 and FMA where the CPU has them, detected at run time.

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

/// The exact dot product of 16-bit codes `a` with 8-bit codes `b`. (`|a| <= 32,767` and
/// `|b| <= 127` keep every partial sum of up to 250 products per lane far from `i32`'s
/// bounds; longer vectors are summed in `i64` between blocks.)
pub(crate) fn dot_codes(a: &[i16], b: &[i8]) -> i64 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports the features `dot_codes_avx2` is compiled for.
            return unsafe { dot_codes_avx2(a, b) };
        }
    }
    dot_codes_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_codes_avx2(a: &[i16], b: &[i8]) -> i64 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // 8 lanes, each adding 2 products of at most 32,767 * 127 per block: 256 blocks
    // stay below 2^31.
    let total = madd_blocks(n / 16, 256, |i| {
        // SAFETY: `i * 16 + 16 <= n`, within both slices; unaligned loads.
        unsafe {
            (
                _mm256_loadu_si256(pa.add(i * 16).cast::<__m256i>()),
                _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i * 16).cast::<__m128i>())),
            )
        }
    });
    let done = n / 16 * 16;
    total + dot_codes_portable(&a[done..n], &b[done..n])
}

/// The sum of `_mm256_madd_epi16` over `blocks` pairs of 16 `i16`s (`load(i)` gives the
/// `i`-th), in `i32` lanes for at most `per_sum` blocks at a time, then in `i64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn madd_blocks(
    blocks: usize,
    per_sum: usize,
    load: impl Fn(usize) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i),
) -> i64 {
    use std::arch::x86_64::*;
    let mut total = 0i64;
    let mut from = 0;
    while from < blocks {
        let to = (from + per_sum).min(blocks);
        let mut acc = _mm256_setzero_si256();
        for i in from..to {
            let (x, y) = load(i);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` holds eight `i32`s.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), acc) };
        total += lanes.iter().map(|&x| i64::from(x)).sum::<i64>();
        from = to;
    }
    total
}

/// Dot product of two rows of 8-bit codes of the same length.
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i64 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports the features `dot_i8_avx2` is compiled for.
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i64 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // 8 lanes, each adding 2 products of at most 127 * 127 per block: 60,000 blocks
    // stay below 2^31.
    let total = madd_blocks(n / 16, 60_000, |i| {
        // SAFETY: `i * 16 + 16 <= n`, within both slices; unaligned loads.
        unsafe {
            (
                _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i * 16).cast::<__m128i>())),
                _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i * 16).cast::<__m128i>())),
            )
        }
    });
    let done = n / 16 * 16;
    total + dot_i8_portable(&a[done..n], &b[done..n])
}

fn dot_i8_portable(a: &[i8], b: &[i8]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i64::from(i16::from(x) * i16::from(y)))
        .sum()
}

fn dot_codes_portable(a: &[i16], b: &[i8]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i64::from(i32::from(x) * i32::from(y)))
        .sum()
}

/// A normalised query quantized to 16 bits for [`Quantized::bounds`]: `query ≈ scale *
/// codes`, within `error`.
#[derive(Debug)]
pub(crate) struct QuantizedQuery {
    codes: Vec<i16>,
    scale: f32,
    error: f32,
}

impl QuantizedQuery {
    /// The query's dot product with a row of 8-bit `codes` of `scale` (`row ≈ scale *
    /// codes`): within [`Quantized::bounds`]'s slack of the exact one.
    #[inline]
    pub(crate) fn estimate(&self, codes: &[i8], scale: f32) -> f32 {
        self.scaled(dot_codes(&self.codes, codes), scale)
    }

    /// The dot product of the query's codes with a row's, `dot`, scaled back: the
    /// estimate of the query's dot product with the row of `scale`.
    #[inline]
    fn scaled(&self, dot: i64, scale: f32) -> f32 {
        ((f64::from(self.scale) * f64::from(scale)) * dot as f64) as f32
    }

    pub(crate) fn new(query: &[f32]) -> QuantizedQuery {
        let max = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / 32_767.0
        } else {
            1.0
        };
        let mut error = 0.0f64;
        let codes = query
            .iter()
            .map(|&x| {
                let code = (x / scale).round().clamp(-32_767.0, 32_767.0);
                let code = if code.is_finite() { code as i16 } else { 0 };
                let diff = f64::from(x) - f64::from(scale) * f64::from(code);
                error += diff * diff;
                code
            })
            .collect();
        QuantizedQuery {
            codes,
            scale,
            error: (error.sqrt() as f32).next_up(),
        }
    }
}

/// Rows of normalised vectors quantized to 8 bits, each with its scale and its distance
/// to the row it stands for, so that an exact scan reads a quarter of the bytes: for a
/// normalised query `q`, `dot(q, row)` lies within [`Quantized::bounds`], and only rows
/// whose bound reaches the best `k` need their `f32` values.
#[derive(Debug, Default)]
pub(crate) struct Quantized {
    codes: Vec<i8>,
    /// Per row: `row ≈ scale * codes`.
    scales: Vec<f32>,
    /// Per row: an upper bound of `|row - scale * codes|`.
    errors: Vec<f32>,
}

/// Lanes of the reductions below: eight independent maxima (or sums) that compile to
/// vector instructions, where one running sum waits for each addition in turn.
const LANES: usize = 8;

/// The largest `|x|` of `row` (NaN ignored, as `f32::max` does).
fn max_abs(row: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = lane.max(x.abs());
        }
    }
    rest.iter()
        .chain(&lanes)
        .fold(0.0f32, |max, &x| max.max(x.abs()))
}

/// `|row - scale * codes|²`.
fn squared_error(row: &[f32], codes: &[i8], scale: f32) -> f32 {
    let term = |x: f32, code: i8| {
        let diff = x - scale * f32::from(code);
        diff * diff
    };
    let mut lanes = [0.0f32; LANES];
    let (chunks, code_chunks) = (row.chunks_exact(LANES), codes.chunks_exact(LANES));
    let rest: f32 = chunks
        .remainder()
        .iter()
        .zip(code_chunks.remainder())
        .map(|(&x, &code)| term(x, code))
        .sum();
    for (xs, cs) in chunks.zip(code_chunks) {
        for ((lane, &x), &code) in lanes.iter_mut().zip(xs).zip(cs) {
            *lane += term(x, code);
        }
    }
    lanes.iter().sum::<f32>() + rest
}

/// Appends `row`'s 8-bit codes to `codes`; returns their scale: `row ≈ scale * codes`,
/// each code rounded half away from zero, saturated at ±127, a NaN made 0.
pub(crate) fn quantize(row: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = max_abs(row);
    let scale = if max > 0.0 && max.is_finite() {
        max / 127.0
    } else {
        1.0
    };
    let inverse = 1.0 / scale;
    codes.extend(row.iter().map(|&x| {
        let y = x * inverse;
        let rounded = (y + 0.5f32.copysign(y)).clamp(-127.0, 127.0);
        let rounded = if rounded.is_nan() { 0.0 } else { rounded };
        // SAFETY: `rounded` is finite and within ±127, so truncating it to an `i32` is
        // defined (and, unlike `as`, needs no saturation: the loop stays vector
        // instructions).
        (unsafe { rounded.to_int_unchecked::<i32>() }) as i8
    }));
    scale
}

/// What float rounding may add to a bound: the dot products of at most a few thousand
/// terms of magnitude at most 1, in `f32`, on both sides.
const ROUNDING: f32 = 1e-4;

impl Quantized {
    pub(crate) fn with_capacity(rows: usize, dim: usize) -> Quantized {
        Quantized {
            codes: Vec::with_capacity(rows * dim),
            scales: Vec::with_capacity(rows),
            errors: Vec::with_capacity(rows),
        }
    }

    /// `data` (rows of `dim`, each times its `inverse` norm: normalised) quantized. (On
    /// the caller's thread: a scan makes it while it holds the catalog's read lock,
    /// where a rayon worker must not wait for jobs.)
    #[cfg(test)]
    pub(crate) fn of(data: &[f32], inverse: &[f32], dim: usize) -> Quantized {
        let mut all = Quantized::with_capacity(inverse.len(), dim);
        all.extend(data, inverse, dim);
        all
    }

    /// Appends `data`, rows of `dim`, each times its `inverse` norm.
    pub(crate) fn extend(&mut self, data: &[f32], inverse: &[f32], dim: usize) {
        if dim == 0 {
            return;
        }
        self.codes.reserve(data.len());
        let mut row = vec![0.0f32; dim];
        for (stored, &inv) in data.chunks_exact(dim).zip(inverse) {
            for (x, &y) in row.iter_mut().zip(stored) {
                *x = y * inv;
            }
            let row = row.as_slice();
            let start = self.codes.len();
            let scale = quantize(row, &mut self.codes);
            let error = squared_error(row, &self.codes[start..], scale);
            self.scales.push(scale);
            // Widened past the sum's rounding (a relative 2.3e-5 at 384 terms, in any
            // order) and rounded up: the bound must hold.
            self.errors.push((error.sqrt() * (1.0 + 1e-4)).next_up());
        }
    }

    /// Appends `rows` rows of `from`, from row `start`.
    pub(crate) fn copy_rows(&mut self, from: &Quantized, start: usize, rows: usize, dim: usize) {
        self.codes
            .extend_from_slice(&from.codes[start * dim..(start + rows) * dim]);
        self.scales
            .extend_from_slice(&from.scales[start..start + rows]);
        self.errors
            .extend_from_slice(&from.errors[start..start + rows]);
    }

    /// The middle of [`Quantized::bounds`] for every row, in order, into `out`, and the
    /// half-width of each row's bounds is then [`Quantized::slack`]. One pass over the
    /// codes (dead rows included: the arena keeps them until they are as many as the
    /// live ones), without a call per row.
    pub(crate) fn estimates(&self, query: &QuantizedQuery, dim: usize, out: &mut Vec<f32>) {
        out.clear();
        if dim == 0 || query.codes.len() != dim {
            return;
        }
        out.reserve(self.scales.len());
        #[cfg(target_arch = "x86_64")]
        {
            if dim <= 4_096 && std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports the features `estimates_avx2` is compiled for.
                unsafe { self.estimates_avx2(query, dim, out) };
                return;
            }
        }
        for (row, codes) in self.codes.chunks_exact(dim).enumerate() {
            out.push(self.estimate(query, row, dot_codes(&query.codes, codes)));
        }
    }

    #[inline]
    fn estimate(&self, query: &QuantizedQuery, row: usize, dot: i64) -> f32 {
        query.scaled(dot, self.scales[row])
    }

    /// [`Quantized::estimates`] with AVX2, for `dim <= 4,096` (each `i32` lane then adds
    /// at most 256 pairs of products of at most `32,767 * 127`: below 2^31).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn estimates_avx2(&self, query: &QuantizedQuery, dim: usize, out: &mut Vec<f32>) {
        use std::arch::x86_64::*;
        let blocks = dim / 16;
        let q = query.codes.as_ptr();
        for (row, codes) in self.codes.chunks_exact(dim).enumerate() {
            let c = codes.as_ptr();
            let mut acc = _mm256_setzero_si256();
            for i in 0..blocks {
                // SAFETY: `i * 16 + 16 <= dim`, the length of both `codes` and the
                // query's codes; unaligned loads.
                let (qv, cv) = unsafe {
                    (
                        _mm256_loadu_si256(q.add(i * 16).cast::<__m256i>()),
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(c.add(i * 16).cast::<__m128i>())),
                    )
                };
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(qv, cv));
            }
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` holds eight `i32`s.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), acc) };
            let dot = lanes.iter().map(|&x| i64::from(x)).sum::<i64>()
                + dot_codes_portable(&query.codes[blocks * 16..], &codes[blocks * 16..]);
            out.push(self.estimate(query, row, dot));
        }
    }

    /// The half-width of the bounds of `row` for `query` (see [`Quantized::bounds`]).
    #[inline]
    pub(crate) fn slack(&self, query: &QuantizedQuery, row: usize) -> f32 {
        (1.0 + query.error) * self.errors[row] + query.error + ROUNDING
    }

    /// Bounds of `dot(query, row)` for a normalised query, as [`dot`] computes it.
    /// (Scans take [`Quantized::estimates`] of every row at once.)
    ///
    /// With `query = sq * cq + rq` and `row = sr * cr + rr`, `dot(query, row) =
    /// sq * sr * dot(cq, cr) + sq * dot(cq, rr) + dot(rq, row)`, and the last two terms
    /// are at most `|sq * cq| * |rr| <= (1 + |rq|) * |rr|` and `|rq| * |row| = |rq|`.
    #[cfg(test)]
    pub(crate) fn bounds(&self, query: &QuantizedQuery, row: usize, dim: usize) -> (f32, f32) {
        let codes = &self.codes[row * dim..(row + 1) * dim];
        let estimate = self.estimate(query, row, dot_codes(&query.codes, codes));
        let slack = self.slack(query, row);
        (estimate - slack, estimate + slack)
    }
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

/// The inverse of the norm of `v` as a factor that turns `dot(q, v)` into a cosine, or
/// `None` for a vector that has no direction (zero, not finite, or so large or small
/// that its inverse norm is not a normal `f32`).
pub(crate) fn inverse_norm(v: &[f32]) -> Option<f32> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    let inverse = (1.0 / norm) as f32;
    (norm > 0.0 && norm.is_finite() && inverse.is_normal()).then_some(inverse)
}

/// The vector score of a cosine similarity: `max(0, cosine)`, at most 1.
pub(crate) fn score_of_cosine(cosine: f32) -> f64 {
    f64::from(cosine).clamp(0.0, 1.0)
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
    fn dot_codes_matches_naive_for_every_length() {
        for len in (0..140).chain([4_096, 5_000]) {
            let a: Vec<i16> = (0..len)
                .map(|i| {
                    if i % 3 == 0 {
                        32_767
                    } else {
                        -(i as i16 % 1_000) * 31
                    }
                })
                .collect();
            let b: Vec<i8> = (0..len)
                .map(|i| {
                    if i % 3 == 0 {
                        127
                    } else {
                        ((i * 53) % 255) as u8 as i8
                    }
                })
                .collect();
            let naive: i64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum();
            assert_eq!(dot_codes(&a, &b), naive, "len {len}");
        }
    }

    #[test]
    fn quantized_bounds_hold_and_copies_match() {
        let mut rows = Vec::new();
        let mut seed = 17u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for dim in [3, 8, 37, 384] {
            let n = 300;
            rows.clear();
            // Rows as stored (not normalised), with their inverse norms.
            let mut inverse = Vec::new();
            for i in 0..n {
                let mut v: Vec<f32> = (0..dim).map(|_| next()).collect();
                // Some rows dominated by one coordinate, one tiny.
                if i % 7 == 0 {
                    v[i % dim] = 40.0;
                }
                if i == 5 {
                    v.iter_mut().for_each(|x| *x *= 1e-30);
                }
                inverse.push(inverse_norm(&v).unwrap());
                rows.extend_from_slice(&v);
            }
            let all = Quantized::of(&rows, &inverse, dim);
            // The codes and scales a plain loop gives (one running maximum, `as`).
            for (r, stored) in rows.chunks_exact(dim).enumerate() {
                let row: Vec<f32> = stored.iter().map(|&x| x * inverse[r]).collect();
                let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
                let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
                assert_eq!(all.scales[r], scale, "row {r}");
                let codes: Vec<i8> = row
                    .iter()
                    .map(|&x| {
                        let y = x * (1.0 / scale);
                        ((y + 0.5f32.copysign(y)) as i32).clamp(-127, 127) as i8
                    })
                    .collect();
                assert_eq!(all.codes[r * dim..(r + 1) * dim], codes[..], "row {r}");
            }
            let mut grown = Quantized::default();
            grown.extend(&rows[..10 * dim], &inverse[..10], dim);
            grown.extend(&rows[10 * dim..], &inverse[10..], dim);
            assert_eq!(grown.codes, all.codes);
            assert_eq!(grown.scales, all.scales);
            let mut copied = Quantized::default();
            copied.copy_rows(&all, 100, 50, dim);
            assert_eq!(copied.codes, all.codes[100 * dim..150 * dim]);
            assert_eq!(copied.errors, all.errors[100..150]);
            for _ in 0..20 {
                let mut query: Vec<f32> = (0..dim).map(|_| next()).collect();
                assert!(normalize(&mut query));
                let quantized = QuantizedQuery::new(&query);
                let mut estimates = Vec::new();
                all.estimates(&quantized, dim, &mut estimates);
                assert_eq!(estimates.len(), n);
                for (i, row) in rows.chunks_exact(dim).enumerate() {
                    let exact = dot(&query, row) * inverse[i];
                    let (low, high) = all.bounds(&quantized, i, dim);
                    let slack = all.slack(&quantized, i);
                    assert_eq!((estimates[i] - slack, estimates[i] + slack), (low, high));
                    assert!(
                        low <= exact && exact <= high,
                        "dim {dim} row {i}: {low} {exact} {high}"
                    );
                    assert!(
                        high - low < 0.1 * (dim as f32).sqrt().max(1.0),
                        "dim {dim}: loose"
                    );
                }
            }
        }
    }

    #[test]
    fn dot_i8_matches_naive_for_every_length() {
        for len in (0..140).chain([4_096, 5_000]) {
            let a: Vec<i8> = (0..len)
                .map(|i| {
                    if i % 5 == 0 {
                        -127
                    } else {
                        (i * 37 % 255) as u8 as i8
                    }
                })
                .collect();
            let b: Vec<i8> = (0..len)
                .map(|i| {
                    if i % 5 == 0 {
                        -127
                    } else {
                        (i * 11 % 253) as u8 as i8
                    }
                })
                .collect();
            let naive: i64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| i64::from(x) * i64::from(y))
                .sum();
            assert_eq!(dot_i8(&a, &b), naive, "len {len}");
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
}
