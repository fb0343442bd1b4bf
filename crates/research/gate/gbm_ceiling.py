"""Does a non-linear model over every feature beat the small logistic gates? (5-fold by
query within a source, and leave-one-source-out)."""
import sys
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from fit import get, weights
from evalgate import fmt
model = sys.argv[1] if len(sys.argv) > 1 else "static"
SRC = ["clinc", "banking", "metatool"]
drop = {"rel0", "npat"}
def XY(s):
    cols = [i for i, c in enumerate(s.cols) if c not in drop]
    return np.nan_to_num(s.X[:, cols])
def best_t(ps, sets):
    best = None
    for t in np.linspace(0.02, 0.98, 97):
        a = np.mean([s.metrics(p >= t)["acc"] for p, s in zip(ps, sets)])
        if best is None or a > best[0]: best = (a, t)
    return best[1]
# within-source CV
for n in SRC:
    s = get(n, model); X = XY(s); p = np.zeros(len(X))
    qf = s.qi % 5
    for f in range(5):
        tr = (qf != f) & (s.rank < 3); te = qf == f
        w = weights(s, tr)[tr]
        m = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15).fit(X[tr], s.y[tr], sample_weight=w * len(w))
        p[te] = m.predict_proba(X[te])[:, 1]
    t = best_t([p], [s])
    print("CV in-source", n, fmt(s.metrics(p >= t)), f"t={t:.2f} (threshold in-sample)")
for x in SRC:
    tr_sets = [get(n, model) for n in SRC if n != x]
    Xs, ys, ws = [], [], []
    for s in tr_sets:
        m = s.rank < 3; w = weights(s, m)[m]
        Xs.append(XY(s)[m]); ys.append(s.y[m]); ws.append(w / w.sum())
    m = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15).fit(np.vstack(Xs), np.concatenate(ys), sample_weight=np.concatenate(ws) * sum(map(len, ws)))
    t = best_t([m.predict_proba(XY(s))[:, 1] for s in tr_sets], tr_sets)
    s = get(x, model)
    print("LOSO", x, fmt(s.metrics(m.predict_proba(XY(s))[:, 1] >= t)), f"t={t:.2f}")
