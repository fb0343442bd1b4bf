"""Cached all-MiniLM-L6-v2 embeddings (numpy port, minilm_np.py == sentence-transformers).
embed(texts) -> (n, 384) float32, L2-normalised. Cache: data/emb/<sha1>.npy shards via a
single key->row index (data/emb_index.json + data/emb_rows.npy)."""
import os as _os
import sys as _sys

# scripts/gate: the numpy MiniLM and the engine text helpers this study shares with it.
_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
import hashlib, json, os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IDX = os.path.join(HERE, "data", "emb_index.json")
ROWS = os.path.join(HERE, "data", "emb_rows.npy")
_c = {}


def _key(t):
    return hashlib.sha1(t.encode("utf-8")).hexdigest()


def _load():
    if not _c:
        if os.path.exists(IDX):
            _c["idx"] = json.load(open(IDX))
            _c["rows"] = np.load(ROWS)
        else:
            _c["idx"], _c["rows"] = {}, np.zeros((0, 384), np.float32)
    return _c


def embed(texts, batch=64):
    c = _load()
    keys = [_key(t) for t in texts]
    missing = sorted({k: t for k, t in zip(keys, texts) if k not in c["idx"]}.items())
    if missing:
        import minilm_np  # crates/research/gate/minilm_np.py (PARENT on sys.path below)
        new = []
        for s in range(0, len(missing), 2048):
            part = missing[s:s + 2048]
            new.append(minilm_np.encode([t for _, t in part], batch=batch))
            print(f"  embedded {s + len(part)}/{len(missing)}", flush=True)
        new = np.vstack(new).astype(np.float32)
        base = len(c["rows"])
        for i, (k, _) in enumerate(missing):
            c["idx"][k] = base + i
        c["rows"] = np.vstack([c["rows"], new])
        np.save(ROWS, c["rows"])
        json.dump(c["idx"], open(IDX, "w"))
    return c["rows"][[c["idx"][k] for k in keys]]
