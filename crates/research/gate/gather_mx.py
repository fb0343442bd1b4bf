#!/usr/bin/env python3
"""The same sets indexed with caller-supplied all-MiniLM-L6-v2 vectors (the engine then uses
its MiniLM calibrations): real engine candidates and features for the MiniLM results.
Writes data/<set>_mx.*; the embedding cache is shared with <set>.emb.minilm.npz."""
import json, os, shutil, subprocess, sys
import numpy as np
from common import DATA, HERE, rj, embeddings
import os
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))

RUCHE = REPO + "/target/release/ruche"
def wj(p, rows):
    with open(p, "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
for name in sys.argv[1:] or ["banking", "clinc", "metatool", "stb"]:
    Q, T, P, off, qidx, didx = embeddings(name, "minilm")
    docs = rj(f"{DATA}/{name}.docs.jsonl"); queries = rj(f"{DATA}/{name}.queries.jsonl")
    kind = "rules" if "condition" in docs[0] else "tools"
    out = []
    for i, d in enumerate(docs):
        d = dict(d); d["embedding"] = [round(float(x), 7) for x in T[i]]
        ex = [[round(float(x), 7) for x in v] for v in P[off[i]:off[i + 1]]]
        if ex: d["pattern_embeddings" if kind == "rules" else "example_embeddings"] = ex
        out.append(d)
    mx = f"{name}_mx"
    wj(f"{DATA}/{mx}.docs.jsonl", out)
    wj(f"{DATA}/{mx}.queries.jsonl", [dict(q, embedding=[round(float(x), 7) for x in Q[qidx[q["id"]]]]) for q in queries])
    shutil.copy(f"{DATA}/{name}.gold.json", f"{DATA}/{mx}.gold.json")
    shutil.copy(f"{DATA}/{name}.emb.minilm.npz", f"{DATA}/{mx}.emb.minilm.npz")
    idx = f"{HERE}/tmp/idx_{mx}"; shutil.rmtree(idx, ignore_errors=True)
    subprocess.run([RUCHE, "index", idx, f"--{kind}", f"{DATA}/{mx}.docs.jsonl", "-q"], check=True)
    topk = "100" if name == "stb" else "30"
    r = subprocess.run([RUCHE, "search", idx, "--batch", f"{DATA}/{mx}.queries.jsonl", "--json", "--explain",
                        "--min-relevance", "0", "--top-k", topk], capture_output=True, text=True, check=True)
    keep = ["id", "score", "vector", "bm25", "bm25_norm", "hybrid", "text_coverage", "relevance", "matched", "priority_term", "scope_term"]
    with open(f"{DATA}/{mx}.hits.jsonl", "w") as f:
        for line in r.stdout.splitlines():
            o = json.loads(line)
            f.write(json.dumps({"id": o["id"], "hits": [{k: h.get(k) for k in keep} for h in o["hits"]], "gate": o.get("gate")}) + "\n")
    r = subprocess.run([RUCHE, "search", idx, "--batch", f"{DATA}/{mx}.queries.jsonl", "--json"], capture_output=True, text=True, check=True)
    with open(f"{DATA}/{mx}.default.jsonl", "w") as f:
        for line in r.stdout.splitlines():
            o = json.loads(line); f.write(json.dumps({"id": o["id"], "hits": [h["id"] for h in o["hits"]]}) + "\n")
    print(mx, "family:", json.loads(r.stdout.splitlines()[0]).get("gate", {}) if False else "", flush=True)
