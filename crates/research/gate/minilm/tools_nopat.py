#!/usr/bin/env python3
"""Tools without examples: a calibration of their own? Direct fit on MetaTool with the
descriptions only (metatool_np + its held-out-tool folds), then what it does to StableToolBench
(no examples; gold APIs kept by the gate, default selection) and CLINC150 condition-only rules
(if it were shared with rules)."""
import json
import numpy as np
import fitlib, fitopt
from gate import rj, HERE, sig
from tools_eval import rec, band
fitlib.SOURCES.clear(); fitlib.SOURCES.update({"metatool": ["metatool_np"] + [f"metatool_np_ho{k}" for k in range(5)]})
b, w, tr = fitopt.fit_direct(["metatool"], ["vec", "cov"], start=np.r_[-1.76, 6.19, 1.09])
print(f"MetaTool-only fit: b={b:.3f} vec={w[0]:.3f} cov={w[1]:.3f} (train objective {tr:.3f})")
for name, (bb, ww) in {"today": (-1.76, (6.19, 1.09)), "metatool-only fit": (b, w)}.items():
    m = fitlib.source_metrics("metatool", bb, np.array(ww), ["vec", "cov"])
    print(f"  {name}: " + "; ".join(f"{k} acc {v['acc']:.3f} in {v['in_right']:.3f} in_refused {v['in_refused']:.3f}" for k, v in m.items()))
    for st in ["stb", "stbmulti"]:
        gold = {q: set(g["labels"]) for q, g in json.load(open(f"{HERE}/data/{st}/gold.json"))["gold"].items()}
        dump = {o["id"]: o["hits"] for o in rj(f"{HERE}/data/{st}/dump30.jsonl")}
        rel = lambda h: sig(bb + ww[0] * (h["vector"] or 0) + ww[1] * h["text_coverage"])
        sel = {q: band(hs, 0.15, 8, rel=rel) for q, hs in dump.items()}
        none = np.mean([len(v) == 0 for v in sel.values()])
        print(f"    {st}: default selection {np.mean([len(v) for v in sel.values()]):.2f} returned, recall {rec(sel, gold):.3f}, nothing for {none:.3f}")
