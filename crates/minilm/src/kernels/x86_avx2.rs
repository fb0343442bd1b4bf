//! AVX2 tile kernel: `vpmaddwd` + `vpaddd`, 8 output channels x 2 inputs per pair of
//! instructions (no VNNI on AVX2-only CPUs).
//!
//! A 16-channel panel is two ymm registers (channels 0..8 and 8..16: the low and high 16
//! bytes of the panel's 32 bytes per input pair). 6 rows x 1 panel: 12 accumulators +
//! 2 weight registers + 1 broadcast + 1 product fill the 16 ymm registers.

use std::arch::x86_64::*;

use crate::blob::PANEL;

pub(super) const ROWS: usize = 6;
pub(super) const PANELS: usize = 1;

/// Safe entry point; see `kernels::matmul` for the layouts.
pub(super) fn tile(a: &[i16], rows: usize, k: usize, w: &[u8], panels: usize, out: &mut [i32]) {
    assert!(
        super::Isa::Avx2.is_supported(),
        "AVX2 kernel called on a CPU without AVX2"
    );
    assert!((1..=ROWS).contains(&rows) && panels == PANELS && k.is_multiple_of(2));
    assert!(a.len() >= rows * k && w.len() >= k * PANEL && out.len() >= rows * PANEL);
    // SAFETY: the CPU supports AVX2; `a` holds `rows * k` values, `w` `k * 16` bytes and
    // `out` `rows * 16` values; k is even (all checked above).
    unsafe {
        match rows {
            6 => tile_6(a, k, w, out),
            5 => tile_5(a, k, w, out),
            4 => tile_4(a, k, w, out),
            3 => tile_3(a, k, w, out),
            2 => tile_2(a, k, w, out),
            _ => tile_1(a, k, w, out),
        }
    }
}

/// Defines a one-panel kernel for the listed rows, written out so that LLVM keeps every
/// accumulator in a register.
macro_rules! tile_fn {
    ($name:ident, [$($r:literal)*]) => {
        /// # Safety
        /// The CPU must support AVX2; `a` must hold `rows * k` values, `w` `k * 16` bytes
        /// and `out` `rows * 16` values; `k` must be even.
        #[target_feature(enable = "avx2")]
        unsafe fn $name(a: &[i16], k: usize, w: &[u8], out: &mut [i32]) {
            const ROWS: usize = [$($r),*].len();
            let (ap, wp, op) = (a.as_ptr(), w.as_ptr(), out.as_mut_ptr());
            // acc[r][h]: row r, channels 8h..8h+8.
            let mut acc = [[_mm256_setzero_si256(); 2]; ROWS];
            for j in 0..k / 2 {
                // SAFETY: 32 j + 32 <= k * 16 bytes of `w`.
                let (lo, hi) = unsafe {
                    (_mm_loadu_si128(wp.add(32 * j) as *const __m128i),
                     _mm_loadu_si128(wp.add(32 * j + 16) as *const __m128i))
                };
                let wv = [_mm256_cvtepi8_epi16(lo), _mm256_cvtepi8_epi16(hi)];
                $(
                    // SAFETY: r * k + 2 j + 1 < rows * k values of `a`; unaligned pair read.
                    let av = _mm256_set1_epi32(unsafe { (ap.add($r * k + 2 * j) as *const i32).read_unaligned() });
                    acc[$r][0] = _mm256_add_epi32(acc[$r][0], _mm256_madd_epi16(av, wv[0]));
                    acc[$r][1] = _mm256_add_epi32(acc[$r][1], _mm256_madd_epi16(av, wv[1]));
                )*
            }
            for (r, v) in acc.iter().enumerate() {
                for h in 0..2 {
                    // SAFETY: r * 16 + 8 h + 8 <= rows * 16 values of `out`.
                    unsafe { _mm256_storeu_si256(op.add(r * PANEL + 8 * h) as *mut __m256i, v[h]) };
                }
            }
        }
    };
}

tile_fn!(tile_6, [0 1 2 3 4 5]);
tile_fn!(tile_5, [0 1 2 3 4]);
tile_fn!(tile_4, [0 1 2 3]);
tile_fn!(tile_3, [0 1 2]);
tile_fn!(tile_2, [0 1]);
tile_fn!(tile_1, [0]);
