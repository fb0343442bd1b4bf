//! The model blob written by `scripts/make_blob.py`: parsing and validation.
//!
//! Big tensors (the int8 matrices and the embedding tables) stay borrowed from the blob, so a
//! blob embedded with `include_bytes!` is used in place from the binary's read-only pages.
//! Small f32 vectors (biases, scales, LayerNorm parameters: ~100 KB in all) are copied out.
//! Nothing here needs the blob to be aligned: bytes are read as bytes and f32 values with
//! `f32::from_le_bytes`. Alignment only helps speed (see [`crate::Aligned`]).

use crate::Error;

const MAGIC: &[u8; 8] = b"RUCHEEMB";
const VERSION: u32 = 1;
/// int8 symmetric per output channel, panels of 16 channels x input pairs; word
/// embeddings int8 per row.
const SCHEME_Q8: u32 = 1;
const HEADER_LEN: usize = 128;
const TENSOR_ALIGN: usize = 64;
/// Output channels per weight panel (the kernels' unit; see `kernels`).
pub(crate) const PANEL: usize = 16;
/// Tensors per encoder layer, in file order.
const LAYER_TENSORS: usize = 16;
const EMBEDDING_TENSORS: usize = 6;

/// Model hyper-parameters, from the blob header.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Word pieces in the vocabulary.
    pub vocab: usize,
    /// Width of every hidden state (the embedding's dimension).
    pub hidden: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate: usize,
    /// Longest accepted input, in word pieces including `[CLS]` and `[SEP]`.
    pub max_tokens: usize,
    /// LayerNorm's epsilon.
    pub layer_norm_eps: f32,
}

impl Config {
    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

/// A linear layer `y = x W^T + b` with int8 `W` in panel layout (see `kernels`).
pub(crate) struct Linear<'a> {
    /// Packed int8 weights, `n * k` bytes.
    pub w: &'a [u8],
    /// Per-output-channel dequantisation scale.
    pub scale: Vec<f32>,
    pub bias: Vec<f32>,
    pub n: usize,
    pub k: usize,
}

pub(crate) struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

pub(crate) struct Layer<'a> {
    /// Query, key and value fused, output channels grouped by head: `[q_h | k_h | v_h]` for
    /// each head h; the query rows already include the 1/sqrt(head_dim) attention scale.
    pub qkv: Linear<'a>,
    pub attn_out: Linear<'a>,
    pub attn_norm: Norm,
    pub ffn_in: Linear<'a>,
    pub ffn_out: Linear<'a>,
    pub ffn_norm: Norm,
}

pub(crate) struct Weights<'a> {
    pub config: Config,
    /// `[vocab][hidden]` int8, one scale per row in `word_scale`.
    word_q: &'a [u8],
    /// `[vocab]` little-endian f32.
    word_scale: &'a [u8],
    /// `[max_tokens][hidden]` little-endian f32.
    position: &'a [u8],
    /// Token type 0 (the only one sentence-transformers uses).
    token_type: Vec<f32>,
    pub embed_norm: Norm,
    pub layers: Vec<Layer<'a>>,
}

impl<'a> Weights<'a> {
    pub fn parse(blob: &'a [u8]) -> Result<Self, Error> {
        let header = blob
            .get(..HEADER_LEN)
            .ok_or(Error::Format("shorter than the header"))?;
        if &header[..8] != MAGIC {
            return Err(Error::Format("not a model blob (bad magic)"));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
        let version = u32_at(8);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        if u32_at(12) != SCHEME_Q8 {
            return Err(Error::Format("unknown weight scheme"));
        }
        let config = Config {
            vocab: u32_at(16) as usize,
            hidden: u32_at(20) as usize,
            layers: u32_at(24) as usize,
            heads: u32_at(28) as usize,
            intermediate: u32_at(32) as usize,
            max_tokens: u32_at(36) as usize,
            layer_norm_eps: f32::from_bits(u32_at(40)),
        };
        check_config(&config)?;
        let tensor_count = u32_at(44) as usize;
        if tensor_count != EMBEDDING_TENSORS + LAYER_TENSORS * config.layers {
            return Err(Error::Format("tensor count does not match the layer count"));
        }
        let total = u64::from_le_bytes(header[48..56].try_into().unwrap_or([0; 8]));
        if total != blob.len() as u64 {
            return Err(Error::Format(
                "file length differs from the header's (truncated?)",
            ));
        }

        let mut t = Tensors {
            blob,
            next: 0,
            count: tensor_count,
        };
        let (v, h, f) = (config.vocab, config.hidden, config.intermediate);
        let word_q = t.next(v * h)?;
        let word_scale = t.next(4 * v)?;
        let position = t.next(4 * config.max_tokens * h)?;
        let token_type = f32s(t.next(4 * h)?);
        let embed_norm = t.norm(h)?;
        let mut layers = Vec::with_capacity(config.layers);
        for _ in 0..config.layers {
            let qkv = t.linear(3 * h, h)?;
            let attn_out = t.linear(h, h)?;
            let attn_norm = t.norm(h)?;
            let ffn_in = t.linear(f, h)?;
            let ffn_out = t.linear(h, f)?;
            let ffn_norm = t.norm(h)?;
            layers.push(Layer {
                qkv,
                attn_out,
                attn_norm,
                ffn_in,
                ffn_out,
                ffn_norm,
            });
        }
        Ok(Weights {
            config,
            word_q,
            word_scale,
            position,
            token_type,
            embed_norm,
            layers,
        })
    }

    /// Writes the input embedding of `token` at `position` (word + position + token type),
    /// before LayerNorm. `token` and `position` must be in range (checked by the caller).
    pub fn embed_token(&self, token: usize, position: usize, out: &mut [f32]) {
        let h = self.config.hidden;
        let q = &self.word_q[token * h..(token + 1) * h];
        let scale = f32_at(self.word_scale, token);
        let pos = &self.position[position * h * 4..(position + 1) * h * 4];
        for (((o, &q), p), t) in out
            .iter_mut()
            .zip(q)
            .zip(pos.chunks_exact(4))
            .zip(&self.token_type)
        {
            let p = f32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            *o = f32::from(q as i8) * scale + p + t;
        }
    }
}

fn check_config(c: &Config) -> Result<(), Error> {
    let ok = c.vocab > 0
        && c.layers > 0
        && c.heads > 0
        && c.max_tokens > 0
        && c.hidden == crate::DIM
        && c.hidden.is_multiple_of(c.heads)
        && matches!(c.hidden / c.heads, 32 | 64)
        && c.hidden.is_multiple_of(PANEL)
        && c.intermediate.is_multiple_of(PANEL)
        && c.hidden.is_multiple_of(2)
        && c.intermediate.is_multiple_of(2)
        && c.vocab <= u32::MAX as usize
        && c.max_tokens <= 4096
        && c.layer_norm_eps.is_finite()
        && c.layer_norm_eps > 0.0;
    if ok {
        Ok(())
    } else {
        Err(Error::Format("unsupported model configuration"))
    }
}

/// Walks the tensor table in its fixed order, checking each entry.
struct Tensors<'a> {
    blob: &'a [u8],
    next: usize,
    count: usize,
}

impl<'a> Tensors<'a> {
    fn next(&mut self, expected_len: usize) -> Result<&'a [u8], Error> {
        if self.next >= self.count {
            return Err(Error::Format("tensor table too short"));
        }
        let entry = HEADER_LEN + 16 * self.next;
        self.next += 1;
        let field = |o: usize| -> Result<usize, Error> {
            let b = self
                .blob
                .get(o..o + 8)
                .ok_or(Error::Format("tensor table out of bounds"))?;
            let v = u64::from_le_bytes(b.try_into().map_err(|_| Error::Format("tensor table"))?);
            usize::try_from(v).map_err(|_| Error::Format("tensor offset too large"))
        };
        let (offset, len) = (field(entry)?, field(entry + 8)?);
        if len != expected_len {
            return Err(Error::Format("tensor has an unexpected size"));
        }
        if offset % TENSOR_ALIGN != 0 || offset < HEADER_LEN + 16 * self.count {
            return Err(Error::Format("tensor misplaced"));
        }
        let end = offset
            .checked_add(len)
            .ok_or(Error::Format("tensor out of bounds"))?;
        self.blob
            .get(offset..end)
            .ok_or(Error::Format("tensor out of bounds"))
    }

    fn linear(&mut self, n: usize, k: usize) -> Result<Linear<'a>, Error> {
        let w = self.next(n * k)?;
        let scale = f32s(self.next(4 * n)?);
        let bias = f32s(self.next(4 * n)?);
        if scale.iter().chain(&bias).any(|v| !v.is_finite()) {
            return Err(Error::Format("non-finite scale or bias"));
        }
        Ok(Linear {
            w,
            scale,
            bias,
            n,
            k,
        })
    }

    fn norm(&mut self, n: usize) -> Result<Norm, Error> {
        Ok(Norm {
            gamma: f32s(self.next(4 * n)?),
            beta: f32s(self.next(4 * n)?),
        })
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn f32_at(bytes: &[u8], i: usize) -> f32 {
    let b = &bytes[4 * i..4 * i + 4];
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
