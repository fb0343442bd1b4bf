#!/usr/bin/env python3
"""The same direct fits (today's form) without the held-out-intent variants: sources = the
given sets only (CLINC150 val; BANKING77-OOS + BANKING77 all-in-scope; MetaTool dev)."""
import numpy as np
import fitlib, fitopt
fitlib.SOURCES.clear(); fitlib.SOURCES.update({"clinc": ["clinc"], "banking": ["banking", "bank77"], "metatool": ["metatool"]})
feats = ["cen", "cov", "bg"]
for x in list(fitlib.SOURCES) + ["all"]:
    train = [s for s in fitlib.SOURCES if s != x] if x != "all" else list(fitlib.SOURCES)
    b, w, tr = fitopt.fit_direct(train, feats, start=np.r_[-5.6107, 12.4699, 1.3509, -11.5081])
    line = f"without {x:9}: b={b:+.3f} " + " ".join(f"{f}={v:+.3f}" for f, v in zip(feats, w))
    if x != "all":
        m = fitlib.source_metrics(x, b, w, feats)
        line += " | held out: " + "; ".join(f"{k}: acc {v['acc']:.3f} in {v['in_right']:.3f}" + "".join(f" {g} {v[g]:.3f}" for g in v if g.endswith('_refused') and g != 'in_refused') for k, v in m.items())
    else:
        for y in fitlib.SOURCES:
            for k, v in fitlib.source_metrics(y, b, w, feats).items():
                line += f"\n    {k}: acc {v['acc']:.3f} in {v['in_right']:.3f} in_refused {v['in_refused']:.3f}" + "".join(f" {g} {v[g]:.3f}" for g in v if g.endswith('_refused') and g != 'in_refused')
    print(line, flush=True)
