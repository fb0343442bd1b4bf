"""Converts all-MiniLM-L6-v2's model.safetensors into the blob read by src/blob.rs.

    make_blob.py [MODEL_DIR] [OUT_FILE]

Layout (all little-endian; every tensor starts at a multiple of 64 bytes):

  header, 128 bytes:
     0  magic b"RUCHEEMB"
     8  u32 format version (1)
    12  u32 weight scheme (1 = int8 symmetric per output channel, i16-pair panels; word
        embeddings int8 per row)
    16  u32 vocab, hidden, layers, heads, intermediate, max_tokens (6 x u32)
    40  f32 layer-norm epsilon
    44  u32 tensor count
    48  u64 total file length
    56  8 bytes zero
    64  32 bytes SHA-256 of the source model.safetensors
    96  32 bytes zero
  tensor table at 128: per tensor (u64 offset, u64 byte length), in the fixed order below
  tensors, each 64-byte aligned, zero padding between them.

Fixed tensor order:
  word_q [vocab][hidden] i8, word_scale [vocab] f32, position [max_tokens][hidden] f32,
  token_type0 [hidden] f32, emb_ln_gamma, emb_ln_beta [hidden] f32,
  then per layer: qkv_w, qkv_scale, qkv_bias, out_w, out_scale, out_bias, ln1_gamma,
  ln1_beta, ffn1_w, ffn1_scale, ffn1_bias, ffn2_w, ffn2_scale, ffn2_bias, ln2_gamma, ln2_beta.

Linear weights (PyTorch [out][in]) are quantised to int8 with one scale per output row and
stored in the kernel's layout: panels of 16 output channels; within a panel, for each pair
of input positions (2j, 2j+1), 16 x 2 bytes: (w[n][2j], w[n][2j+1]) for n = 16p .. 16p+15.
The query, key and value projections are fused into one [3 * hidden][hidden] matrix whose
rows are grouped by head (q, k, v of head 0, then head 1, ...), and 1/sqrt(head_dim) is
folded into the query rows' scales and biases.
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np

MAGIC = b"RUCHEEMB"
VERSION = 1
SCHEME_Q8 = 1
PANEL = 16
ALIGN = 64
HEADER = 128


def q8_rows(w):
    """Symmetric int8 per row; same rounding as py/common.q8_rows (ties to even)."""
    w = w.astype(np.float32)
    amax = np.abs(w).max(1, keepdims=True)
    s = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / s), -127, 127).astype(np.int8)
    return q, s[:, 0]


def pack_panels(q):
    """[N][K] int8 -> panel layout: [N/16][K/2][16][2]."""
    n, k = q.shape
    assert n % PANEL == 0 and k % 2 == 0, (n, k)
    return np.ascontiguousarray(
        q.reshape(n // PANEL, PANEL, k // 2, 2).transpose(0, 2, 1, 3)).tobytes()


def linear(w, b, row_scale=None):
    q, s = q8_rows(w)
    if row_scale is not None:
        s = (s * row_scale).astype(np.float32)
        b = (b * row_scale).astype(np.float32)
    return [pack_panels(q), s.astype("<f4").tobytes(), b.astype("<f4").tobytes()]


def f32(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def build(model_dir):
    from safetensors.numpy import load_file
    src = os.path.join(model_dir, "model.safetensors")
    src_sha = hashlib.sha256(open(src, "rb").read()).digest()
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = load_file(src)
    vocab, hidden, layers = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    heads, inter, eps = cfg["num_attention_heads"], cfg["intermediate_size"], cfg["layer_norm_eps"]
    max_tokens = 256  # sentence-transformers' max_seq_length for this model
    dh = hidden // heads
    assert cfg["hidden_act"] == "gelu" and cfg["position_embedding_type"] == "absolute"

    wq, ws = q8_rows(w["embeddings.word_embeddings.weight"])
    tensors = [wq.tobytes(), f32(ws),
               f32(w["embeddings.position_embeddings.weight"][:max_tokens]),
               f32(w["embeddings.token_type_embeddings.weight"][0]),
               f32(w["embeddings.LayerNorm.weight"]), f32(w["embeddings.LayerNorm.bias"])]
    for i in range(layers):
        p = f"encoder.layer.{i}."
        # Fused QKV, rows grouped by head: [q_h, k_h, v_h] for h = 0..heads-1.
        parts_w = [w[p + f"attention.self.{t}.weight"] for t in ("query", "key", "value")]
        parts_b = [w[p + f"attention.self.{t}.bias"] for t in ("query", "key", "value")]
        rows_w, rows_b, rows_s = [], [], []
        for h in range(heads):
            sl = slice(h * dh, (h + 1) * dh)
            for t in range(3):
                rows_w.append(parts_w[t][sl])
                rows_b.append(parts_b[t][sl])
                rows_s.append(np.full(dh, 1.0 / np.sqrt(dh) if t == 0 else 1.0, np.float32))
        tensors += linear(np.concatenate(rows_w), np.concatenate(rows_b), np.concatenate(rows_s))
        tensors += linear(w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        tensors += [f32(w[p + "attention.output.LayerNorm.weight"]),
                    f32(w[p + "attention.output.LayerNorm.bias"])]
        tensors += linear(w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"])
        tensors += linear(w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        tensors += [f32(w[p + "output.LayerNorm.weight"]), f32(w[p + "output.LayerNorm.bias"])]

    table_len = 16 * len(tensors)
    off = -(-(HEADER + table_len) // ALIGN) * ALIGN
    entries, body = [], bytearray()
    for t in tensors:
        entries.append((off, len(t)))
        body += t
        pad = -len(t) % ALIGN
        body += b"\0" * pad
        off += len(t) + pad
    total = entries[0][0] + len(body)
    header = struct.pack("<8sII6IfIQ8x32s32x", MAGIC, VERSION, SCHEME_Q8, vocab, hidden, layers,
                         heads, inter, max_tokens, eps, len(tensors), total, src_sha)
    assert len(header) == HEADER
    table = b"".join(struct.pack("<QQ", o, n) for o, n in entries)
    gap = entries[0][0] - HEADER - table_len
    blob = header + table + b"\0" * gap + bytes(body)
    assert len(blob) == total
    return blob, src_sha


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target", "models", "all-MiniLM-L6-v2")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "model", "all-MiniLM-L6-v2.q8.bin")
    blob, src_sha = build(model_dir)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    # In three parts, each under 8 MB (build.rs joins them).
    size = -(-len(blob) // 3)
    for part in range(3):
        with open(f"{out}.{part}", "wb") as f:
            f.write(blob[part * size:(part + 1) * size])
    print(f"source model.safetensors sha256 {src_sha.hex()}")
    print(f"blob {os.path.abspath(out)}.{{0,1,2}}: {len(blob):,} bytes, sha256 {hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
