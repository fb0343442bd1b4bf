"""Top-1 on in-scope messages when the candidates (engine's top 10) are re-ordered by one signal."""
import numpy as np
from evalgate import Set
for model in ["static", "minilm"]:
    for n in ["clinc", "banking", "metatool"]:
        s = Set(n, model)
        out = []
        for key in ["hyb", "vec", "cen", "ccen", "ccos", "pmax", "top3"]:
            x = s.f(key); acc = []
            for qi in np.unique(s.qi):
                if s.qgrp[qi] != "in": continue
                rows = np.nonzero(s.qi == qi)[0]
                acc.append(s.y[rows[np.argmax(x[rows])]])
            out.append(f"{key} {np.mean(acc):.3f}")
        # hybrid with ccen instead of vec
        x = 0.8 * s.f("ccen") + 0.2 * s.f("bm"); acc = []
        for qi in np.unique(s.qi):
            if s.qgrp[qi] != "in": continue
            rows = np.nonzero(s.qi == qi)[0]; acc.append(s.y[rows[np.argmax(x[rows])]])
        out.append(f"0.8ccen+0.2bm {np.mean(acc):.3f}")
        print(model, n.ljust(9), " ".join(out), flush=True)
