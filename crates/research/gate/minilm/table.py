#!/usr/bin/env python3
"""Per-source table of a gate (today's, or a design): in-scope refusal, in-scope first right,
near-miss refusal, general out-of-scope refusal, accuracy with abstention, n per cell.
Usage: table.py today | table.py loso FEAT,FEAT,... [C] """
import sys
import numpy as np
from fitlib import SOURCES, get, source_metrics, loso, FEATS
import fitlib

TODAY = (-5.6107, np.array([12.4699, 1.3509, -11.5081]), ["cen", "cov", "bg"])


def fmt_row(label, base, m):
    n = m["n"]
    near = next((k for k in ("id-oos",) if k in n), None)
    gen = next((k for k in ("ood-oos", "oos", "none") if k in n), None)
    cell = lambda k: f"{m[k + '_refused']:.3f} ({n[k]})" if k else "—"
    return (f"| {label} | {base} | {m['in_refused']:.3f} ({n['in']}) | {m['in_right']:.3f} | {cell(near)} | {cell(gen)} | {m['acc']:.3f} |")


HDR = ("| held out / fit | set | in-scope refused (n) | in-scope first right | near miss refused (n) | general OOS refused (n) | accuracy with abstention |\n"
       "|---|---|---:|---:|---:|---:|---:|")

if __name__ == "__main__":
    if sys.argv[1] == "today":
        b, w, feats = TODAY
        print(HDR)
        for src in SOURCES:
            for base, m in source_metrics(src, b, w, feats, 0.0).items():
                print(fmt_row("today (all)", base, m))
    else:
        feats = sys.argv[2].split(",")
        C = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
        r = loso(feats, C=C)
        print(f"features {feats}: LOSO mean objective {r['mean']:.4f}")
        print(HDR)
        for src in SOURCES:
            for base, m in r[src]["metrics"].items():
                print(fmt_row(f"{src} held out (t={r[src]['t']:.2f})", base, m))
        b, w = r["all"]["coef"]
        print(f"all-sources fit: b={b:.4f} w={dict(zip(feats, np.round(w, 4)))} t={r['all']['t']:.3f}")
        for src in SOURCES:
            for base, m in r["all"]["metrics"][src].items():
                print(fmt_row("all-sources fit", base, m))
