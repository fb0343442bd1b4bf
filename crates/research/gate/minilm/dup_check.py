#!/usr/bin/env python3
"""Two rules apply to every in-scope message (clinc_dup): does a design refuse more covered
requests, and does it still pass both twins? Usage: dup_check.py [coefs json ...]"""
import sys, json
import numpy as np
from fitlib import get, design
s = get("clinc_dup")
designs = {"today": (["cen", "cov", "bg"], -5.6107, np.array([12.4699, 1.3509, -11.5081]))}
for p in sys.argv[1:]:
    d = json.load(open(p))
    designs[" ".join(d["feats"])] = (d["feats"], d["fits"]["all"]["b"], np.array(d["fits"]["all"]["w"]))
ins = s.qgrp == "in"
for name, (feats, b, w) in designs.items():
    passed = b + design(s, feats) @ w >= 0
    m = s.metrics(passed)
    # both twins pass (among in-scope messages whose two right rules are both candidates)
    both = []
    for q in np.nonzero(ins)[0]:
        rows = np.nonzero((s.qi == q) & (s.y > 0))[0]
        if len(rows) == 2:
            both.append(passed[rows].all())
    print(f"{name:28} in-scope first right {m['in_right']:.3f} refused {m['in_refused']:.3f} | oos refused {m['oos_refused']:.3f} | both twins pass {np.mean(both):.3f} (n={len(both)})")
