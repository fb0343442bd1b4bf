//! The int8 matrix multiply behind every linear layer, with runtime SIMD dispatch.
//!
//! `C[m][n] = sum_k A[m][k] * W[n][k]` with `A` i16 (activations quantised per row, see
//! `math::quantize_rows`) and `W` int8, accumulated exactly in i32. The caller's epilogue
//! turns each block of accumulators into f32 (scales, bias, residual, GELU).
//!
//! Weight layout ("panels", written by `scripts/make_blob.py`): output channels in groups of
//! `PANEL` = 16; panel `p` is `k * 16` contiguous bytes, and for each input pair `j` holds
//! `(W[16p + c][2j], W[16p + c][2j + 1])` for `c = 0..16` (32 bytes). One 32-byte load,
//! sign-extended to 16 x (i16, i16), gives what `vpdpwssd` / `vpmaddwd` multiply with a
//! broadcast activation pair: 16 output channels x 2 inputs.
//!
//! Why integers: at a query's ~25 rows the work is compute-bound, not bandwidth-bound, and
//! a 16-bit multiply-add does twice the work per instruction of an f32 FMA (AVX-512 VNNI:
//! 32 multiply-adds per `vpdpwssd`). i16 activations add no measurable error (scripts/quant.py).
//!
//! Blocking: a "tile" is `R` rows x `P` panels held in registers across the whole k loop;
//! every instruction set module exposes the same `tile::<R, P>` shape.

use crate::blob::PANEL;

mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;

/// Instruction set used by the matrix kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Portable Rust (LLVM vectorises it for the compile target).
    Scalar,
    /// x86-64 AVX2 + FMA (`vpmaddwd` + `vpaddd`).
    Avx2,
    /// x86-64 AVX-512 F + BW + VL + VNNI (`vpdpwssd`), with AVX2 + FMA.
    Avx512,
}

impl Isa {
    /// The fastest instruction set this CPU supports.
    pub fn detect() -> Isa {
        [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .find(|i| i.is_supported())
            .unwrap_or(Isa::Scalar)
    }

    /// Whether this CPU has the instruction set.
    pub fn is_supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Rows and panels per tile for this instruction set (register budget).
    fn tile_shape(self) -> (usize, usize) {
        match self {
            Isa::Scalar => (scalar::ROWS, scalar::PANELS),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => (x86_avx2::ROWS, x86_avx2::PANELS),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => (x86_avx512::ROWS, x86_avx512::PANELS),
            #[cfg(not(target_arch = "x86_64"))]
            _ => (scalar::ROWS, scalar::PANELS),
        }
    }
}

/// Defines `fn $name(isa, args...)` that runs `$body(isa, args...)` compiled for `isa`: one copy
/// per instruction set, each a `#[target_feature]` function into which `$body` (which must
/// be `#[inline(always)]`) and the helpers it inlines are compiled. This gives the
/// element-wise code (LayerNorm, GELU, softmax, quantisation, attention) the vector width
/// of the CPU rather than of the compile target's baseline (SSE2 on x86-64).
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $(#[$meta])*
        $vis fn $name(isa: $crate::kernels::Isa, $($arg: $ty),*) {
            /// # Safety
            /// The CPU must support the listed features.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
            unsafe fn avx512(isa: $crate::kernels::Isa, $($arg: $ty),*) {
                $body(isa, $($arg),*)
            }
            /// # Safety
            /// The CPU must support the listed features.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(isa: $crate::kernels::Isa, $($arg: $ty),*) {
                $body(isa, $($arg),*)
            }
            match isa {
                // SAFETY: every `Isa` in use passed `is_supported()`, which checks each
                // feature enabled above.
                #[cfg(target_arch = "x86_64")]
                $crate::kernels::Isa::Avx512 => unsafe { avx512(isa, $($arg),*) },
                // SAFETY: as above.
                #[cfg(target_arch = "x86_64")]
                $crate::kernels::Isa::Avx2 => unsafe { avx2(isa, $($arg),*) },
                _ => $body(isa, $($arg),*),
            }
        }
    };
}
pub(crate) use multiversion;

/// Largest tile: 8 rows x 4 panels of 16 channels.
pub(crate) const MAX_TILE: usize = 8 * 4 * PANEL;

/// Computes `A (m x k) * W[cols]^T` and hands the i32 results to `epilogue` one tile row at
/// a time: `epilogue(row, first_col, values)` with `values.len()` a multiple of 16 and
/// `first_col` relative to `cols.start`.
///
/// `a` holds `m * k` i16; `w` is a whole packed matrix of `k`-input channels; `cols` must
/// start and end on panel boundaries. Panics if the shapes disagree (a bug, not an input
/// error: shapes come from the validated blob).
#[inline(always)]
pub(crate) fn matmul(
    isa: Isa,
    a: &[i16],
    m: usize,
    k: usize,
    w: &[u8],
    cols: std::ops::Range<usize>,
    mut epilogue: impl FnMut(usize, usize, &[i32]),
) {
    assert!(k.is_multiple_of(2) && a.len() >= m * k && w.len().is_multiple_of(k * PANEL));
    assert!(
        cols.start.is_multiple_of(PANEL)
            && cols.end.is_multiple_of(PANEL)
            && cols.end * k <= w.len()
    );
    let (rows_per_tile, panels_per_tile) = isa.tile_shape();
    let panel_bytes = k * PANEL;
    let mut tile = [0i32; MAX_TILE];
    let mut p0 = cols.start / PANEL;
    while p0 < cols.end / PANEL {
        let panels = panels_per_tile.min(cols.end / PANEL - p0);
        let w_tile = &w[p0 * panel_bytes..(p0 + panels) * panel_bytes];
        // Row blocks of near-equal size (27 rows: 7+7+7+6, not 8+8+8+3): a small block
        // converts the weights for little work.
        let blocks = m.div_ceil(rows_per_tile);
        let mut r0 = 0;
        for b in 0..blocks {
            let rows = m / blocks + usize::from(b < m % blocks);
            let a_tile = &a[r0 * k..(r0 + rows) * k];
            let out = &mut tile[..rows * panels * PANEL];
            match isa {
                Isa::Scalar => scalar::tile(a_tile, rows, k, w_tile, panels, out),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 => x86_avx2::tile(a_tile, rows, k, w_tile, panels, out),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 => x86_avx512::tile(a_tile, rows, k, w_tile, panels, out),
                #[cfg(not(target_arch = "x86_64"))]
                _ => scalar::tile(a_tile, rows, k, w_tile, panels, out),
            }
            let width = panels * PANEL;
            for r in 0..rows {
                epilogue(
                    r0 + r,
                    p0 * PANEL - cols.start,
                    &out[r * width..(r + 1) * width],
                );
            }
            r0 += rows;
        }
        debug_assert_eq!(r0, m);
        p0 += panels;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs a row-major `n x k` int8 matrix into panels (as scripts/make_blob.py does).
    pub(crate) fn pack(w: &[i8], n: usize, k: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * k);
        for p in 0..n / PANEL {
            for j in 0..k / 2 {
                for c in 0..PANEL {
                    let row = &w[(p * PANEL + c) * k..];
                    out.push(row[2 * j] as u8);
                    out.push(row[2 * j + 1] as u8);
                }
            }
        }
        out
    }

    fn naive(a: &[i16], m: usize, k: usize, w: &[i8], n: usize) -> Vec<i32> {
        let mut c = vec![0i32; m * n];
        for r in 0..m {
            for col in 0..n {
                c[r * n + col] = (0..k)
                    .map(|i| a[r * k + i] as i32 * w[col * k + i] as i32)
                    .sum();
            }
        }
        c
    }

    /// Deterministic pseudo-random numbers (no dependencies).
    fn lcg(seed: &mut u64) -> u32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as u32
    }

    #[test]
    fn every_isa_matches_naive_exactly() {
        let mut seed = 1;
        for &(m, k, n) in &[
            (1, 2, 16),
            (7, 384, 48),
            (25, 384, 1152),
            (13, 1536, 384),
            (9, 64, 80),
        ] {
            let bound = crate::math::activation_bound(k) as i32;
            let a: Vec<i16> = (0..m * k)
                .map(|_| (lcg(&mut seed) % (2 * bound as u32 + 1)) as i32 - bound)
                .map(|v| v as i16)
                .collect();
            // Include the extremes so overflow would show.
            let mut w: Vec<i8> = (0..n * k)
                .map(|_| ((lcg(&mut seed) % 255) as i32 - 127) as i8)
                .collect();
            w[0] = 127;
            w[1] = -127;
            let packed = pack(&w, n, k);
            let want = naive(&a, m, k, &w, n);
            for isa in [Isa::Scalar, Isa::Avx2, Isa::Avx512] {
                if !isa.is_supported() {
                    eprintln!("skipping {isa:?}: not supported here");
                    continue;
                }
                // Whole range and a sub-range starting at a panel boundary.
                for cols in [0..n, PANEL..n] {
                    let mut got = vec![i32::MIN; m * n];
                    matmul(isa, &a, m, k, &packed, cols.clone(), |r, c0, v| {
                        let c = cols.start + c0;
                        got[r * n + c..r * n + c + v.len()].copy_from_slice(v);
                    });
                    for r in 0..m {
                        assert_eq!(
                            &got[r * n + cols.start..(r + 1) * n],
                            &want[r * n + cols.start..(r + 1) * n],
                            "{isa:?} m={m} k={k} n={n} cols={cols:?} row {r}"
                        );
                    }
                }
            }
        }
    }
}
