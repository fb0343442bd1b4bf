#!/usr/bin/env python3
"""AUC of single features of the top candidate: covered requests whose top candidate is right
(positives) against near misses (BANKING77-OOS id-oos) and general out-of-scope messages."""
import numpy as np
from sklearn.metrics import roc_auc_score
from gate import S
sets = {n: S(n) for n in ["clinc", "banking", "bank77"]}
def feats(s):
    return {"cen": s.cen, "cov": s.cov, "-bg": -s.bg, "cen-0.9bg": s.cen - 0.92 * s.bg, "z_today": 12.4699*s.cen+1.3509*s.cov-11.5081*s.bg,
            "pmax": s.pmax, "tcos": s.tcos, "vec": s.vec, "pmax-cen": s.pmax - s.cen, "cen_gap": s.cen_gap, "vec_gap": s.vec_gap, "bm": s.bm}
def top(s, mask_q):
    t = (s.rank == 0) & mask_q[s.qi]
    return t
pos = []
neg = {}
for n, s in sets.items():
    F = feats(s)
    ins_right = np.zeros(s.nq, bool)
    f0 = s.first(np.ones(len(s.y), bool))
    ins_right = (s.qgrp == "in") & (s.y[f0] > 0)
    t = top(s, ins_right)
    pos.append((n, {k: v[t] for k, v in F.items()}))
    for g in set(s.qgrp) - {"in"}:
        neg[f"{n}:{g}"] = {k: v[top(s, s.qgrp == g)] for k, v in F.items()}
    neg[f"{n}:in-wrong"] = {k: v[top(s, (s.qgrp == 'in') & ~ins_right)] for k, v in F.items()}
keys = list(feats(sets["clinc"]).keys())
print("positives: covered, top right; AUC per negative group (source of positives: banking77-oos in + bank77 for banking groups, clinc for clinc)")
print(f"{'feature':12}" + "".join(f"{g:>22}" for g in neg))
for k in keys:
    row = f"{k:12}"
    for g, d in neg.items():
        src = g.split(":")[0]
        P = np.concatenate([p[k] for n, p in pos if (n == src or (src.startswith('bank') and n.startswith('bank')))])
        N = d[k]
        y = np.r_[np.ones(len(P)), np.zeros(len(N))]
        row += f"{roc_auc_score(y, np.r_[P, N]):22.3f}"
    print(row)
