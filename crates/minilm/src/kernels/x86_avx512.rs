//! AVX-512 tile kernel: `vpdpwssd` (VNNI), 16 output channels x 2 inputs per instruction.
//!
//! Per input pair: each panel's 32 weight bytes are sign-extended once to 32 x i16
//! (`vpmovsxbw`), each row's activation pair is broadcast once, and every (row, panel)
//! accumulator takes one `vpdpwssd`. With 8 rows x 3 panels: 24 accumulators + 3 weight
//! registers + 1 broadcast fit the 32 zmm registers, and each converted weight vector is
//! reused by 8 rows.

use std::arch::x86_64::*;

use crate::blob::PANEL;

pub(super) const ROWS: usize = 8;
pub(super) const PANELS: usize = 3;

/// Safe entry point; see `kernels::matmul` for the layouts.
pub(super) fn tile(a: &[i16], rows: usize, k: usize, w: &[u8], panels: usize, out: &mut [i32]) {
    assert!(
        super::Isa::Avx512.is_supported(),
        "AVX-512 kernel called on a CPU without it"
    );
    assert!((1..=ROWS).contains(&rows) && (1..=PANELS).contains(&panels) && k.is_multiple_of(2));
    assert!(
        a.len() >= rows * k && w.len() >= panels * k * PANEL && out.len() >= rows * panels * PANEL
    );
    macro_rules! call {
        ($f:ident) => {
            match panels {
                3 => $f::<3>(a, k, w, out),
                2 => $f::<2>(a, k, w, out),
                _ => $f::<1>(a, k, w, out),
            }
        };
    }
    // SAFETY: the CPU supports AVX-512 F/BW/VNNI; `a` holds `rows * k` values, `w`
    // `panels * k * 16` bytes and `out` `rows * panels * 16` values; k is even (all
    // checked above).
    unsafe {
        match rows {
            8 => call!(tile_8),
            7 => call!(tile_7),
            6 => call!(tile_6),
            5 => call!(tile_5),
            4 => call!(tile_4),
            3 => call!(tile_3),
            2 => call!(tile_2),
            _ => call!(tile_1),
        }
    }
}

/// Defines a kernel for the listed rows; the rows are written out (not a loop) so that
/// LLVM keeps every accumulator in a register.
macro_rules! tile_fn {
    ($name:ident, [$($r:literal)*]) => {
        /// # Safety
        /// The CPU must support AVX-512 F, BW and VNNI; `a` must hold `rows * k` values,
        /// `w` `P * k * 16` bytes and `out` `rows * P * 16` values; `k` must be even.
        #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
        unsafe fn $name<const P: usize>(a: &[i16], k: usize, w: &[u8], out: &mut [i32]) {
            const ROWS: usize = [$($r),*].len();
            let panel_bytes = k * PANEL;
            let (ap, wp, op) = (a.as_ptr(), w.as_ptr(), out.as_mut_ptr());
            let mut acc = [[_mm512_setzero_si512(); P]; ROWS];
            for j in 0..k / 2 {
                let mut wv = [_mm512_setzero_si512(); P];
                for (p, v) in wv.iter_mut().enumerate() {
                    // SAFETY: p * panel_bytes + 32 j + 32 <= P * k * 16 bytes of `w`.
                    let bytes = unsafe { _mm256_loadu_si256(wp.add(p * panel_bytes + 32 * j) as *const __m256i) };
                    *v = _mm512_cvtepi8_epi16(bytes);
                }
                $(
                    // SAFETY: r * k + 2 j + 1 < rows * k values of `a`; unaligned pair read.
                    let av = _mm512_set1_epi32(unsafe { (ap.add($r * k + 2 * j) as *const i32).read_unaligned() });
                    for p in 0..P {
                        acc[$r][p] = dpwssd(acc[$r][p], av, wv[p]);
                    }
                )*
            }
            for (r, acc_r) in acc.iter().enumerate() {
                for (p, v) in acc_r.iter().enumerate() {
                    // SAFETY: (r * P + p) * 16 + 16 <= rows * P * 16 values of `out`.
                    unsafe { _mm512_storeu_si512(op.add((r * P + p) * PANEL) as *mut __m512i, *v) };
                }
            }
        }
    };
}

/// `acc + sum of pairwise a * b` (i16 pairs into i32 lanes): one `vpdpwssd`.
///
/// Inline assembly rather than `_mm512_dpwssd_epi32`: without a `-C target-cpu` that
/// LLVM knows has fast VNNI, it rewrites the intrinsic into `vpmaddwd` + `vpaddd`
/// whenever a spare register allows, which halves the kernel's throughput.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
fn dpwssd(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    let mut acc = acc;
    // SAFETY: the instruction needs AVX-512 F + VNNI, which this function's callers must
    // have (target_feature); it only touches the three registers.
    unsafe {
        std::arch::asm!("vpdpwssd {acc}, {a}, {b}", acc = inout(zmm_reg) acc, a = in(zmm_reg) a, b = in(zmm_reg) b,
                        options(pure, nomem, nostack, preserves_flags));
    }
    acc
}

tile_fn!(tile_8, [0 1 2 3 4 5 6 7]);
tile_fn!(tile_7, [0 1 2 3 4 5 6]);
tile_fn!(tile_6, [0 1 2 3 4 5]);
tile_fn!(tile_5, [0 1 2 3 4]);
tile_fn!(tile_4, [0 1 2 3]);
tile_fn!(tile_3, [0 1 2]);
tile_fn!(tile_2, [0 1]);
tile_fn!(tile_1, [0]);
