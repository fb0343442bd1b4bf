"""Direct fit: the coefficients that maximise the mean objective (accuracy with abstention
under each set's mix) of the training sources, by Nelder-Mead from the logistic fit.
Fast path: per set, the design matrix and the per-query row blocks are cached."""
import numpy as np
from scipy.optimize import minimize
import fitlib
from fitlib import SOURCES, get, design, base_of
from gate import MIX

_D = {}


def prep(name, feats):
    key = (name, tuple(feats))
    if key not in _D:
        s = get(name)
        X = design(s, feats)
        g = s.qgrp
        mix = MIX[s.base]
        # per query weight in the set's accuracy, and whether it is in scope
        w = np.zeros(s.nq)
        for k, share in mix.items():
            sel = g == k
            if sel.sum():
                w[sel] = share / sum(mix.values()) / sel.sum()
        _D[key] = (s, X, w, g == "in")
    return _D[key]


def acc(name, b, wv, feats):
    s, X, w, ins = prep(name, feats)
    passed = (b + X @ wv >= 0) | s.code
    f = np.full(s.nq, -1)
    idx = np.nonzero(passed)[0]
    q = s.qi[idx]
    _, first = np.unique(q, return_index=True)
    f[q[first]] = idx[first]
    ans = f >= 0
    right = np.zeros(s.nq, bool)
    right[ans] = s.y[f[ans]] > 0
    good = np.where(ins, right, ~ans)
    return float(w @ good)


def src_obj(src, b, wv, feats):
    sets = {}
    for n in SOURCES[src]:
        sets.setdefault(base_of(n), []).append(n)
    return float(np.mean([np.mean([acc(n, b, wv, feats) for n in members]) for members in sets.values()]))


def train_obj(train, p, feats):
    return float(np.mean([src_obj(x, p[0], p[1:], feats) for x in train]))


def fit_direct(train, feats, start=None, iters=600):
    if start is None:
        b, w = fitlib.fit(train, feats)
        t = fitlib.choose_t(train, b, w, feats)
        start = np.r_[b - t, w]
    res = minimize(lambda p: -train_obj(train, p, feats), start, method="Nelder-Mead",
                   options={"maxiter": iters, "xatol": 1e-3, "fatol": 1e-5, "adaptive": True})
    return res.x[0], res.x[1:], -res.fun


def loso_direct(feats, iters=600):
    out = {}
    for x in SOURCES:
        train = [s for s in SOURCES if s != x]
        b, w, tr = fit_direct(train, feats, iters=iters)
        out[x] = {"coef": (b, w), "train": tr, "obj": src_obj(x, b, w, feats),
                  "metrics": fitlib.source_metrics(x, b, w, feats, 0.0)}
    b, w, tr = fit_direct(list(SOURCES), feats, iters=iters)
    out["all"] = {"coef": (b, w), "train": tr, "metrics": {x: fitlib.source_metrics(x, b, w, feats, 0.0) for x in SOURCES}}
    out["mean"] = float(np.mean([out[x]["obj"] for x in SOURCES]))
    return out
