"""Pattern-less rules/tools (condition or name+description only): LOSO over the three sources."""
import numpy as np
from fit import loso, describe
SRC = ("clinc_nopat", "banking_nopat", "metatool_noex")
for model in ["static", "minilm"]:
    for feats in [["vec", "cov"], ["vec", "cov", "bg"], ["ccen", "cov"], ["vec", "cov", "bm"], ["vec", "cov", "bg", "bm"]]:
        o = loso(feats, sources=SRC, model=model)
        lr, t = o["all_model"]
        print(model, "+".join(feats).ljust(16), "LOSO", " | ".join(f"{n} {o[n]['acc']:.3f} (in {o[n]['in_right']:.3f})" for n in SRC),
              "| all", " ".join(f"{m['acc']:.3f}" for n, m in o["all"].items()), "|", describe(lr, t, feats), flush=True)
    # today's pattern-less calibration
