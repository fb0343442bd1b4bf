#!/usr/bin/env python3
"""Tool selection = gate, then keep what scores within `band` of the best hybrid score,
at most `cap`. StableToolBench (no examples: the pattern-less calibration gates) and
MetaTool (examples: the recommended design gates). Usage: python3 tools_final.py [static|minilm]"""
import json
import sys

import numpy as np

from common import embeddings, load, sigmoid
from evalgate import Set

model = sys.argv[1] if len(sys.argv) > 1 else "static"
D = json.load(open("design.json"))[model]
# today's pattern-less calibrations (relevance.rs): (vector, coverage, bias)
NOPAT = {"static": (3.48, 4.46, -2.38), "minilm": (6.19, 1.09, -1.76)}[model]

# ---- STB
import os
REAL = model != "static" and os.path.exists("data/stb_mx.hits.jsonl")  # the engine run with MiniLM vectors
docs, queries, gold, hits = load("stb_mx" if REAL else "stb")
if model != "static" and not REAL:
    Q, T, P, off, qidx, didx = embeddings("stb", model)
    for q in queries:
        for h in hits[q["id"]]:
            h["vector"] = float(max(0.0, T[didx[h["id"]]] @ Q[qidx[q["id"]]]))
            h["hybrid"] = 0.8 * h["vector"] + 0.2 * h["bm25_norm"]
        seen = {h["id"] for h in hits[q["id"]]}
        cs = T @ Q[qidx[q["id"]]]
        for i in np.argsort(-cs)[:30]:
            if docs[i]["id"] not in seen:
                hits[q["id"]].append({"id": docs[i]["id"], "vector": float(max(0, cs[i])), "bm25_norm": 0.0,
                                      "text_coverage": 0.0, "hybrid": 0.8 * float(max(0, cs[i]))})
        hits[q["id"]].sort(key=lambda h: -h["hybrid"])
for hs in hits.values():
    for h in hs:
        h["rel"] = float(sigmoid(NOPAT[2] + NOPAT[0] * h["vector"] + NOPAT[1] * h["text_coverage"]))
G = {q: set(g["labels"]) for q, g in gold.items()}


def select(cands, band, cap, key="hybrid"):
    """cands: (score, right, ...) in the engine's order, already gated."""
    if not cands:
        return []
    best = cands[0][key]
    return [c for c in cands if c[key] >= best - band][:cap]


def stb(band, cap, gate=0.5):
    n, rec = [], []
    for q, hs in hits.items():
        kept = select([h for h in hs if h["rel"] >= gate], band, cap)
        n.append(len(kept))
        rec.append(len(G[q] & {h["id"] for h in kept}) / len(G[q]))
    return np.mean(n), np.mean(rec)


r5 = np.mean([len(G[q] & {h["id"] for h in hs[:5]}) / len(G[q]) for q, hs in hits.items()])
print(f"== {model}: STB recall@5 of the order {r5:.3f}; gate alone (pattern-less calibration, relevance >= 0.5) "
      f"keeps {np.mean([sum(h['rel'] >= 0.5 for h in hs) for hs in hits.values()]):.1f} of the top 100")

# ---- MetaTool with the recommended gate
from fit import get
s = get("metatool", model)
z = D["bias"] + D["w_cen"] * s.f("cen") + D["w_cov"] * s.f("cov") + D["w_bg"] * s.f("bg_s10")
passed = z >= 0
hyb = s.f("hyb")


def meta(band, cap):
    n, right_in = [], []
    for qi in range(len(s.qlist)):
        rows = np.nonzero((s.qi == qi) & passed)[0]
        kept = [r for r in rows if hyb[r] >= (hyb[rows[0]] if len(rows) else 0) - band][:cap]
        n.append(len(kept))
        if s.qgrp[qi] == "in":
            right_in.append(any(s.y[r] > 0 for r in kept))
    return np.mean(n), np.mean(right_in)


m = s.metrics(passed)
print(f"MetaTool with the gate: acc {m['acc']:.3f} top-1 {m['in_right']:.3f} none-refused {m['none_refused']:.3f}")
print(f"{'band':>6} {'cap':>4} | {'STB returned':>12} {'STB recall':>10} | {'MetaTool returned':>17} {'right tool in set':>17}")
for band in [0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 9.0]:
    for cap in [3, 5, 8]:
        a, b = stb(band, cap)
        c, d = meta(band, cap)
        print(f"{band:6.2f} {cap:4d} | {a:12.2f} {b:10.3f} | {c:17.2f} {d:17.3f}")
