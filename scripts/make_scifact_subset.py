#!/usr/bin/env python3
"""Writes the SciFact subset the Milvus backend's tests rank (crates/milvus/tests/fixtures).

Usage: scripts/make_scifact_subset.py ../shared/eval/scifact

Takes the first 60 train queries, every document judged relevant to them, and other
documents (every 17th) up to 400, with their all-MiniLM-L6-v2 vectors rounded to 4
decimals. Deterministic: the same input gives the same files.
"""
import json, struct, sys, os

src = sys.argv[1]
out = os.path.join(os.path.dirname(__file__), "..", "crates", "milvus", "tests", "fixtures")

def npy(path):
    b = open(path, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; h = b[10:10 + hl].decode()
    n, dim = [int(x) for x in h.split("(")[1].split(")")[0].split(",") if x.strip()]
    return [struct.unpack_from(f"<{dim}f", b, 10 + hl + 4 * dim * i) for i in range(n)]

docs = [json.loads(l) for l in open(f"{src}/corpus.jsonl")]
vectors = npy(f"{src}/minilm_corpus.f32.npy")
queries = [json.loads(l) for l in open(f"{src}/queries.train.jsonl")]
query_vectors = npy(f"{src}/minilm_queries.train.f32.npy")
rel = {}
for line in open(f"{src}/qrels/train.tsv").read().splitlines()[1:]:
    q, d, _ = line.split("\t"); rel.setdefault(q, set()).add(d)
picked = [(q, v) for q, v in zip(queries, query_vectors) if q["_id"] in rel][:60]
wanted = set().union(*(rel[q["_id"]] for q, _ in picked))
chosen = [i for i, d in enumerate(docs) if d["_id"] in wanted]
for i in range(0, len(docs), 17):
    if len(chosen) >= 400: break
    if i not in chosen: chosen.append(i)
chosen.sort()
r = lambda v: [round(x, 4) for x in v]
with open(f"{out}/scifact_docs.jsonl", "w") as f:
    for i in chosen:
        d = docs[i]
        f.write(json.dumps({"id": d["_id"], "content": (d.get("title", "") + " " + d["text"]).strip()[:4000], "embedding": r(vectors[i])}) + "\n")
with open(f"{out}/scifact_queries.jsonl", "w") as f:
    for q, v in picked:
        f.write(json.dumps({"id": q["_id"], "text": q["text"], "embedding": r(v), "relevant": sorted(rel[q["_id"]])}) + "\n")
print(f"{len(chosen)} documents, {len(picked)} queries")
