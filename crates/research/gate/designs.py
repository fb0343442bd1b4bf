"""Candidate designs, both embedders: LOSO and all-sources fit."""
import sys
import numpy as np
from fit import loso, describe
D = {
    "D0 vec+cov (today)": ["vec", "cov"],
    "D1 ccen+cov": ["ccen", "cov"],
    "D2 ccen+bm": ["ccen", "bm"],
    "D3 ccen+bm+pmax": ["ccen", "bm", "pmax"],
    "D4 ccen+margin_v+bm": ["ccen", "margin_v", "bm"],
    "D5 cen+cov+bg": ["cen", "cov", "bg"],
    "D6 ccen+cov+margin_v": ["ccen", "cov", "margin_v"],
    "D7 ccen+cov+bm+margin_v": ["ccen", "cov", "bm", "margin_v"],
    "D8 cen+cov+bg+margin_v": ["cen", "cov", "bg", "margin_v"],
    "D9 vec+cen+cov+bg": ["vec", "cen", "cov", "bg"],
    "D10 cen+bm+bg": ["cen", "bm", "bg"],
    "D11 cen+bm+bg+margin_v": ["cen", "bm", "bg", "margin_v"],
}
for model in sys.argv[1:] or ["static", "minilm"]:
    print("==", model)
    for name, feats in D.items():
        o = loso(feats, model=model)
        b = o["banking"]
        lr, t = o["all_model"]
        print(f"{name:26} LOSO clinc {o['clinc']['acc']:.3f} banking {b['acc']:.3f} (in {b['in_right']:.3f} id {b['id-oos_refused']:.3f} ood {b['ood-oos_refused']:.3f}) meta {o['metatool']['acc']:.3f} mean {(o['clinc']['acc']+b['acc']+o['metatool']['acc'])/3:.3f} | all: " +
              " ".join(f"{n} {m['acc']:.3f}" for n, m in o["all"].items()) + f" mean {np.mean([m['acc'] for m in o['all'].values()]):.3f}", flush=True)
