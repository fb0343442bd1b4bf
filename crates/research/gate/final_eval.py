#!/usr/bin/env python3
"""The recommended design's numbers: leave-one-source-out, and the all-sources fit
(design.json) on CLINC150 val, BANKING77-OOS valid (test mix), MetaTool dev; STB with the
tool selection. Prints markdown. Usage: python3 final_eval.py"""
import json
import subprocess

import numpy as np

from evalgate import Set
from fit import choose_threshold, fit, get, relevance

FEATS = ["cen", "cov", "bg_s10"]
SRC = ["clinc", "banking", "metatool"]


def row(name, m):
    if name == "clinc":
        return f"CLINC150 | {m['acc']:.3f} | in-scope top-1 {m['in_right']:.3f}, out-of-scope refused {m['oos_refused']:.3f}"
    if name == "banking":
        return (f"BANKING77-OOS | {m['acc']:.3f} | in-scope first right {m['in_right']:.3f}, id-oos refused "
                f"{m['id-oos_refused']:.3f}, ood-oos refused {m['ood-oos_refused']:.3f} (valid mix, unweighted: {m['acc_valid_unweighted']:.3f})")
    return f"MetaTool | {m['acc']:.3f} | top-1 when a tool is needed {m['in_right']:.3f}, none when none {m['none_refused']:.3f}"


for model in ["static", "minilm"]:
    print(f"\n### {model}\n")
    print("Leave-one-source-out (fitted and thresholded on the two other sources):\n")
    print("| held out | accuracy | sub-metrics | threshold (of the fit) |\n|---|---:|---|---:|")
    for x in SRC:
        tr = [n for n in SRC if n != x]
        lr = fit(tr, FEATS, model=model)
        t = choose_threshold(lr, tr, FEATS, model=model)
        s = get(x, model)
        m = s.metrics(relevance(lr, s, FEATS) >= t)
        a, b = row(x, m).split(" | ", 1)
        print(f"| {a} | {b} | {t:.3f} |")
    print("\nSame, coefficients refitted without the source, operating point fixed at relevance 0.20:\n")
    print("| held out | accuracy | sub-metrics |\n|---|---:|---|")
    for x in SRC:
        tr = [n for n in SRC if n != x]
        lr = fit(tr, FEATS, model=model)
        s = get(x, model)
        m = s.metrics(relevance(lr, s, FEATS) >= 0.20)
        print("| " + row(x, m) + " |")
    D = json.load(open("design.json"))[model]
    print(f"\nAll-sources fit (design.json: z = {D['bias']:.4f} + {D['w_cen']:.4f} cen + {D['w_cov']:.4f} cov "
          f"{D['w_bg']:+.4f} bg, pass z >= 0):\n")
    print("| set | accuracy | sub-metrics |\n|---|---:|---|")
    for x in SRC:
        s = get(x, model)
        z = D["bias"] + D["w_cen"] * s.f("cen") + D["w_cov"] * s.f("cov") + D["w_bg"] * s.f("bg_s10")
        print("| " + row(x, s.metrics(z >= 0)) + " |")
    if True:
        print(f"\nToday's gate ({model} calibration, relevance >= 0.5, same candidates):\n")
        print("| set | accuracy | sub-metrics |\n|---|---:|---|")
        for x in SRC:
            s = get(x, model)
            print("| " + row(x, s.metrics(s.f("rel0") >= 0.5)) + " |")
