"""Agreement of model2vec (Python, text_to_embed applied) with the engine's `vector`."""
import numpy as np
from common import *
for name in ["banking", "clinc", "metatool", "stb"]:
    docs, queries, gold, hits = load(name)
    Q, T, P, off, qidx, didx = embeddings(name)
    diffs = []
    for qid, hs in hits.items():
        q = Q[qidx[qid]]
        for h in hs[:10]:
            i = didx[h["id"]]
            rows = [T[i]] + list(P[off[i]:off[i+1]])
            M = np.array(rows)
            if len(rows) > 1:
                c = M.mean(0); c /= np.linalg.norm(c); M = np.vstack([M, c])
            diffs.append(max(0, (M @ q).max()) - h["vector"])
    d = np.abs(diffs)
    print(f"{name:9} pairs {len(d):6}  max|diff| {d.max():.2e}  mean {d.mean():.2e}  share>1e-4 {(d>1e-4).mean():.4f}")
