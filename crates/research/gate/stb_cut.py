#!/usr/bin/env python3
"""What decides the cut of the returned set on StableToolBench (2,479 APIs, no examples).

Per query the engine's candidates (gate off, top 100 by score) with vector, coverage,
bm25_norm, hybrid. A selection rule keeps a prefix-free subset of them; reported: mean
number returned, recall of the returned set, recall@5 of the ranking, share of queries
with nothing. Usage: python3 stb_cut.py [static|minilm]
"""
import sys

import numpy as np

from common import embeddings, load

model = sys.argv[1] if len(sys.argv) > 1 else "static"
docs, queries, gold, hits = load("stb")
if model != "static":
    Q, T, P, off, qidx, didx = embeddings("stb", model)
    for q in queries:
        for h in hits[q["id"]]:
            h["vector"] = float(max(0.0, T[didx[h["id"]]] @ Q[qidx[q["id"]]]))
            h["hybrid"] = 0.8 * h["vector"] + 0.2 * h["bm25_norm"]
        # the vector leg would also find candidates BM25 did not: add the 30 nearest
        seen = {h["id"] for h in hits[q["id"]]}
        cs = T @ Q[qidx[q["id"]]]
        for i in np.argsort(-cs)[:30]:
            if docs[i]["id"] not in seen:
                hits[q["id"]].append({"id": docs[i]["id"], "vector": float(max(0, cs[i])), "bm25_norm": 0.0,
                                      "text_coverage": 0.0, "hybrid": 0.8 * float(max(0, cs[i])), "relevance": 0.0})
        hits[q["id"]].sort(key=lambda h: -h["hybrid"])

G = {q: set(g["labels"]) for q, g in gold.items()}


def run(select):
    n, rec, none = [], [], 0
    for q, hs in hits.items():
        kept = select(hs)
        n.append(len(kept))
        rec.append(len(G[q] & {h["id"] for h in kept}) / len(G[q]))
        none += not kept
    return np.mean(n), np.mean(rec), none / len(hits)


r5 = np.mean([len(G[q] & {h["id"] for h in hs[:5]}) / len(G[q]) for q, hs in hits.items()])
r1 = np.mean([len(G[q] & {h["id"] for h in hs[:1]}) / len(G[q]) for q, hs in hits.items()])
print(f"model {model}: recall@1 {r1:.3f} recall@5 {r5:.3f} recall@10 "
      f"{np.mean([len(G[q] & {h['id'] for h in hs[:10]}) / len(G[q]) for q, hs in hits.items()]):.3f}; "
      f"right APIs per query {np.mean([len(g) for g in G.values()]):.2f}")


def rows():
    out = []
    for k in [1, 2, 3, 5, 8]:
        out.append((f"fixed k={k}", lambda hs, k=k: hs[:k]))
    for key in ["hybrid", "vector"]:
        for d in [0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1]:
            out.append((f"band: {key} >= best - {d}", lambda hs, key=key, d=d: [h for h in hs if hs and h[key] >= max(x[key] for x in hs) - d]))
        for r in [0.9, 0.92, 0.94, 0.96]:
            out.append((f"ratio: {key} >= {r} * best", lambda hs, key=key, r=r: [h for h in hs if hs and h[key] >= r * max(x[key] for x in hs)]))
    for t in [0.5, 0.6, 0.7, 0.8]:
        if model == "static":
            out.append((f"today's relevance >= {t}", lambda hs, t=t: [h for h in hs if h["relevance"] >= t]))
    for d in [0.03, 0.05, 0.08]:
        for k in [5, 8]:
            out.append((f"band vector {d}, at most {k}", lambda hs, d=d, k=k: [h for h in hs if h["vector"] >= max(x["vector"] for x in hs) - d][:k]))
    # elbow: cut at the largest gap in the hybrid scores among the first 10
    def elbow(hs, m=10):
        s = [h["hybrid"] for h in hs[:m]]
        if len(s) < 2:
            return hs[:1]
        gaps = [s[i] - s[i + 1] for i in range(len(s) - 1)]
        return hs[:int(np.argmax(gaps)) + 1]
    out.append(("elbow (largest hybrid gap in top 10)", elbow))
    return out


print(f"{'selection':42} {'returned':>9} {'recall':>7} {'none':>6}")
for name, sel in rows():
    n, r, z = run(sel)
    print(f"{name:42} {n:9.2f} {r:7.3f} {z:6.3f}")
