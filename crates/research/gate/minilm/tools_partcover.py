#!/usr/bin/env python3
"""Multi-tool messages: of the 2-3 requests combined in a message, how many get at least one of
their gold APIs in the selection (today's whole-message selection vs clause search merged)?"""
import json, os
import numpy as np
from gate import rj, HERE
from tools_eval import band
from tools_multi import rr
d = f"{HERE}/data/stbmulti"
g = json.load(open(f"{d}/gold.json"))["gold"]
g1 = {}
for l in open(os.path.join(os.environ.get("RUCHE_EVAL", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "shared", "eval")), "stb", "gold.dev.tsv")):
    q, t = l.rstrip("\n").split("\t")[:2]; g1.setdefault(q, set()).add(t)
whole = {o["id"]: o["hits"] for o in rj(f"{d}/dump30.jsonl")}
parts = {}
for o in rj(f"{d}_clause/dump30.jsonl"):
    parts.setdefault(o["id"].split("#")[0], []).append(o["hits"])
for label, sel in [("whole message, band 0.15 cap 8", {q: band(hs, 0.15, 8) for q, hs in whole.items()}),
                   ("clauses merged, cap 8", {q: rr([band(hs, 0.15, 8)] + [band(p, 0.15, 8) for p in parts.get(q, [])], 8) for q, hs in whole.items()}),
                   ("clauses merged, cap 6", {q: rr([band(hs, 0.15, 6)] + [band(p, 0.15, 6) for p in parts.get(q, [])], 6) for q, hs in whole.items()})]:
    covered, first_only = [], 0
    for q, v in sel.items():
        c = [bool(g1[p] & set(v)) for p in g[q]["parts"]]
        covered.append(np.mean(c))
        first_only += c[0] and not all(c[1:])
    print(f"{label}: requests of a message with an API returned {np.mean(covered):.3f}; messages whose later requests get nothing {first_only}/{len(sel)}")
