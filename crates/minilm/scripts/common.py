"""Shared helpers: paths, tokenizer, weights, a configurable numpy forward pass.

The forward pass mirrors crates/research/gate/minilm_np.py (BERT, mean pooling, L2 norm) but runs
sentence by sentence without padding, like the Rust code, and can simulate the
quantisation schemes of the parity study.
"""
import os

import numpy as np
from scipy.special import erf

MODEL_DIR = os.environ.get("MINILM_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target", "models", "all-MiniLM-L6-v2"))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
os.makedirs(OUT, exist_ok=True)

H, HEADS, DH, FF, LAYERS, MAX_LEN = 384, 12, 32, 1536, 6, 256
LINEARS = ["attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense"]


def tokenizer():
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(MODEL_DIR, "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_LEN)
    tok.no_padding()
    return tok


def token_ids(texts):
    return [e.ids for e in tokenizer().encode_batch(list(texts))]


def weights():
    from safetensors.numpy import load_file
    return load_file(os.path.join(MODEL_DIR, "model.safetensors"))


# ---- weight quantisers (return the de-quantised f32 matrix the kernel effectively uses) ----

def q8_rows(w):
    """Symmetric int8, one scale per row (output channel for a [N, K] linear weight)."""
    amax = np.abs(w).max(1, keepdims=True)
    s = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / s), -127, 127).astype(np.int8)
    return q, s[:, 0]


def deq_rows(w):
    q, s = q8_rows(w)
    return q.astype(np.float32) * s[:, None]


def deq_groups(w, g, bits=8):
    """Symmetric per-group along the input (K) dimension."""
    n, k = w.shape
    qmax = 2 ** (bits - 1) - 1
    wg = w.reshape(n, k // g, g)
    amax = np.abs(wg).max(2, keepdims=True)
    s = np.where(amax > 0, amax / qmax, 1.0).astype(np.float32)
    q = np.clip(np.rint(wg / s), -qmax, qmax)
    return (q * s).reshape(n, k).astype(np.float32)


def act_bound(k):
    """Largest |q| for i16 activations such that K * 127 * |q| fits in i32 (exact sums)."""
    return min(32767, (2 ** 31 - 1) // (k * 127))


def quant_rows_act(x, qmax):
    """Dynamic per-row symmetric quantisation of activations, returned de-quantised (f32)."""
    x = x.astype(np.float32)
    amax = np.abs(x).max(1, keepdims=True).astype(np.float32)
    inv = np.where(amax > 0, np.float32(qmax) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
    q = np.clip(np.rint(x * inv), -qmax, qmax)
    s = (amax / np.float32(qmax)).astype(np.float32)
    return q, s


class Variant:
    """A quantisation scheme. lin(w) -> effective weight; emb(w) -> effective embedding table;
    act: None (f32), 'i16' (per-row, bound from K) or 'i8' (per-row symmetric)."""

    def __init__(self, name, lin=None, emb=None, act=None, dtype=np.float32):
        self.name, self.lin, self.emb, self.act, self.dtype = name, lin, emb, act, dtype


def prepare(w, v):
    """Effective weights for variant v (dict of arrays in v.dtype)."""
    d = v.dtype
    p = {"word": (v.emb(w["embeddings.word_embeddings.weight"]) if v.emb
                  else w["embeddings.word_embeddings.weight"]).astype(d),
         "pos": w["embeddings.position_embeddings.weight"].astype(d),
         "type0": w["embeddings.token_type_embeddings.weight"][0].astype(d),
         "ln_g": w["embeddings.LayerNorm.weight"].astype(d),
         "ln_b": w["embeddings.LayerNorm.bias"].astype(d)}
    for i in range(LAYERS):
        pre = f"encoder.layer.{i}."
        for n in LINEARS:
            wt = w[pre + n + ".weight"]
            p[(i, n, "w")] = (v.lin(wt) if v.lin else wt).astype(d)
            p[(i, n, "b")] = w[pre + n + ".bias"].astype(d)
        for n in ["attention.output.LayerNorm", "output.LayerNorm"]:
            p[(i, n, "g")] = w[pre + n + ".weight"].astype(d)
            p[(i, n, "b")] = w[pre + n + ".bias"].astype(d)
    return p


def _ln(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    var = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(var + eps) * g + b


def _linear(x, wt, b, act):
    if act is None:
        return x @ wt.T + b
    k = x.shape[1]
    qmax = act_bound(k) if act == "i16" else 127
    q, s = quant_rows_act(x, qmax)
    # Integer products are exact in float64; the sums stay below 2^53.
    return ((q.astype(np.float64) @ wt.T.astype(np.float64)) * s).astype(x.dtype) + b


def forward(ids_list, p, act=None, dtype=np.float32):
    """Embeds a batch of token-id lists (no padding: rows concatenated, attention per text)."""
    lens = [len(t) for t in ids_list]
    starts = np.cumsum([0] + lens)
    ids = np.concatenate([np.asarray(t, np.int64) for t in ids_list])
    pos = np.concatenate([np.arange(n) for n in lens])
    x = p["word"][ids] + p["pos"][pos] + p["type0"][None]
    x = _ln(x, p["ln_g"], p["ln_b"]).astype(dtype)
    for i in range(LAYERS):
        lin = lambda t, n: _linear(t, p[(i, n, "w")], p[(i, n, "b")], act)
        q = lin(x, "attention.self.query")
        k = lin(x, "attention.self.key")
        v = lin(x, "attention.self.value")
        ctx = np.empty_like(x)
        for s0, s1 in zip(starts[:-1], starts[1:]):
            L = s1 - s0
            qh = q[s0:s1].reshape(L, HEADS, DH).transpose(1, 0, 2)
            kh = k[s0:s1].reshape(L, HEADS, DH).transpose(1, 0, 2)
            vh = v[s0:s1].reshape(L, HEADS, DH).transpose(1, 0, 2)
            a = qh @ kh.transpose(0, 2, 1) / np.sqrt(dtype(DH)).astype(dtype)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx[s0:s1] = (a @ vh).transpose(1, 0, 2).reshape(L, H)
        x = _ln(lin(ctx, "attention.output.dense") + x,
                p[(i, "attention.output.LayerNorm", "g")], p[(i, "attention.output.LayerNorm", "b")])
        h = lin(x, "intermediate.dense")
        h = (0.5 * h * (1 + erf(h / np.sqrt(2)))).astype(dtype)
        x = _ln(lin(h, "output.dense") + x,
                p[(i, "output.LayerNorm", "g")], p[(i, "output.LayerNorm", "b")])
    out = np.stack([x[s0:s1].mean(0) for s0, s1 in zip(starts[:-1], starts[1:])])
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def forward_batched(ids_list, p, act=None, dtype=np.float32, rows=4096):
    """forward() in chunks of about `rows` tokens (keeps memory bounded)."""
    out, cur, n = [], [], 0
    for t in ids_list:
        cur.append(t)
        n += len(t)
        if n >= rows:
            out.append(forward(cur, p, act, dtype))
            cur, n = [], 0
    if cur:
        out.append(forward(cur, p, act, dtype))
    return np.concatenate(out)
