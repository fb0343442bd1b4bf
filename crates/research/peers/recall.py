"""HNSW recall@10 against exact search, ruche and Qdrant Edge, on the peer benchmark's
synthetic set (vectors only, no text), at several `ef`, for two sets of queries:
held-out points of the corpus's clusters (as real queries are: near their neighbours)
and the benchmark's own queries (a document plus noise six times its norm: a stress
case whose true top 10 barely stand out).

    target/peers-venv/bin/python crates/research/peers/recall.py --ruche target/release/ruche --docs 100000

(`crates/research/peers/run.sh` makes the venv.) ruche's searches run twice in one process and
only the second round counts: the first runs while the graph checkpoint loads, when the
vector leg scans exactly.
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

import bench


def query_sets(data):
    """The two query sets: (name, [(id, vector)])."""
    return [("held-out", data.held_out), ("noisy", [(q, v) for q, _, v in data.queries])]


def ruche_recall(binary, data, work, efs):
    r = bench.Ruche(binary, work)
    r.ingest(data)
    for name, vectors in query_sets(data):
        ruche_recall_of(binary, r, name, vectors, work, efs)


def ruche_recall_of(binary, r, name, vectors, work, efs):
    queries = os.path.join(work, "vector-queries.jsonl")
    with open(queries, "w") as f:
        for rnd in (0, 1):
            for q_id, v in vectors:
                f.write(json.dumps({"id": f"{rnd}-{q_id}", "text": "", "kind": "chunks",
                                    "embedding": v.tolist(), "min_relevance": 0.0}) + "\n")
    weights = "[scoring.chunks]\nrelevance_weight = 1.0\nimportance_weight = 0.0\nrecency_weight = 0.0\n"

    def run(extra):
        config = os.path.join(work, "recall.toml")
        with open(config, "w") as f:
            f.write(weights + extra)
        out = subprocess.run([binary, "--config", config, "search", r.dir, "--batch", queries,
                              "--json", "--top-k", "10"], check=True, capture_output=True, text=True).stdout
        hits, latencies = {}, []
        for line in out.splitlines():
            o = json.loads(line)
            if o["id"].startswith("1-"):
                hits[o["id"]] = [h["id"] for h in o["hits"]]
                latencies.append(o["timings_us"]["vector_us"] / 1000.0)
        return hits, bench.percentile(latencies, 0.5)

    exact, exact_ms = run("[pipeline.retrieval]\nexact_scan_threshold = 1000000000\n")
    print(f"{name} queries, ruche exact scan: vector leg p50 {exact_ms:.2f} ms")
    for ef in efs:
        got, ms = run(f"[pipeline.retrieval]\nexact_scan_threshold = 0\n[vector]\nef_search = {ef}\n")
        recall = np.mean([len(set(got[q]) & set(exact[q])) / max(1, len(exact[q])) for q in exact])
        print(f"{name} queries, ruche ef {ef}: recall@10 {recall:.3f}, vector leg p50 {ms:.2f} ms")


def qdrant_recall(data, work, efs):
    import qdrant_edge as qe

    X = np.stack([v for _, _, v in data.docs])
    path = os.path.join(work, "qdrant")
    os.makedirs(path)
    config = qe.EdgeConfig(vectors={"dense": qe.EdgeVectorParams(size=X.shape[1], distance=qe.Distance.Cosine)})
    shard = qe.EdgeShard.create(path, config)
    for at in range(0, len(X), 1000):
        shard.update(qe.UpdateOperation.upsert_points(
            [qe.Point(i, {"dense": X[i].tolist()}, {}) for i in range(at, min(len(X), at + 1000))]))
    shard.flush()
    shard.optimize()
    shard.flush()
    for name, vectors in query_sets(data):
        qdrant_recall_of(qe, shard, X, name, vectors, efs)
    shard.close()


def qdrant_recall_of(qe, shard, X, name, vectors, efs):
    Q = np.stack([v for _, v in vectors])
    exact = np.argsort(-(Q @ X.T), axis=1)[:, :10]
    for ef in [None] + list(efs):
        recalls, latencies = [], []
        for j, q in enumerate(Q):
            extra = {"params": qe.SearchParams(hnsw_ef=ef)} if ef else {}
            request = qe.QueryRequest(limit=10, query=qe.Query.Nearest(q.tolist(), using="dense"),
                                      with_payload=False, **extra)
            started = time.perf_counter()
            points = shard.query(request)
            latencies.append((time.perf_counter() - started) * 1000.0)
            recalls.append(len({int(p.id) for p in points} & set(exact[j].tolist())) / 10)
        label = ef if ef else "default"
        print(f"{name} queries, Qdrant Edge ef {label}: recall@10 {np.mean(recalls):.3f}, "
              f"query p50 {bench.percentile(latencies, 0.5):.2f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ruche", required=True)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--ef", type=int, nargs="+", default=[128, 256, 512])
    args = parser.parse_args()
    data = bench.synthetic(args.docs, 7)
    work = tempfile.mkdtemp(prefix="ruche-recall-")
    try:
        ruche_recall(os.path.abspath(args.ruche), data, work, args.ef)
        qdrant_recall(data, work, args.ef)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
