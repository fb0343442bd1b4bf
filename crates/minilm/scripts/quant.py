"""Quantisation parity study: each scheme's vectors against the reference (sentence-
transformers float32, or the numpy float64 forward if that is missing), plus storage size
raw / gzip -9 / xz -9. Run ref.py first. Writes out/parity.md.
"""
import json
import os
import subprocess
import sys

import numpy as np

import common
from common import Variant, deq_groups, deq_rows


def f16(w):
    return w.astype(np.float16).astype(np.float32)


def variants():
    v = [Variant("f32 weights (numpy f32 forward)"),
         Variant("(a) f16 weights + f16 word emb", lin=f16, emb=f16),
         Variant("(b) int8 per-channel, emb f32", lin=deq_rows),
         Variant("(b) int8 per-channel, emb f16", lin=deq_rows, emb=f16)]
    for g in (32, 64, 128):
        v.append(Variant(f"(c) int8 group {g}, emb f32", lin=lambda w, g=g: deq_groups(w, g)))
    v.append(Variant("(d) int8 per-channel + emb int8/row", lin=deq_rows, emb=deq_rows))
    for g in (32, 64, 128):
        v.append(Variant(f"(d) int8 group {g} + emb int8/row",
                         lin=lambda w, g=g: deq_groups(w, g), emb=deq_rows))
    v.append(Variant("(x) int4 group 32 + emb int8/row",
                     lin=lambda w: deq_groups(w, 32, bits=4), emb=deq_rows))
    v.append(Variant("(x) int4 group 32 + emb f16", lin=lambda w: deq_groups(w, 32, bits=4),
                     emb=f16))
    # Compute schemes on top of the (d) per-channel storage: activations quantised per row.
    v.append(Variant("(d)+A16: activations i16/row (Rust kernel)", lin=deq_rows, emb=deq_rows,
                     act="i16"))
    v.append(Variant("(d)+A8: activations i8/row (W8A8)", lin=deq_rows, emb=deq_rows, act="i8"))
    return v


# ---- storage: the bytes each scheme would ship (for raw and compressed sizes) ----

def storage_bytes(w, lin, emb, group=None):
    """lin/emb in {'f32','f16','i8','i4'}; group=None means per output channel / per row."""
    parts = []

    def mat(a, kind, g):
        if kind == "f32":
            parts.append(a.astype("<f4").tobytes())
        elif kind == "f16":
            parts.append(a.astype("<f2").tobytes())
        else:
            bits = 8 if kind == "i8" else 4
            qmax = 2 ** (bits - 1) - 1
            n, k = a.shape
            gg = g or k
            ag = a.reshape(n, k // gg, gg)
            amax = np.abs(ag).max(2, keepdims=True)
            s = np.where(amax > 0, amax / qmax, 1.0)
            q = np.clip(np.rint(ag / s), -qmax, qmax).astype(np.int8).reshape(n, k)
            if bits == 4:
                u = (q & 0x0F).astype(np.uint8)
                q = (u[:, 0::2] | (u[:, 1::2] << 4)).astype(np.uint8)
            parts.append(q.tobytes())
            parts.append(s.astype("<f4").tobytes())

    mat(w["embeddings.word_embeddings.weight"], emb, None)
    parts.append(w["embeddings.position_embeddings.weight"][:common.MAX_LEN].astype("<f4").tobytes())
    for k_, t in w.items():
        if k_.startswith("encoder.") and k_.endswith(".weight") and t.ndim == 2:
            mat(t, lin, group)
        elif (k_.startswith("encoder.") or "LayerNorm" in k_ or "token_type" in k_) and t.ndim == 1:
            parts.append(t.astype("<f4").tobytes())
    return b"".join(parts)


def compressed(data, cmd):
    return len(subprocess.run(cmd, input=data, capture_output=True, check=True).stdout)


def main():
    ids = json.load(open(os.path.join(common.OUT, "sample_ids.json")))["ids"]
    ref_path = os.path.join(common.OUT, "ref_st.npy")
    ref_name = "sentence-transformers (torch f32)"
    if not os.path.exists(ref_path):
        ref_path, ref_name = os.path.join(common.OUT, "ref_np64.npy"), "numpy float64 forward"
    ref = np.load(ref_path)
    w = common.weights()
    rows = []
    only = sys.argv[1:]
    for v in variants():
        if only and not any(o in v.name for o in only):
            continue
        p = common.prepare(w, v)
        out = common.forward_batched(ids, p, act=v.act)
        cos = (out * ref).sum(1)
        rows.append((v.name, cos.min(), cos.mean(), np.percentile(cos, 1), int(cos.argmin())))
        print(f"{v.name:48s} min {cos.min():.5f} mean {cos.mean():.6f} p1 {np.percentile(cos, 1):.5f}"
              f"  worst #{cos.argmin()}", flush=True)
        if "Rust kernel" in v.name:
            np.save(os.path.join(common.OUT, "sim_a16.npy"), out)

    sizes = []
    if not only:
        for name, lin, emb, g in [("f32 (pos 256 rows, no pooler)", "f32", "f32", None),
                                  ("f16 + emb f16", "f16", "f16", None),
                                  ("int8 per-channel + emb f32", "i8", "f32", None),
                                  ("int8 per-channel + emb f16", "i8", "f16", None),
                                  ("int8 per-channel + emb int8/row", "i8", "i8", None),
                                  ("int8 group 32 + emb int8/row", "i8", "i8", 32),
                                  ("int8 group 64 + emb int8/row", "i8", "i8", 64),
                                  ("int8 group 128 + emb int8/row", "i8", "i8", 128),
                                  ("int4 group 32 + emb int8/row", "i4", "i8", 32)]:
            b = storage_bytes(w, lin, emb, g)
            sizes.append((name, len(b), compressed(b, ["gzip", "-9", "-c"]),
                          compressed(b, ["xz", "-9", "-T1", "-c"])))
            print(f"{name:34s} raw {sizes[-1][1]:>10,} gzip {sizes[-1][2]:>10,} xz {sizes[-1][3]:>10,}",
                  flush=True)

    with open(os.path.join(common.OUT, "parity.md" if not only else "parity_partial.md"), "w") as f:
        f.write(f"Reference: {ref_name}; {len(ids)} texts.\n\n")
        f.write("| scheme | min cos | mean cos | p1 cos |\n|---|---:|---:|---:|\n")
        for r in rows:
            f.write(f"| {r[0]} | {r[1]:.5f} | {r[2]:.6f} | {r[3]:.5f} |\n")
        if sizes:
            f.write("\n| storage | raw bytes | gzip -9 | xz -9 |\n|---|---:|---:|---:|\n")
            for s in sizes:
                f.write(f"| {s[0]} | {s[1]:,} | {s[2]:,} | {s[3]:,} |\n")


if __name__ == "__main__":
    main()
