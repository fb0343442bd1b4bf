#!/usr/bin/env python3
"""The recommended gate, fitted on all three sources with examples (CLINC150 val+oos_val,
BANKING77-OOS valid, MetaTool dev), per embedder; written to design.json in the engine's
convention (the bias shifted so that the operating point is relevance >= 0.5).

  z = bias + w_cen * cen + w_cov * cov + w_bg * bg ;  relevance = sigmoid(z) ; pass: relevance >= 0.5

  cen : cosine(query, the rule's centroid) -- the normalised mean of the rule's normalised
        text vector and pattern vectors (the engine's centroid row); for a rule without
        patterns, its text vector.
  cov : the engine's text_coverage.
  bg  : dot(query, mu) -- the query's mean cosine to the catalog, with
        mu = (sum over the kind's documents of their centroid + N0 * mu_prior) / (n + N0),
        N0 = 10, mu_prior = data/mu_prior.<model>.npy (mean embedding of 3,000 CLINC150
        train messages).
"""
import json
import sys

import numpy as np

from fit import choose_threshold, describe, fit

FEATS = ["cen", "cov", "bg_s10"]
N0 = 10
THRESHOLD = 0.20


def make(model):
    lr = fit(["clinc", "banking", "metatool"], FEATS, model=model)
    # The operating point: relevance 0.20 of the fit. For the static model it is the best
    # mean accuracy of the three sources (sweep.py); for MiniLM the mean is flat between
    # 0.13 and 0.20 (0.808) and 0.20 keeps BANKING77-OOS's uncovered requests above 50 %.
    t = THRESHOLD
    w = dict(zip(["cen", "cov", "bg"], map(float, lr.coef_[0])))
    bias = float(lr.intercept_[0] - np.log(t / (1 - t)))
    mu_prior = np.load(f"data/mu_prior.{model}.npy")
    return {"features": "cen, cov, bg (N0=10)", "bias": bias, "w_cen": w["cen"], "w_cov": w["cov"],
            "w_bg": w["bg"], "min_relevance": 0.5, "fitted_threshold": float(t), "N0": N0,
            "mu_prior": [round(float(x), 6) for x in mu_prior], "describe": describe(lr, t, FEATS)}


if __name__ == "__main__":
    out = {m: make(m) for m in (sys.argv[1:] or ["static", "minilm"])}
    json.dump(out, open("design.json", "w"), indent=1)
    for m, d in out.items():
        print(m, f"z = {d['bias']:.4f} + {d['w_cen']:.4f}*cen + {d['w_cov']:.4f}*cov + {d['w_bg']:.4f}*bg  (pass z >= 0)",
              "| as fitted:", d["describe"])
