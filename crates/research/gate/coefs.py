"""Coefficients of the design per leave-one-source-out fold (stability)."""
from fit import fit, choose_threshold, describe
SRC = ["clinc", "banking", "metatool"]
F = ["cen", "cov", "bg_s10"]
for model in ["static", "minilm"]:
    for x in SRC + [None]:
        tr = [n for n in SRC if n != x]
        lr = fit(tr, F, model=model); t = choose_threshold(lr, tr, F, model=model)
        print(model, ("without " + x if x else "all").ljust(16), describe(lr, t, F))
