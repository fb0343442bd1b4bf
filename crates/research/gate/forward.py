"""Greedy forward selection of gate features by mean leave-one-source-out accuracy.
Usage: python3 forward.py [static|minilm] [max_features]"""
import sys
import numpy as np
import fit
from fit import loso
model = sys.argv[1] if len(sys.argv) > 1 else "static"
kmax = int(sys.argv[2]) if len(sys.argv) > 2 else 6
POOL = ["vec", "cen", "pmax", "top3", "tcos", "cov", "bm", "bg", "ccen", "margin_h", "margin_c", "margin_v", "knn10",
        "agree", "unexpl_rare", "miss_unknown_share", "ev_diff", "sc_mean"]
_orig = fit.choose_threshold
fit.choose_threshold = lambda lr, train, feats, model="static", grid=np.linspace(0.05, 0.95, 61), key="acc": _orig(lr, train, feats, model, grid, key)
cur = []
best_prev = 0
while len(cur) < kmax:
    res = []
    for f in POOL:
        if f in cur: continue
        o = loso(cur + [f], model=model)
        m = np.mean([o[s]["acc"] for s in ["clinc", "banking", "metatool"]])
        res.append((m, f, o))
    res.sort(key=lambda r: -r[0])
    m, f, o = res[0]
    cur.append(f)
    print(f"+{f:18} LOSO mean {m:.3f}  clinc {o['clinc']['acc']:.3f} banking {o['banking']['acc']:.3f} (in {o['banking']['in_right']:.3f} id {o['banking']['id-oos_refused']:.3f} ood {o['banking']['ood-oos_refused']:.3f}) metatool {o['metatool']['acc']:.3f} | runner-ups: " +
          ", ".join(f"{g} {mm:.3f}" for mm, g, _ in res[1:4]), flush=True)
