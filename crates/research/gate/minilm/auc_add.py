#!/usr/bin/env python3
"""Which added feature separates covered-and-right from near misses (BANKING77-OOS id-oos,
CLINC held-out intents, MetaTool held-out tools) beyond (cen, cov, bg)? 5-fold CV AUC of a
logistic on the top candidate, per source."""
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from sklearn.metrics import roc_auc_score
from fitlib import get, FEATS
import fitlib

def knn_vote(s, k=5):
    # share of the k nearest examples (over the whole catalog) that belong to the candidate
    out = np.zeros(len(s.y))
    pd = np.repeat(np.arange(len(s.nex)), s.nex)
    S_ = s.Q @ s.P.T
    top = np.argsort(-S_, axis=1)[:, :k]
    votes = pd[top]
    for r in range(len(s.y)):
        out[r] = np.mean(votes[s.qi[r]] == s.di[r])
    return out
FEATS["knn5"] = lambda s: s.__dict__.setdefault("_knn5", knn_vote(s, 5))
srcs = {"banking": ["banking"], "clinc_ho": ["clinc_ho0", "clinc_ho1"], "metatool_ho": ["metatool_ho0", "metatool_ho1", "metatool_ho2"]}
base = ["cen", "cov", "bg"]
adds = [None, "vgap", "gap", "pgap", "pmax", "pmax-cen", "bm", "rank0", "soft", "cenloc", "knn5", "tcos"]
print(f"{'added':10}" + "".join(f"{k:>14}" for k in srcs))
for a in adds:
    row = f"{str(a):10}"
    for k, names in srcs.items():
        X, y = [], []
        for n in names:
            s = get(n)
            f0 = s.first(np.ones(len(s.y), bool))
            right = (s.qgrp == "in") & (s.y[f0] > 0)
            near = s.qgrp == "id-oos"
            t = (s.rank == 0)
            sel = t & (right | near)[s.qi]
            feats = base + ([a] if a else [])
            X.append(fitlib.design(s, feats)[sel]); y.append(right[s.qi][sel])
        X, y = np.vstack(X), np.concatenate(y)
        p = cross_val_predict(LogisticRegression(C=10, max_iter=3000), X, y, cv=5, method="decision_function")
        row += f"{roc_auc_score(y, p):14.3f}"
    print(row, flush=True)
