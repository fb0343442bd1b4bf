#!/usr/bin/env python3
"""LOSO mean objective and per held-out source for many feature sets (one line each)."""
import sys
import numpy as np
from fitlib import loso, SOURCES
SETS = [l.split() for l in sys.stdin.read().strip().splitlines()]
for f in SETS:
    r = loso(f)
    per = " ".join(f"{x}:{r[x]['obj']:.3f}" for x in SOURCES)
    mb = r["banking"]["metrics"]
    extra = f"bankOOS in {mb['banking']['in_right']:.3f} id {mb['banking']['id-oos_refused']:.3f} | bank77 {mb['bank77']['in_right']:.3f}"
    print(f"{r['mean']:.4f} | {per} | {extra} | {' '.join(f)}", flush=True)
