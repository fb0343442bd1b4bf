#!/usr/bin/env python3
"""In-sample frontier (optimistic, fitted on banking itself): bank77 covered top-1 against
banking id-oos refusal, for a few feature sets. Tells whether the banking targets can be met
together by any gate of that form."""
import numpy as np
from sklearn.linear_model import LogisticRegression
from gate import S
b, a = S("banking"), S("bank77")
def F(s, names):
    d = {"cen": s.cen, "cov": s.cov, "bg": s.bg, "pmax": s.pmax, "tcos": s.tcos, "gap": s.cen_gap, "vgap": s.vec_gap,
         "gap+": np.maximum(s.cen_gap, 0), "gap-": np.minimum(s.cen_gap, 0), "rank0": (s.cen_rank == 0).astype(float),
         "vec": s.vec, "bm": s.bm}
    return np.column_stack([d[n] for n in names])
for names in [["cen"], ["cen", "cov", "bg"], ["cen", "cov", "gap"], ["cen", "cov", "gap+", "gap-"], ["cen", "cov", "bg", "gap+", "gap-"], ["cen", "cov", "pmax", "gap+", "gap-", "vgap"]]:
    # rows: top 3 candidates of banking (in right/ id-oos/ ood all), label = right
    m = b.rank < 3
    X, y = F(b, names)[m], b.y[m]
    w = np.ones(len(y))
    lr = LogisticRegression(C=10, max_iter=3000).fit(X, y, sample_weight=w)
    zb, za = lr.decision_function(F(b, names)), lr.decision_function(F(a, names))
    print(names, np.round(lr.coef_[0], 2), round(lr.intercept_[0], 2))
    for target in [0.80, 0.82, 0.83]:
        # the threshold giving bank77 in_right >= target (most strict)
        best = None
        for t in np.linspace(-6, 3, 181):
            ma = a.metrics(za >= t)
            if ma["in_right"] >= target:
                best = t
        if best is None:
            print("   unreachable", target); continue
        mb = b.metrics(zb >= best)
        print(f"   bank77 in_right>={target}: t={best:.2f} banking in_right {mb['in_right']:.3f} id-oos {mb['id-oos_refused']:.3f} ood {mb['ood-oos_refused']:.3f} acc {mb['acc']:.3f}")
