#!/usr/bin/env python3
"""Checks that the Python features reproduce the engine: today's MiniLM BackgroundCalibration
over (cen, cov, bg) equals the engine's relevance for candidates with examples, and the
simulated gate's first hit equals the engine's default first hit. Usage: check_sim.py set..."""
import sys, json
import numpy as np
from gate import S, sig, rj, HERE

BOTH = (-5.6107, 12.4699, 1.3509, -11.5081)
VONLY = (-5.7428, 13.6647, 0.0, -11.4218)
for name in sys.argv[1:]:
    s = S(name)
    b = BOTH
    z = b[0] + b[1] * s.cen + b[2] * s.cov + b[3] * s.bg
    r = sig(z)
    m = s.ex
    err = np.abs(r - s.rel)[m]
    bad = err > 1e-4
    print(f"{name}: rows {len(s.y)}, with examples {m.sum()}, |rel_py - rel_engine| max {err.max() if m.any() else 0:.2e}, >1e-4: {bad.sum()}")
    if bad.any():
        k = np.nonzero(m)[0][bad][:3]
        for kk in k:
            zv = VONLY[0] + VONLY[1] * s.cen[kk] + VONLY[3] * s.bg[kk]
            print("   e.g.", s.qtext[s.qi[kk]][:60], s.rel[kk], r[kk], "vector-only:", sig(zv))
    # first-hit agreement with the engine's default output
    dflt = {o["id"]: (o["hits"][0]["id"] if o["hits"] else None) for o in rj(f"{HERE}/data/{name}/default.jsonl")}
    f = s.first(s.rel >= 0.5)
    sim = [s.dids[s.di[i]] if i >= 0 else None for i in f]
    agree = np.mean([sim[i] == dflt[q] for i, q in enumerate(s.qids)])
    print(f"   first hit: simulated (engine relevance >= 0.5) == engine default for {agree:.4f} of {s.nq} queries")
