#!/usr/bin/env python3
"""The vector-only arm (no searchable word: no coverage term) of the with-examples
calibration: the same direct fit with (cen, bg) only, on all sources; today's for reference.
(Approximation: the candidates keep the hybrid order of the run with both legs.)"""
import numpy as np
from fitopt import fit_direct, src_obj
from fitlib import SOURCES
feats = ["cen", "bg"]
today = (-5.7428, np.array([13.6647, -11.4218]))
print("today vector-only:", today, "objective", np.mean([src_obj(x, today[0], today[1], feats) for x in SOURCES]).round(4))
b, w, tr = fit_direct(list(SOURCES), feats, start=np.r_[today[0], today[1]])
print(f"direct fit (all sources): b={b:.4f} cen={w[0]:.4f} bg={w[1]:.4f} objective {tr:.4f}")
for x in SOURCES:
    print(f"  {x}: today {src_obj(x, today[0], today[1], feats):.4f} fit {src_obj(x, b, w, feats):.4f}")
