#!/usr/bin/env python3
"""Tool selection with the message searched whole and clause by clause (split_parts.py), merged:
  whole  : today's selection (gate, hybrid >= best - 0.15, at most 8)
  merged : the whole message's selection and each part's (gate, band 0.15 within the part),
           interleaved round-robin (whole first), duplicates dropped, at most `cap`
  recall@5: the whole message's top 5 and each part's, interleaved the same way.
Usage: tools_multi.py"""
import json
import numpy as np
from gate import rj, HERE
from tools_eval import rec, band

def rr(lists, cap):
    out, i = [], 0
    while len(out) < cap and any(i < len(l) for l in lists):
        for l in lists:
            if i < len(l) and l[i] not in out and len(out) < cap:
                out.append(l[i])
        i += 1
    return out

def run(name, how, width=0.15, cap=8, part_cap=None, gate=0.5):
    d = f"{HERE}/data/{name}"
    gold = {q: set(g["labels"]) for q, g in json.load(open(f"{d}/gold.json"))["gold"].items()}
    whole = {o["id"]: o["hits"] for o in rj(f"{d}/dump30.jsonl")}
    parts = {}
    if how:
        for o in rj(f"{d}_{how}/dump30.jsonl"):
            parts.setdefault(o["id"].split("#")[0], []).append(o["hits"])
    sel, top5 = {}, {}
    for q, hs in whole.items():
        lists = [band(hs, width, cap, gate)] + [band(p, width, part_cap or cap, gate) for p in parts.get(q, [])]
        sel[q] = rr(lists, cap)
        top5[q] = rr([[h["id"] for h in hs if h["relevance"] >= gate][:5]] + [[h["id"] for h in p if h["relevance"] >= gate][:5] for p in parts.get(q, [])], 5)
    return np.mean([len(v) for v in sel.values()]), rec(sel, gold), rec(top5, gold)

def table():
    print("| set | splitting | band | cap | returned | recall of the set | recall@5 |\n|---|---|---:|---:|---:|---:|---:|")
    for name in ["stb", "stbmulti"]:
        for how in [None, "sent", "clause"]:
            for width, cap in [(0.15, 8), (0.15, 6), (0.10, 6), (0.10, 8), (0.05, 6), (0.15, 10)]:
                n, r, r5 = run(name, how, width, cap)
                print(f"| {name} | {how or 'whole message'} | {width:.2f} | {cap} | {n:.2f} | {r:.3f} | {r5:.3f} |")


def top5_variants(name, how):
    d = f"{HERE}/data/{name}"
    gold = {q: set(g["labels"]) for q, g in json.load(open(f"{d}/gold.json"))["gold"].items()}
    whole = {o["id"]: o["hits"] for o in rj(f"{d}/dump30.jsonl")}
    parts = {}
    for o in rj(f"{d}_{how}/dump30.jsonl"):
        parts.setdefault(o["id"].split("#")[0], []).append(o["hits"])
    g = lambda hs: [h["id"] for h in hs if h["relevance"] >= 0.5]
    a = {q: rr([g(hs)] + [g(p) for p in parts.get(q, [])], 5) for q, hs in whole.items()}
    b = {q: rr([g(p) for p in parts.get(q, [])] + [g(hs)], 5) for q, hs in whole.items()}
    return rec(a, gold), rec(b, gold)

if __name__ == "__main__":
    table()
    for name in ["stb", "stbmulti"]:
        for how in ["sent", "clause"]:
            a, b = top5_variants(name, how)
            print(f"{name} {how}: recall@5 whole first {a:.3f}, parts first {b:.3f}")
