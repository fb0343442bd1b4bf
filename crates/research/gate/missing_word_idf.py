"""Does the idf of the rarest query word a candidate misses (max_miss_idf) or the BM25
score add to the design cen+cov+bg_s10: leave-one-source-out, both embedders."""
import numpy as np
from fit import loso, describe
for model in ["static", "minilm"]:
    for feats in [["cen", "cov", "bg_s10"], ["cen", "cov", "bg_s10", "max_miss_idf"], ["cen", "bg_s10", "max_miss_idf"], ["cen", "cov", "bg_s10", "max_miss_idf", "bm"]]:
        o = loso(feats, model=model)
        b = o["banking"]; lr, t = o["all_model"]
        print(model, "+".join(feats).ljust(34), "LOSO", f"clinc {o['clinc']['acc']:.3f} banking {b['acc']:.3f} (in {b['in_right']:.3f} id {b['id-oos_refused']:.3f} ood {b['ood-oos_refused']:.3f}) meta {o['metatool']['acc']:.3f}",
              f"mean {np.mean([o[n]['acc'] for n in ['clinc','banking','metatool']]):.3f} | all", " ".join(f"{n} {m['acc']:.3f}" for n, m in o["all"].items()), "|", describe(lr, t, feats), flush=True)
