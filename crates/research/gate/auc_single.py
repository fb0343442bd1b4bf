"""Single-feature AUC on the top candidate: in-scope with the top right (positive) vs
out-of-scope messages (negative), per source and out-of-scope group."""
import numpy as np
from sklearn.metrics import roc_auc_score
from evalgate import Set
sets = {n: Set(n) for n in ["clinc", "banking", "metatool"]}
cols = sets["clinc"].cols
hdr = ["clinc:oos", "bank:id-oos", "bank:ood", "meta:none", "clinc:in-wrong"]
print(f"{'feature':20}" + "".join(f"{h:>15}" for h in hdr))
for c in cols:
    out = []
    for n, grp in [("clinc", "oos"), ("banking", "id-oos"), ("banking", "ood-oos"), ("metatool", "none"), ("clinc", "wrong")]:
        s = sets[n]; t = s.top
        x = s.f(c)[t]; g = s.grp[t]; y = s.y[t]
        pos = (g == "in") & (y > 0)
        neg = (g == "in") & (y == 0) if grp == "wrong" else (g == grp)
        ok = ~np.isnan(x)
        if ok[pos | neg].sum() == 0 or len(set(x[(pos | neg) & ok])) < 2:
            out.append(float("nan")); continue
        out.append(roc_auc_score(np.r_[np.ones((pos & ok).sum()), np.zeros((neg & ok).sum())], np.r_[x[pos & ok], x[neg & ok]]))
    print(f"{c:20}" + "".join(f"{v:15.3f}" for v in out))
