#!/usr/bin/env python3
"""Coefficients of a design fitted without each source and on all (direct fit), and the
held-out table. Usage: coefs.py "feat feat ..." """
import sys, json
import numpy as np
from fitopt import fit_direct, src_obj
from fitlib import SOURCES, source_metrics
from table import fmt_row, HDR
feats = sys.argv[1].split()
rows, res = [], {}
for x in list(SOURCES) + ["all"]:
    train = [s for s in SOURCES if s != x] if x != "all" else list(SOURCES)
    b, w, tr = fit_direct(train, feats)
    res[x] = {"b": b, "w": w.tolist()}
    print(f"without {x:9}: b={b:+.3f} " + " ".join(f"{f}={v:+.3f}" for f, v in zip(feats, w)) + f"  (train obj {tr:.4f})", flush=True)
print(HDR)
for x in SOURCES:
    for base, m in source_metrics(x, res[x]["b"], np.array(res[x]["w"]), feats).items():
        print(fmt_row(f"{x} held out", base, m))
for x in SOURCES:
    for base, m in source_metrics(x, res["all"]["b"], np.array(res["all"]["w"]), feats).items():
        print(fmt_row("all-sources fit", base, m))
json.dump({"feats": feats, "fits": res}, open(f"data/coefs.{'_'.join(feats)}.json", "w"))
