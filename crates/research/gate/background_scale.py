"""Which scale of the catalog background term helps the gate most (bg, bg_s10, bg_s20,
with or without the raw cosine): leave-one-source-out accuracy, both embedders."""
import numpy as np
from fit import loso, describe
for model in ["static", "minilm"]:
    for feats in [["cen", "cov", "bg"], ["cen", "cov", "bg_s10"], ["cen", "cov", "bg_s20"], ["vec", "cen", "cov", "bg_s20"]]:
        o = loso(feats, model=model)
        lr, t = o["all_model"]
        print(model, "+".join(feats).ljust(22), "LOSO", " ".join(f"{n} {o[n]['acc']:.3f}" for n in ["clinc", "banking", "metatool"]),
              f"mean {np.mean([o[n]['acc'] for n in ['clinc','banking','metatool']]):.3f} | all", " ".join(f"{n} {m['acc']:.3f}" for n, m in o["all"].items()), "|", describe(lr, t, feats), flush=True)
