"""Pattern-less rules/tools: today's pattern-less calibrations (kept by the design)."""
import numpy as np
from evalgate import Set, fmt
CAL = {"static": (3.48, 4.46, -2.38), "minilm": (6.19, 1.09, -1.76)}
for model in ["static", "minilm"]:
    a, b, c = CAL[model]
    for n in ["clinc_nopat", "banking_nopat", "metatool_noex"]:
        s = Set(n, model)
        z = c + a * s.f("vec") + b * s.f("cov")
        print(model, n.ljust(14), fmt(s.metrics(z >= 0)), "| gate off in-scope top-1", f"{s.metrics(z > -1e9)['in_right']:.3f}")
