#!/usr/bin/env python3
"""What limits multi-tool messages in the tool selection (gate, then hybrid >= best - band, at
most cap), simulated on the engine's default candidate pool (dump30: the same BM25
normalisation as a default search). Prints the band x cap grid, the recall ceiling of a set
of that size, and where the gold APIs sit."""
import json
import numpy as np
from gate import rj, HERE
from tools_eval import rec, band


def load30(name):
    d = f"{HERE}/data/{name}"
    gold = {q: set(g["labels"]) for q, g in json.load(open(f"{d}/gold.json"))["gold"].items()}
    return gold, {o["id"]: o["hits"] for o in rj(f"{d}/dump30.jsonl")}


for name in ["stb", "stbmulti"]:
    gold, dump = load30(name)
    ceil5 = np.mean([min(5, len(g)) / len(g) for g in gold.values()])
    print(f"\n## {name}: recall@5 ceiling (5 slots) {ceil5:.3f}; gold APIs per message {np.mean([len(g) for g in gold.values()]):.2f}")
    print("band \\ cap | " + " | ".join(f"{c:>12}" for c in [5, 6, 8, 10, 12]))
    for w in [0.05, 0.10, 0.15, 0.20, 0.25, 0.30]:
        row = []
        for c in [5, 6, 8, 10, 12]:
            sel = {q: band(hs, w, c) for q, hs in dump.items()}
            row.append(f"{np.mean([len(v) for v in sel.values()]):4.2f} / {rec(sel, gold):.3f}")
        print(f"{w:9.2f} | " + " | ".join(row))
    # where are the gold APIs: rank and hybrid gap to the best
    ranks, gaps, inband, capped = [], [], 0, 0
    for q, hs in dump.items():
        ok = [h for h in hs if h["relevance"] >= 0.5]
        if not ok:
            continue
        best = ok[0]["hybrid"]
        for i, h in enumerate(ok):
            if h["id"] in gold[q]:
                ranks.append(i); gaps.append(best - h["hybrid"])
                if best - h["hybrid"] <= 0.15:
                    inband += 1
                    capped += i >= 8
    tot = sum(len(g) for g in gold.values())
    print(f"gold APIs among the gated candidates: {len(ranks)} of {tot}; within the 0.15 band {inband} "
          f"({inband / tot:.3f}), of which beyond the 8 cap {capped}; median gap {np.median(gaps):.3f}, 75% {np.quantile(gaps, .75):.3f}")
