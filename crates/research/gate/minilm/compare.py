#!/usr/bin/env python3
"""Paired comparison of gate designs, leave-one-source-out (direct fit), with a stratified
bootstrap over queries (1000 draws) of the held-out source's objective difference.
Usage: compare.py "cen cov bg" "cen cov bg vgap" ...  (the first is the reference)"""
import sys
import numpy as np
from fitopt import fit_direct, prep
from fitlib import SOURCES, base_of

def good_vectors(name, b, w, feats):
    s, X, wq, ins = prep(name, feats)
    passed = (b + X @ w >= 0) | s.code
    f = np.full(s.nq, -1); idx = np.nonzero(passed)[0]; q = s.qi[idx]
    _, first = np.unique(q, return_index=True); f[q[first]] = idx[first]
    ans = f >= 0; right = np.zeros(s.nq, bool); right[ans] = s.y[f[ans]] > 0
    return np.where(ins, right, ~ans).astype(float), wq, s.qgrp

def held_out_goods(feats, src, coef=None):
    train = [x for x in SOURCES if x != src]
    b, w, _ = fit_direct(train, feats) if coef is None else (*coef, None)
    out = {}
    for n in SOURCES[src]:
        g, wq, grp = good_vectors(n, b, w, feats)
        out.setdefault(base_of(n), []).append((g, wq, grp))
    # folds of a held-out variant: concatenated, each fold's weights divided by the folds,
    # strata = (fold, group)
    res = {}
    for k, v in out.items():
        g = np.concatenate([x[0] for x in v]); wq = np.concatenate([x[1] / len(v) for x in v])
        grp = np.concatenate([np.char.add(f"{i}:", x[2]) for i, x in enumerate(v)])
        res[k] = (g, wq, grp)
    return res, (b, w)

def boot_diff(A, B, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n):
        tot = []
        for k in A:
            ga, wq, grp = A[k]; gb = B[k][0]
            d = 0.0
            for gname in np.unique(grp):
                idx = np.nonzero(grp == gname)[0]
                r = rng.choice(idx, len(idx))
                d += wq[idx[0]] * len(idx) * (gb[r].mean() - ga[r].mean())
            tot.append(d)
        diffs.append(np.mean(tot))
    diffs = np.array(diffs)
    return diffs.mean(), np.quantile(diffs, [0.025, 0.975])

designs = [a.split() for a in sys.argv[1:]]
ref = designs[0]
for src in SOURCES:
    A, _ = held_out_goods(ref, src)
    objA = np.mean([(v[0] * v[1]).sum() for v in A.values()])
    for d in designs[1:]:
        B, _ = held_out_goods(d, src)
        objB = np.mean([(v[0] * v[1]).sum() for v in B.values()])
        m, ci = boot_diff(A, B)
        print(f"{src:9} held out: {' '.join(ref)} {objA:.4f} -> {' '.join(d)} {objB:.4f}: diff {m:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]", flush=True)
