"""Static vs MiniLM on API descriptions: exact cosine ranking over all 2,479 APIs (vector leg alone)."""
import numpy as np
from common import embeddings, load
docs, queries, gold, hits = load("stb")
G = {q: set(g["labels"]) for q, g in gold.items()}
for model in ["static", "minilm"]:
    Q, T, P, off, qidx, didx = embeddings("stb", model)
    ids = [d["id"] for d in docs]
    out = []
    for k in [1, 5, 10, 20]:
        r = []
        for q in queries:
            top = np.argsort(-(T @ Q[qidx[q["id"]]]))[:k]
            r.append(len(G[q["id"]] & {ids[i] for i in top}) / len(G[q["id"]]))
        out.append(f"recall@{k} {np.mean(r):.3f}")
    print(model, "vector leg alone:", " ".join(out))
