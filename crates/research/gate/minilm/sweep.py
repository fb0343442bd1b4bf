#!/usr/bin/env python3
"""All-sources fit of a feature set, then the operating point swept: every target metric.
Usage: sweep.py FEAT,FEAT,...   (or `today`)"""
import sys
import numpy as np
from fitlib import fit, SOURCES, source_metrics
if sys.argv[1] == "today":
    feats = ["cen", "cov", "bg"]; b, w = -5.6107, np.array([12.4699, 1.3509, -11.5081])
else:
    feats = sys.argv[1].split(",")
    b, w = fit(list(SOURCES), feats)
print("b", round(b, 4), dict(zip(feats, np.round(w, 4))))
print("   t | bank77 | bankOOS in  id   ood  acc | clinc in oos acc | clinc_ho in near | meta in none acc | meta_ho near")
for t in np.arange(-3.0, 1.01, 0.25):
    M = {x: source_metrics(x, b, w, feats, t) for x in SOURCES}
    c, ch, bo, b7, mt, mh = M["clinc"]["clinc"], M["clinc"]["clinc_ho"], M["banking"]["banking"], M["banking"]["bank77"], M["metatool"]["metatool"], M["metatool"]["metatool_ho"]
    print(f"{t:+.2f} | {b7['in_right']:.3f} | {bo['in_right']:.3f} {bo['id-oos_refused']:.3f} {bo['ood-oos_refused']:.3f} {bo['acc']:.3f} | "
          f"{c['in_right']:.3f} {c['oos_refused']:.3f} {c['acc']:.3f} | {ch['in_right']:.3f} {ch['id-oos_refused']:.3f} | "
          f"{mt['in_right']:.3f} {mt['none_refused']:.3f} {mt['acc']:.3f} | {mh['id-oos_refused']:.3f}")
