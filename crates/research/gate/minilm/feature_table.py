#!/usr/bin/env python3
"""Added features, leave-one-source-out (direct fit), with the twin-rules stress test of each
all-sources fit (clinc_dup: every intent twice, two rules right for every message).
Appends the table to RESULTS.md."""
import numpy as np
from fitopt import loso_direct
from fitlib import SOURCES, get, design
DESIGNS = [
    ("today's form", "cen cov bg"),
    ("+ best example cosine", "cen cov bg pmax"),
    ("+ best example − centroid", "cen cov bg pmax-cen"),
    ("+ text cosine", "cen cov bg tcos"),
    ("+ cen² (non-linear)", "cen cov bg cen2"),
    ("+ centroid margin over the best other candidate", "cen cov bg gap"),
    ("+ vector margin (signed)", "cen cov bg vgap"),
    ("+ vector margin, split + / −", "cen cov bg vgap+ vgap-"),
    ("+ vector margin over the 3rd best other", "cen cov bg vgap3"),
    ("+ example margin", "cen cov bg pgap"),
    ("+ top by centroid (rank)", "cen cov bg rank0"),
    ("+ top by BM25 (rank)", "cen cov bg btop"),
    ("+ BM25 min-max (relative)", "cen cov bg bm"),
    ("+ softmax of centroid cosines (T 0.05)", "cen cov bg soft"),
    ("+ centroid − mean of the 5 next (local background)", "cen cov bg cenloc"),
    ("+ vector margin + top by BM25", "cen cov bg vgap btop"),
]
dup = get("clinc_dup")
ins = dup.qgrp == "in"
rows = ["\n## Added features (leave-one-source-out, direct fit) and the twin-rules stress test\n",
        "| design | LOSO mean | CLINC held out | BANKING held out | MetaTool held out | twins: in-scope refused | twins: both pass |",
        "|---|---:|---:|---:|---:|---:|---:|"]
for label, f in DESIGNS:
    feats = f.split()
    r = loso_direct(feats)
    b, w = r["all"]["coef"]
    passed = b + design(dup, feats) @ w >= 0
    m = dup.metrics(passed)
    both = [passed[np.nonzero((dup.qi == q) & (dup.y > 0))[0]].all() for q in np.nonzero(ins)[0]
            if ((dup.qi == q) & (dup.y > 0)).sum() == 2]
    line = f"| {label} (`{f}`) | {r['mean']:.4f} | {r['clinc']['obj']:.3f} | {r['banking']['obj']:.3f} | {r['metatool']['obj']:.3f} | {m['in_refused']:.3f} | {np.mean(both):.3f} |"
    rows.append(line); print(line, flush=True)
open("RESULTS.md", "a").write("\n".join(rows) + "\n")
