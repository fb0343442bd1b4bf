"""Fitting a small logistic gate on some sources and measuring it on others.

gate: relevance = sigmoid(b + sum w_f * f); a candidate passes when relevance >= t.
Rows: the top `rows_k` candidates of each query (label: the candidate is right).
Sample weights: each source sums to 1; within a source, groups weighted to its mix
(evalgate.MIX). Threshold t: the one maximising the mean of the training sources' acc
(simulated per-candidate gate, first passing candidate in the engine's order).
"""
import numpy as np
from sklearn.linear_model import LogisticRegression

from evalgate import MIX, Set

_cache = {}


USE_MX = True  # MiniLM: use the engine's own run with caller-supplied vectors (<set>_mx)


def get(name, model="static"):
    import os
    if (name, model) not in _cache:
        real = f"{name}_mx" if (model != "static" and USE_MX and not name.endswith("_mx")
                                and os.path.exists(f"data/{name}_mx.feat.{model}.npz")) else name
        _cache[(name, model)] = Set(real, model)
    return _cache[(name, model)]


def design(s, feats):
    cols = []
    for f in feats:
        if callable(f):
            cols.append(f(s))
        else:
            cols.append(s.f(f))
    X = np.column_stack(cols)
    return np.nan_to_num(X, nan=0.0)


def weights(s, mask):
    mix = MIX[s.base]
    g = s.grp
    w = np.zeros(len(g))
    for k, share in mix.items():
        sel = (g == k) & mask
        if sel.sum():
            w[sel] = share / sum(mix.values()) / sel.sum()
    return w


def fit(train, feats, rows_k=3, C=1.0, model="static"):
    Xs, ys, ws = [], [], []
    for n in train:
        s = get(n, model)
        m = s.rank < rows_k
        Xs.append(design(s, feats)[m])
        ys.append(s.y[m])
        w = weights(s, m)[m]
        ws.append(w / w.sum())
    X, y, w = np.vstack(Xs), np.concatenate(ys), np.concatenate(ws)
    lr = LogisticRegression(C=C, max_iter=2000)
    lr.fit(X, y, sample_weight=w * len(w))
    return lr


def relevance(lr, s, feats):
    return lr.predict_proba(design(s, feats))[:, 1]


def choose_threshold(lr, train, feats, model="static", grid=np.linspace(0.05, 0.95, 181), key="acc"):
    best = None
    for t in grid:
        accs = [get(n, model).metrics(relevance(lr, get(n, model), feats) >= t)[key] for n in train]
        a = float(np.mean(accs))
        if best is None or a > best[0]:
            best = (a, t)
    return best[1]


def evaluate(lr, t, s, feats):
    return s.metrics(relevance(lr, s, feats) >= t)


def loso(feats, sources=("clinc", "banking", "metatool"), rows_k=3, C=1.0, model="static", verbose=True):
    out = {}
    for x in sources:
        train = [n for n in sources if n != x]
        lr = fit(train, feats, rows_k, C, model)
        t = choose_threshold(lr, train, feats, model)
        out[x] = evaluate(lr, t, get(x, model), feats)
        out[x]["t"] = t
    lr = fit(list(sources), feats, rows_k, C, model)
    t = choose_threshold(lr, list(sources), feats, model)
    out["all"] = {n: evaluate(lr, t, get(n, model), feats) for n in sources}
    out["all_model"] = (lr, t)
    return out


def describe(lr, t, feats):
    names = [f if isinstance(f, str) else getattr(f, "__name__", "f") for f in feats]
    z = np.log(t / (1 - t))
    terms = " + ".join(f"{c:.3f}*{n}" for c, n in zip(lr.coef_[0], names))
    return f"z = {lr.intercept_[0]:.3f} + {terms}; pass when z >= {z:.3f} (relevance >= {t:.3f})"
