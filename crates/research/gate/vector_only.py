"""The design without the coverage term (LegsRan::VectorOnly), fitted as design.py does (operating point 0.20)."""
import numpy as np
from fit import fit, get
F = ["cen", "bg_s10"]
for model in ["static", "minilm"]:
    lr = fit(["clinc", "banking", "metatool"], F, model=model)
    b = lr.intercept_[0] - np.log(0.2 / 0.8)
    w = lr.coef_[0]
    accs = []
    for n in ["clinc", "banking", "metatool"]:
        s = get(n, model); z = b + w[0] * s.f("cen") + w[1] * s.f("bg_s10"); accs.append(f"{n} {s.metrics(z >= 0)['acc']:.3f}")
    print(model, f"vector only: z = {b:.4f} + {w[0]:.4f}*cen + {w[1]:.4f}*bg (pass z >= 0);", " ".join(accs))
