#!/usr/bin/env python3
"""Gate off: in-scope top-1 when the candidates are ordered by the engine's score, or by one
signal (centroid cosine, best vector, a relevance formula). Is the ranking the limit?"""
import numpy as np
from fitlib import get
def top1(s, key):
    best = {}
    for r in range(len(s.y)):
        q = s.qi[r]
        if q not in best or key[r] > key[best[q]]:
            best[q] = r
    ins = np.nonzero(s.qgrp == "in")[0]
    return np.mean([s.y[best[q]] > 0 if q in best else False for q in ins])
for n in ["bank77", "banking", "clinc", "metatool"]:
    s = get(n)
    z = 12.4699 * s.cen + 1.3509 * s.cov - 11.5081 * s.bg
    print(f"{n:9} score {top1(s, s.score):.3f}  hybrid {top1(s, s.hyb):.3f}  cen {top1(s, s.cen):.3f}  vec {top1(s, s.vec):.3f}  "
          f"pmax {top1(s, s.pmax):.3f}  cen+0.2cov {top1(s, s.cen + 0.2 * s.cov):.3f}  0.8cen+0.2bm {top1(s, 0.8 * s.cen + 0.2 * s.bm):.3f}  0.5cen+0.5pmax+.2bm {top1(s, 0.4*s.cen+0.4*s.pmax+0.2*s.bm):.3f}")
