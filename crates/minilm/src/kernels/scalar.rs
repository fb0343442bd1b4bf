//! Portable tile kernel: plain Rust over the panel layout, correct on every target.
//!
//! For each input pair, the 32 weight bytes of a panel (16 channels x 2 inputs) are
//! multiplied by the two activations and summed per channel; LLVM vectorises this shape
//! (on x86-64 into `pmaddwd`, the instruction the AVX2 kernel uses). Sums are exact, so the
//! results equal the SIMD kernels' bit for bit.

use crate::blob::PANEL;

pub(super) const ROWS: usize = 4;
pub(super) const PANELS: usize = 1;

/// `out[r][c] = sum_k a[r][k] * w[c][k]` for `rows` rows and `panels` panels (see
/// `kernels::matmul` for the layouts).
pub(super) fn tile(a: &[i16], rows: usize, k: usize, w: &[u8], panels: usize, out: &mut [i32]) {
    let width = panels * PANEL;
    for p in 0..panels {
        let wp = &w[p * k * PANEL..(p + 1) * k * PANEL];
        for r in 0..rows {
            let ar = &a[r * k..(r + 1) * k];
            let mut acc = [0i32; PANEL];
            for (pair, wj) in ar.chunks_exact(2).zip(wp.chunks_exact(2 * PANEL)) {
                let (a0, a1) = (i32::from(pair[0]), i32::from(pair[1]));
                // 16 channels x (even input, odd input): the shape of x86's `pmaddwd`.
                let wj: [i16; 2 * PANEL] = std::array::from_fn(|b| i16::from(wj[b] as i8));
                for c in 0..PANEL {
                    acc[c] += i32::from(wj[2 * c]) * a0 + i32::from(wj[2 * c + 1]) * a1;
                }
            }
            out[r * width + p * PANEL..][..PANEL].copy_from_slice(&acc);
        }
    }
}
