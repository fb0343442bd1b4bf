"""MiniLM (engine run with supplied vectors): cut rules on StableToolBench."""
import numpy as np
from common import load
docs, queries, gold, hits = load("stb_mx")
G = {q: set(g["labels"]) for q, g in gold.items()}
def run(sel):
    n, r = [], []
    for q, hs in hits.items():
        k = sel(hs); n.append(len(k)); r.append(len(G[q] & {h["id"] for h in k}) / len(G[q]))
    return f"{np.mean(n):6.2f} {np.mean(r):.3f}"
best = lambda hs, key: max(h[key] for h in hs)
print("relevance (today's MiniLM pattern-less calibration) >= t:", " | ".join(f"{t}: {run(lambda hs, t=t: [h for h in hs if h['relevance'] >= t])}" for t in [0.5, 0.7, 0.8, 0.9]))
print("band hybrid d:", " | ".join(f"{d}: {run(lambda hs, d=d: [h for h in hs if h['hybrid'] >= best(hs, 'hybrid') - d])}" for d in [0.05, 0.08, 0.1, 0.15]))
print("ratio hybrid r:", " | ".join(f"{r}: {run(lambda hs, r=r: [h for h in hs if h['hybrid'] >= r * best(hs, 'hybrid')])}" for r in [0.85, 0.9, 0.95]))
print("fixed k:", " | ".join(f"{k}: {run(lambda hs, k=k: hs[:k])}" for k in [1, 3, 5, 8]))
def elbow(hs, m=10):
    s = [h["hybrid"] for h in hs[:m]]; g = [s[i] - s[i + 1] for i in range(len(s) - 1)]
    return hs[:int(np.argmax(g)) + 1]
print("elbow (largest hybrid gap, top 10):", run(elbow))
