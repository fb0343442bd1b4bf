"""Trade-off of one design (all-sources fit) over the threshold."""
import sys
import numpy as np
from fit import fit, choose_threshold, relevance, get, describe
model = sys.argv[1]; feats = sys.argv[2].split("+")
lr = fit(["clinc", "banking", "metatool"], feats, model=model)
t0 = choose_threshold(lr, ["clinc", "banking", "metatool"], feats, model=model)
print(describe(lr, t0, feats))
for t in sorted(set(np.round(list(np.arange(0.05, 0.8, 0.05)) + [t0], 3))):
    row = []
    for n in ["clinc", "banking", "metatool"]:
        s = get(n, model); m = s.metrics(relevance(lr, s, feats) >= t)
        if n == "banking":
            row.append(f"banking {m['acc']:.3f} (in {m['in_right']:.3f} id {m['id-oos_refused']:.3f} ood {m['ood-oos_refused']:.3f})")
        elif n == "clinc":
            row.append(f"clinc {m['acc']:.3f} (in {m['in_right']:.3f} oos {m['oos_refused']:.3f})")
        else:
            row.append(f"meta {m['acc']:.3f} (in {m['in_right']:.3f} none {m['none_refused']:.3f})")
    print(f"t={t:.3f} " + " | ".join(row))
