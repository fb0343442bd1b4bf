//! The BERT encoder forward pass over a group of sentences, mean pooling and L2
//! normalisation (sentence-transformers' all-MiniLM-L6-v2 pipeline).
//!
//! The rows (tokens) of all sentences of the group are concatenated into one matrix for the
//! linear layers, with no padding; attention runs per sentence and head. The calling
//! thread drives the pass (embeddings, quantisation, LayerNorm, pooling); each linear layer
//! and each attention step is a job of independent units (blocks of output columns,
//! (sentence, head) pairs) that helper threads may share (`pool`). Each unit writes its own
//! buffer; the driver assembles them.

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use crate::blob::{Linear, Weights};
use crate::kernels::{self, Isa};
use crate::math;
use crate::pool::Crew;
use crate::{DIM, Embedding};

/// Output columns per unit of a linear layer with `k` inputs when threads share a pass: a
/// multiple of the kernels' 48-column tiles (96 = one head's q, k and v in the fused QKV
/// layer), halved for the 1536-input layer so that its units take about as long.
fn unit_width(k: usize) -> usize {
    if k > 512 { 48 } else { 96 }
}

/// A step that can be split into units.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Job {
    /// A linear layer of a pass, in blocks of output columns.
    Linear { layer: usize, op: Op },
    /// Self-attention of a pass's current layer (reads `Pass::qkv`), per (sentence, head).
    Attention,
    /// A whole batch, one group of sentences per unit (see `Batch`).
    Groups,
}

/// Work that threads share unit by unit (see `pool`).
pub(crate) trait Work: Send + Sync {
    fn run_unit(&self, job: Job, unit: usize, scratch: &mut Scratch);
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Qkv,
    AttnOut,
    FfnIn,
    FfnOut,
}

/// Per-thread buffers for attention units.
#[derive(Default)]
pub(crate) struct Scratch {
    keys_t: Vec<f32>,
    scores: Vec<f32>,
}

/// Activations quantised per row for the next linear layer.
#[derive(Default)]
struct Quantized {
    q: Vec<i16>,
    scale: Vec<f32>,
}

/// The state of one forward pass, shared with helper threads. Locks are never contended
/// for long: the driver writes between jobs, units read during jobs.
pub(crate) struct Pass {
    w: Arc<Weights<'static>>,
    isa: Isa,
    tokens: Vec<u32>,
    /// Row where each sentence starts, plus the total.
    starts: Vec<usize>,
    /// Several units per job (helpers may join) or one (single thread).
    split: bool,
    input: RwLock<Quantized>,
    /// Hidden state (residual input of the attention-output and FFN-output layers).
    x: RwLock<Vec<f32>>,
    /// The current layer's fused q|k|v.
    qkv: RwLock<Vec<f32>>,
    /// One output buffer per unit of the current job.
    units: Vec<Mutex<Vec<f32>>>,
    /// The driver's own buffers (a layer's assembled output, positions).
    driver: Mutex<Driver>,
}

#[derive(Default)]
struct Driver {
    y: Vec<f32>,
    t: Vec<f32>,
    positions: Vec<usize>,
}

impl Pass {
    /// `sentences` must be validated (non-empty, in-vocabulary, not too long).
    pub fn new(w: Arc<Weights<'static>>, isa: Isa, sentences: &[&[u32]], split: bool) -> Pass {
        let mut pass = Pass {
            w,
            isa,
            tokens: Vec::new(),
            starts: Vec::new(),
            split,
            input: RwLock::default(),
            x: RwLock::default(),
            qkv: RwLock::default(),
            units: Vec::new(),
            driver: Mutex::default(),
        };
        pass.reset(isa, sentences, split);
        pass
    }

    /// Prepares the pass for other sentences, keeping the buffers (a fresh allocation of
    /// the larger ones costs page faults on every query).
    pub fn reset(&mut self, isa: Isa, sentences: &[&[u32]], split: bool) {
        self.isa = isa;
        self.split = split;
        self.starts.clear();
        self.tokens.clear();
        for s in sentences {
            self.starts.push(self.tokens.len());
            self.tokens.extend_from_slice(s);
        }
        self.starts.push(self.tokens.len());
        let cfg = &self.w.config;
        let units = if split {
            (3 * cfg.hidden)
                .div_ceil(unit_width(cfg.hidden))
                .max(cfg.intermediate.div_ceil(unit_width(cfg.hidden)))
                .max(cfg.hidden.div_ceil(unit_width(cfg.intermediate)))
                .max(sentences.len() * cfg.heads)
        } else {
            sentences.len() * cfg.heads
        };
        if self.units.len() < units {
            self.units.resize_with(units, Mutex::default);
        }
    }

    fn rows(&self) -> usize {
        self.tokens.len()
    }

    fn sentences(&self) -> usize {
        self.starts.len() - 1
    }

    fn linear(&self, layer: usize, op: Op) -> &Linear<'static> {
        let l = &self.w.layers[layer];
        match op {
            Op::Qkv => &l.qkv,
            Op::AttnOut => &l.attn_out,
            Op::FfnIn => &l.ffn_in,
            Op::FfnOut => &l.ffn_out,
        }
    }

    fn units_of(&self, job: Job) -> usize {
        match job {
            Job::Linear { layer, op } if self.split => {
                let lin = self.linear(layer, op);
                lin.n.div_ceil(unit_width(lin.k))
            }
            Job::Linear { .. } => 1,
            Job::Attention => self.sentences() * self.w.config.heads,
            Job::Groups => 0,
        }
    }

    /// Output columns of unit `u` of linear layer `lin`.
    fn unit_cols(&self, lin: &Linear, u: usize) -> std::ops::Range<usize> {
        let width = unit_width(lin.k);
        if self.split {
            u * width..((u + 1) * width).min(lin.n)
        } else {
            0..lin.n
        }
    }

    /// Computes unit `u` of `job` (on any thread).
    fn unit(&self, job: Job, u: usize, scratch: &mut Scratch) {
        match job {
            Job::Linear { layer, op } => {
                let lin = self.linear(layer, op);
                let input = read(&self.input);
                let x = matches!(op, Op::AttnOut | Op::FfnOut).then(|| read(&self.x));
                let residual = x.as_ref().map(|x| x.as_slice());
                let cols = self.unit_cols(lin, u);
                let gelu = matches!(op, Op::FfnIn);
                let mut out = lock(&self.units[u]);
                linear(
                    self.isa,
                    lin,
                    &input.q,
                    &input.scale,
                    self.rows(),
                    cols,
                    residual,
                    gelu,
                    &mut out,
                );
            }
            Job::Attention => {
                let heads = self.w.config.heads;
                let (sentence, head) = (u / heads, u % heads);
                let (first, end) = (self.starts[sentence], self.starts[sentence + 1]);
                let qkv = read(&self.qkv);
                let mut out = lock(&self.units[u]);
                let dh = self.w.config.head_dim();

                let width = 3 * heads * dh;
                attention(
                    self.isa,
                    &qkv[first * width..end * width],
                    width,
                    head,
                    dh,
                    scratch,
                    &mut out,
                );
            }
            Job::Groups => unreachable!("a pass has no groups"),
        }
    }

    fn run(&self, crew: Option<&Crew>, job: Job, scratch: &mut Scratch) {
        let units = self.units_of(job);
        match crew {
            Some(crew) => crew.run(job, units, |u| self.unit(job, u, scratch)),
            None => (0..units).for_each(|u| self.unit(job, u, scratch)),
        }
    }

    /// Copies the units of a linear job's output into `dest` (rows x n).
    fn gather_columns(&self, layer: usize, op: Op, dest: &mut Vec<f32>) {
        if !self.split {
            std::mem::swap(dest, &mut *lock(&self.units[0]));
            return;
        }
        let lin = self.linear(layer, op);
        let n = lin.n;
        dest.resize(self.rows() * n, 0.0);
        for u in 0..self.units_of(Job::Linear { layer, op }) {
            let cols = self.unit_cols(lin, u);
            let src = lock(&self.units[u]);
            for (d, s) in dest.chunks_exact_mut(n).zip(src.chunks_exact(cols.len())) {
                d[cols.clone()].copy_from_slice(s);
            }
        }
    }

    /// Copies the attention units ((sentence, head) blocks) into `dest` (rows x hidden).
    fn gather_heads(&self, dest: &mut Vec<f32>) {
        let (h, heads, dh) = (
            self.w.config.hidden,
            self.w.config.heads,
            self.w.config.head_dim(),
        );
        dest.resize(self.rows() * h, 0.0);
        for (u, unit) in self.units[..self.sentences() * heads].iter().enumerate() {
            let (sentence, head) = (u / heads, u % heads);
            let first = self.starts[sentence];
            let src = lock(unit);
            for (r, s) in src.chunks_exact(dh).enumerate() {
                dest[(first + r) * h + head * dh..][..dh].copy_from_slice(s);
            }
        }
    }
}

impl Work for Pass {
    fn run_unit(&self, job: Job, unit: usize, scratch: &mut Scratch) {
        self.unit(job, unit, scratch)
    }
}

/// A batch of sentence groups, embedded in parallel one group per thread at a time (no
/// synchronisation inside a group). Token ids are copied: helpers outlive the caller's
/// borrow.
pub(crate) struct Batch {
    w: Arc<Weights<'static>>,
    isa: Isa,
    groups: Vec<Vec<Vec<u32>>>,
    out: Vec<Mutex<Vec<Embedding>>>,
}

impl Batch {
    pub fn new(w: Arc<Weights<'static>>, isa: Isa, groups: &[&[&[u32]]]) -> Batch {
        let groups: Vec<Vec<Vec<u32>>> = groups
            .iter()
            .map(|g| g.iter().map(|s| s.to_vec()).collect())
            .collect();
        let out = (0..groups.len()).map(|_| Mutex::default()).collect();
        Batch {
            w,
            isa,
            groups,
            out,
        }
    }

    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Group `g`'s embeddings (empty if it has not run).
    pub fn take(&self, g: usize) -> Vec<Embedding> {
        std::mem::take(&mut *lock(&self.out[g]))
    }
}

impl Work for Batch {
    fn run_unit(&self, _job: Job, g: usize, scratch: &mut Scratch) {
        let sentences: Vec<&[u32]> = self.groups[g].iter().map(|s| s.as_slice()).collect();
        let pass = Pass::new(Arc::clone(&self.w), self.isa, &sentences, false);
        let mut out = vec![[0.0f32; DIM]; sentences.len()];
        forward(&pass, None, scratch, &mut out);
        *lock(&self.out[g]) = out;
    }
}

/// Runs the whole pass on this thread and `crew`'s helpers; writes one embedding per
/// sentence into `out`.
pub(crate) fn forward(
    pass: &Pass,
    crew: Option<&Crew>,
    scratch: &mut Scratch,
    out: &mut [Embedding],
) {
    let (w, isa) = (&*pass.w, pass.isa);
    let cfg = &w.config;
    let (h, ff) = (cfg.hidden, cfg.intermediate);
    let mut driver = lock(&pass.driver);
    let Driver { y, t, positions } = &mut *driver;
    positions.clear();
    for s in pass.starts.windows(2) {
        positions.extend(0..s[1] - s[0]);
    }
    embed_rows(isa, w, &pass.tokens, positions, &mut write(&pass.x));

    for (layer, l) in w.layers.iter().enumerate() {
        // Self-attention.
        quantize(isa, &read(&pass.x), h, &mut write(&pass.input));
        pass.run(crew, Job::Linear { layer, op: Op::Qkv }, scratch);
        pass.gather_columns(layer, Op::Qkv, &mut write(&pass.qkv));
        pass.run(crew, Job::Attention, scratch);
        pass.gather_heads(t);
        quantize(isa, t, h, &mut write(&pass.input));
        pass.run(
            crew,
            Job::Linear {
                layer,
                op: Op::AttnOut,
            },
            scratch,
        );
        pass.gather_columns(layer, Op::AttnOut, y);
        layer_norm_rows(
            isa,
            y,
            &l.attn_norm.gamma,
            &l.attn_norm.beta,
            cfg.layer_norm_eps,
        );
        std::mem::swap(y, &mut *write(&pass.x));

        // Feed-forward.
        quantize(isa, &read(&pass.x), h, &mut write(&pass.input));
        pass.run(
            crew,
            Job::Linear {
                layer,
                op: Op::FfnIn,
            },
            scratch,
        );
        pass.gather_columns(layer, Op::FfnIn, t);
        quantize(isa, t, ff, &mut write(&pass.input));
        pass.run(
            crew,
            Job::Linear {
                layer,
                op: Op::FfnOut,
            },
            scratch,
        );
        pass.gather_columns(layer, Op::FfnOut, y);
        layer_norm_rows(
            isa,
            y,
            &l.ffn_norm.gamma,
            &l.ffn_norm.beta,
            cfg.layer_norm_eps,
        );
        std::mem::swap(y, &mut *write(&pass.x));
    }

    // Mean pooling over each sentence's tokens, then L2 normalisation.
    let x = read(&pass.x);
    for (s, e) in pass.starts.windows(2).zip(out.iter_mut()) {
        *e = [0.0; DIM];
        for row in x[s[0] * h..s[1] * h].chunks_exact(h) {
            for (a, v) in e.iter_mut().zip(row) {
                *a += v;
            }
        }
        let norm = e.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            e.iter_mut().for_each(|v| *v /= norm);
        }
    }
}

// ---- Compute steps, each compiled once per instruction set (`kernels::multiversion`). ----

kernels::multiversion! {
    /// Input embeddings (word + position + token type) and LayerNorm, into `x`.
    fn embed_rows(w: &Weights, tokens: &[u32], positions: &[usize], x: &mut Vec<f32>) => embed_rows_body
}

#[inline(always)]
fn embed_rows_body(_isa: Isa, w: &Weights, tokens: &[u32], positions: &[usize], x: &mut Vec<f32>) {
    let (h, norm) = (w.config.hidden, &w.embed_norm);
    x.resize(tokens.len() * h, 0.0);
    for ((row, &token), &pos) in x.chunks_exact_mut(h).zip(tokens).zip(positions) {
        w.embed_token(token as usize, pos, row);
        math::layer_norm(row, &norm.gamma, &norm.beta, w.config.layer_norm_eps);
    }
}

kernels::multiversion! {
    /// Quantises `x` (rows x k) per row for a `k`-input linear layer.
    fn quantize(x: &[f32], k: usize, out: &mut Quantized) => quantize_body
}

#[inline(always)]
fn quantize_body(_isa: Isa, x: &[f32], k: usize, out: &mut Quantized) {
    out.q.resize(x.len(), 0);
    out.scale.resize(x.len() / k, 0.0);
    math::quantize_rows(x, k, math::activation_bound(k), &mut out.q, &mut out.scale);
}

kernels::multiversion! {
    fn layer_norm_rows(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) => layer_norm_rows_body
}

#[inline(always)]
fn layer_norm_rows_body(_isa: Isa, x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(gamma.len()) {
        math::layer_norm(row, gamma, beta, eps);
    }
}

kernels::multiversion! {
    /// `out = (q W[cols]^T) * scales + bias (+ residual[cols]) (then GELU)`, `out` being
    /// rows x cols.len(); `q` holds `rows` quantised rows.
    #[allow(clippy::too_many_arguments)]
    fn linear(
        lin: &Linear,
        q: &[i16],
        q_scale: &[f32],
        rows: usize,
        cols: std::ops::Range<usize>,
        residual: Option<&[f32]>,
        gelu: bool,
        out: &mut Vec<f32>,
    ) => linear_body
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn linear_body(
    isa: Isa,
    lin: &Linear,
    q: &[i16],
    q_scale: &[f32],
    rows: usize,
    cols: std::ops::Range<usize>,
    residual: Option<&[f32]>,
    gelu: bool,
    out: &mut Vec<f32>,
) {
    debug_assert!(!(gelu && residual.is_some()), "no layer has both");
    let width = cols.len();
    out.resize(rows * width, 0.0);
    let c0 = cols.start;
    kernels::matmul(
        isa,
        q,
        rows,
        lin.k,
        lin.w,
        cols,
        #[inline(always)]
        |r, first, acc| {
            let n = acc.len();
            let dst = &mut out[r * width + first..][..n];
            let (scale, bias) = (&lin.scale[c0 + first..][..n], &lin.bias[c0 + first..][..n]);
            let row_scale = q_scale[r];
            let values = acc
                .iter()
                .zip(scale)
                .zip(bias)
                .map(|((&a, s), b)| a as f32 * row_scale * s + b);
            // One pass per case, so that each output is written once.
            match residual {
                Some(res) => {
                    let res = &res[r * lin.n + c0 + first..][..n];
                    for ((d, v), x) in dst.iter_mut().zip(values).zip(res) {
                        *d = v + x;
                    }
                }
                None if gelu => dst
                    .iter_mut()
                    .zip(values)
                    .for_each(|(d, v)| *d = math::gelu(v)),
                None => dst.iter_mut().zip(values).for_each(|(d, v)| *d = v),
            }
        },
    );
}

kernels::multiversion! {
    /// One head of self-attention for one sentence: `qkv` holds the sentence's rows of the
    /// fused layer (`width` columns, head-grouped q|k|v, 1/sqrt(head_dim) already folded
    /// into q); `out` gets len x head_dim.
    fn attention(qkv: &[f32], width: usize, head: usize, dh: usize, scratch: &mut Scratch, out: &mut Vec<f32>)
        => attention_body
}

#[inline(always)]
fn attention_body(
    isa: Isa,
    qkv: &[f32],
    width: usize,
    head: usize,
    dh: usize,
    scratch: &mut Scratch,
    out: &mut Vec<f32>,
) {
    // Fused multiply-add only where the copy is compiled with FMA (elsewhere `mul_add`
    // would be a libm call).
    match (dh, isa == Isa::Scalar) {
        (32, false) => attention_fixed::<32, 2, true>(qkv, width, head, scratch, out),
        (32, true) => attention_fixed::<32, 2, false>(qkv, width, head, scratch, out),
        (64, false) => attention_fixed::<64, 4, true>(qkv, width, head, scratch, out),
        (64, true) => attention_fixed::<64, 4, false>(qkv, width, head, scratch, out),
        _ => unreachable!("head_dim is checked when the blob is read"),
    }
}

/// Lanes of the vectors the attention loops are written for (one zmm of f32).
const LANES: usize = 16;
/// Query rows per block in attention.
const QB: usize = 4;

/// `a * b + c`, fused when `FMA`.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// `attention` for head dimension `D` (= `DC` vectors of 16). Queries go in blocks of `QB`
/// rows (the last block repeats the last row and drops the copies) so that every inner loop
/// has a fixed trip count and its accumulators stay in vector registers; each loop keeps
/// `QB * 2` (scores) or `QB * DC` (output) independent multiply-add chains in flight.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // indexed loops with constant bounds vectorise best here
fn attention_fixed<const D: usize, const DC: usize, const FMA: bool>(
    qkv: &[f32],
    width: usize,
    head: usize,
    s: &mut Scratch,
    out: &mut Vec<f32>,
) {
    debug_assert_eq!(D, DC * LANES);
    let len = qkv.len() / width;
    let (q_off, k_off, v_off) = (head * 3 * D, head * 3 * D + D, head * 3 * D + 2 * D);
    // Keys transposed (D x padded), zero-padded to whole vectors.
    let padded = len.next_multiple_of(LANES);
    s.keys_t.clear();
    s.keys_t.resize(D * padded, 0.0);
    for j in 0..len {
        for (d, &v) in qkv[j * width + k_off..][..D].iter().enumerate() {
            s.keys_t[d * padded + j] = v;
        }
    }
    s.scores.resize(QB * padded, 0.0);
    out.resize(len * D, 0.0);
    for i0 in (0..len).step_by(QB) {
        let q: [&[f32]; QB] =
            std::array::from_fn(|r| &qkv[(i0 + r).min(len - 1) * width + q_off..][..D]);
        // Scores of QB queries against 32 (then 16) keys at a time.
        let blocks = padded / LANES;
        for pair in 0..blocks / 2 {
            scores_block::<D, 2, FMA>(&q, &s.keys_t, padded, 2 * pair, &mut s.scores);
        }
        if blocks % 2 == 1 {
            scores_block::<D, 1, FMA>(&q, &s.keys_t, padded, blocks - 1, &mut s.scores);
        }
        // Softmax over whole vectors: the padding scores -inf, whose weight (~1e-38 after
        // exp_neg's clamp) is negligible; only the real keys are read below.
        for row in s.scores.chunks_exact_mut(padded) {
            row[len..].fill(f32::NEG_INFINITY);
            math::softmax(row);
        }
        // Weighted sum of the value rows.
        let mut acc = [[[0.0f32; LANES]; DC]; QB];
        for j in 0..len {
            let v = &qkv[j * width + v_off..][..D];
            for r in 0..QB {
                let p = s.scores[r * padded + j];
                for c in 0..DC {
                    for l in 0..LANES {
                        acc[r][c][l] = madd::<FMA>(p, v[c * LANES + l], acc[r][c][l]);
                    }
                }
            }
        }
        for (r, acc) in acc.iter().enumerate().take(len - i0) {
            for (c, acc) in acc.iter().enumerate() {
                out[(i0 + r) * D + c * LANES..][..LANES].copy_from_slice(acc);
            }
        }
    }
}

/// Scores of the `QB` queries `q` against keys `16 * first .. 16 * (first + NB)`.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn scores_block<const D: usize, const NB: usize, const FMA: bool>(
    q: &[&[f32]; QB],
    keys_t: &[f32],
    padded: usize,
    first: usize,
    scores: &mut [f32],
) {
    let mut acc = [[[0.0f32; LANES]; NB]; QB];
    for d in 0..D {
        let k = &keys_t[d * padded + first * LANES..][..NB * LANES];
        for r in 0..QB {
            let qd = q[r][d];
            for b in 0..NB {
                for l in 0..LANES {
                    acc[r][b][l] = madd::<FMA>(qd, k[b * LANES + l], acc[r][b][l]);
                }
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        for (b, acc) in acc.iter().enumerate() {
            scores[r * padded + (first + b) * LANES..][..LANES].copy_from_slice(acc);
        }
    }
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    // Poisoning means a unit panicked; that panic is re-raised by the driver.
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
