#!/usr/bin/env python3
"""Tools from a large catalog (StableToolBench APIs, no examples: the pattern-less MiniLM
calibration gates them), G1 dev messages and the hand-written multi-tool messages
(stb_multi.jsonl): recall@5 (engine, --top-k 5), the default selection (engine: gate, band
0.15, at most 8) and simulated selections over the gated candidates.
Usage: tools_eval.py"""
import json
import numpy as np
from gate import rj, HERE, sig

NOPAT = (6.19, 1.09, -1.76)  # (vector, coverage, bias) today's (Rule|Tool, MiniLm, Both, false)


def load(name):
    d = f"{HERE}/data/{name}"
    gold = {q: set(g["labels"]) for q, g in json.load(open(f"{d}/gold.json"))["gold"].items()}
    dump = {o["id"]: o["hits"] for o in rj(f"{d}/dump.jsonl")}
    dflt = {o["id"]: [h["id"] for h in o["hits"]] for o in rj(f"{d}/default.jsonl")}
    k5 = {o["id"]: [h["id"] for h in o["hits"]] for o in rj(f"{d}/k5.jsonl")}
    return gold, dump, dflt, k5


def rec(sel, gold):
    return np.mean([len(gold[q] & set(sel.get(q, []))) / len(gold[q]) for q in gold])


def band(hits, width, cap, gate=0.5, key="hybrid", rel=None):
    ok = [h for h in hits if (h["relevance"] if rel is None else rel(h)) >= gate or h.get("codes_matched")]
    if not ok:
        return []
    best = ok[0][key]
    return [h["id"] for h in ok if h[key] >= best - width][:cap]


def report(name):
    gold, dump, dflt, k5 = load(name)
    n = len(gold)
    ng = np.mean([len(g) for g in gold.values()])
    print(f"\n## {name}: {n} messages, {ng:.2f} gold APIs per message")
    print(f"engine recall@5 {rec(k5, gold):.3f}; default selection: {np.mean([len(v) for v in dflt.values()]):.2f} returned, recall {rec(dflt, gold):.3f}")
    top = {q: [h["id"] for h in hs] for q, hs in dump.items()}
    for k in [5, 8, 10, 20]:
        print(f"  order recall@{k} (gate off) {rec({q: v[:k] for q, v in top.items()}, gold):.3f}", end=";")
    print()
    passed = np.mean([sum(h["relevance"] >= 0.5 for h in hs) for hs in dump.values()])
    print(f"  candidates passing the gate (of the top 100): {passed:.1f}")
    sim = {q: band(hs, 0.15, 8) for q, hs in dump.items()}
    print(f"  simulated default (band 0.15, cap 8): {np.mean([len(v) for v in sim.values()]):.2f} / {rec(sim, gold):.3f}")
    return gold, dump


if __name__ == "__main__":
    for name in ["stb", "stbmulti"]:
        report(name)
