#!/usr/bin/env python3
"""The table of features tried: single-feature AUC on the top candidate (static and MiniLM),
and the leave-one-source-out mean accuracy (CLINC150, BANKING77-OOS, MetaTool) when the
feature is added to today's form (vec + cov) and to the recommended design (cen + cov + bg)."""
import numpy as np
from sklearn.metrics import roc_auc_score
import fit
from fit import loso, get
_orig = fit.choose_threshold
fit.choose_threshold = lambda lr, train, feats, model="static", grid=np.linspace(0.05, 0.95, 91), key="acc": _orig(lr, train, feats, model, grid, key)
FEATS = [
    ("vec", "engine vector: max cos over text, patterns, centroid"),
    ("cov", "engine text coverage (= 1 - unexplained share)"),
    ("bm", "bm25_norm (min-max over candidates)"),
    ("tcos", "cos(query, rule text)"),
    ("pmax", "best pattern cos"),
    ("cen", "centroid cos"),
    ("top2", "mean of top-2 pattern cos"),
    ("top3", "mean of top-3 pattern cos"),
    ("sc_mean", "rule scale: mean LOO best pattern-pattern cos"),
    ("ev_diff", "best pattern cos - rule scale (mean)"),
    ("ev_ratio", "best pattern cos / rule scale"),
    ("cen_diff", "centroid cos - LOO pattern-to-centroid cos"),
    ("top2_diff", "top-2 mean - rule scale"),
    ("margin_v", "vector minus best other candidate's"),
    ("margin_h", "hybrid minus best other candidate's"),
    ("margin_c", "centroid cos minus best other's"),
    ("unexpl_rare", "idf share of query words missing from the rule and in <=2% of rules"),
    ("miss_unknown_share", "idf share of query words in no rule at all"),
    ("max_miss_idf", "largest idf of a missing word (normalised)"),
    ("agree", "BM25's best = vector's best (query-level)"),
    ("knn10", "share of the 10 nearest patterns (all rules) that are the candidate's"),
    ("msp05", "softmax over all rules' centroid cos, T=0.05"),
    ("bg", "q . mean of catalog centroids"),
    ("bg_s10", "bg with mu shrunk to a prior (N0=10)"),
    ("ccen", "centroid cos after removing the catalog mean"),
    ("vec_rel_med", "vector minus median centroid cos over the catalog"),
    ("bg_local", "mean centroid cos of the 5 nearest other rules"),
    ("nq", "log(1 + number of query words)"),
]
def auc(s, c, grp):
    t = s.top; x = s.f(c)[t]; g = s.grp[t]; y = s.y[t]
    pos = (g == "in") & (y > 0); neg = g == grp; ok = ~np.isnan(x)
    a = roc_auc_score(np.r_[np.ones((pos & ok).sum()), np.zeros((neg & ok).sum())], np.r_[x[pos & ok], x[neg & ok]])
    return max(a, 1 - a) * (1 if a >= 0.5 else -1)
base_cache = {}
def lmean(feats, model):
    o = loso(feats, model=model)
    return np.mean([o[n]["acc"] for n in ["clinc", "banking", "metatool"]]), o["banking"]["acc"]
print("| feature | what | AUC static: CLINC oos / BANK id-oos / BANK ood / Meta none | AUC MiniLM: same | LOSO mean (banking) static: vec+cov+f | design+f | MiniLM: vec+cov+f | design+f |")
print("|---|---|---|---|---|---|---|---|")
b = {m: (lmean(["vec", "cov"], m), lmean(["cen", "cov", "bg_s10"], m)) for m in ["static", "minilm"]}
print(f"| (none) | base | | | {b['static'][0][0]:.3f} ({b['static'][0][1]:.3f}) | {b['static'][1][0]:.3f} ({b['static'][1][1]:.3f}) | {b['minilm'][0][0]:.3f} ({b['minilm'][0][1]:.3f}) | {b['minilm'][1][0]:.3f} ({b['minilm'][1][1]:.3f}) |", flush=True)
for f, what in FEATS:
    cells = []
    for m in ["static", "minilm"]:
        a = [auc(get(n, m), f, g) for n, g in [("clinc", "oos"), ("banking", "id-oos"), ("banking", "ood-oos"), ("metatool", "none")]]
        cells.append(" / ".join(f"{x:.2f}" if x > 0 else f"{-x:.2f}↓" for x in a))
    l = []
    for m in ["static", "minilm"]:
        for base in [["vec", "cov"], ["cen", "cov", "bg_s10"]]:
            if f in base:
                l.append("—"); continue
            mm, bk = lmean(base + [f], m)
            l.append(f"{mm:.3f} ({bk:.3f})")
    print(f"| {f} | {what} | {cells[0]} | {cells[1]} | {l[0]} | {l[1]} | {l[2]} | {l[3]} |", flush=True)
