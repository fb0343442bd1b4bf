"""ruche against its peers, Qdrant Edge and LanceDB, on the same data in the same run.

Run through `crates/research/peers/run.sh` (it makes the venv and builds ruche). For each data
set: ingest (wall time), hybrid query latency (in-engine: ruche's `timings_us.total_us`
from `search --batch --json`, Qdrant Edge's `shard.query` on a prebuilt request, LanceDB's
hybrid query), nDCG@10 where there are relevance labels, open + first query in a fresh
process, disk, and the resident memory of a process that opens the index and runs every
query. Latency is measured in rounds, the engines interleaved; the table shows the
median over rounds of each round's p50 and p99, and ratios to ruche. Each ingest starts
after `sync`: the disk is not still writing the input files (or the last engine's) when
an engine's clock starts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# --- data -----------------------------------------------------------------------------


class Data:
    """Documents (id, text, vector), queries (id, text, vector) and optional qrels; a
    synthetic set also has held-out vectors (id, vector): new points of its clusters."""

    def __init__(self, name, docs, queries, qrels, held_out=None):
        self.name = name
        self.docs = docs
        self.queries = queries
        self.qrels = qrels
        self.held_out = held_out or []


def read_npy(path):
    raw = open(path, "rb").read()
    header_len = struct.unpack("<H", raw[8:10])[0]
    header = raw[10 : 10 + header_len].decode()
    shape = tuple(int(x) for x in header.split("(")[1].split(")")[0].split(",") if x.strip())
    return np.frombuffer(raw[10 + header_len :], dtype="<f4").reshape(shape)


def scifact(eval_dir, limit):
    """SciFact train: abstracts with the benchmark's all-MiniLM-L6-v2 vectors. With a
    limit, the first `limit` abstracts and the queries whose relevant abstracts are among
    them."""
    d = os.path.join(eval_dir, "scifact")
    corpus = [json.loads(line) for line in open(os.path.join(d, "corpus.jsonl"))]
    vectors = read_npy(os.path.join(d, "minilm_corpus.f32.npy"))
    queries = [json.loads(line) for line in open(os.path.join(d, "queries.train.jsonl"))]
    qvectors = read_npy(os.path.join(d, "minilm_queries.train.f32.npy"))
    qrels = {}
    for line in open(os.path.join(d, "qrels", "train.tsv")).read().splitlines()[1:]:
        q, doc, _ = line.split("\t")
        qrels.setdefault(q, set()).add(doc)
    n = min(limit or len(corpus), len(corpus))
    docs = [
        (c["_id"], (c.get("title", "") + " " + c["text"]).strip(), vectors[i])
        for i, c in enumerate(corpus[:n])
    ]
    kept = {doc_id for doc_id, _, _ in docs}
    qs = [
        (q["_id"], q["text"], qvectors[i])
        for i, q in enumerate(queries)
        if qrels.get(q["_id"], set()) & kept
    ]
    qrels = {q: rel & kept for q, rel in qrels.items() if rel & kept}
    return Data(f"SciFact ({n:,} docs)", docs, qs, qrels)


def synthetic(n, seed, n_queries=300, dim=384, clusters=64, vocabulary=30_000):
    """Clustered 384-d vectors; 40-160 words per text from a Zipf vocabulary of letter-only
    words."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    assign = rng.integers(0, clusters, n)
    vectors = centres[assign] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Pronounceable letter-only words ("bakoti"): a word with digits would look like an
    # identifier to ruche's analyzer and switch its graph leg on.
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"

    def word(i):
        out = ""
        while True:
            i, c = divmod(i, len(consonants))
            i, v = divmod(i, len(vowels))
            out += consonants[c] + vowels[v]
            if i == 0:
                return out

    words = [word(i) for i in range(vocabulary)]
    ranks = np.arange(1, vocabulary + 1)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    lengths = rng.integers(40, 161, n)
    tokens = rng.choice(vocabulary, size=int(lengths.sum()), p=p)
    docs, at = [], 0
    for i in range(n):
        text = " ".join(words[t] for t in tokens[at : at + lengths[i]])
        at += lengths[i]
        docs.append((f"d{i}", text, vectors[i]))
    queries = []
    for j in range(n_queries):
        source = int(rng.integers(0, n))
        v = vectors[source] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        v /= np.linalg.norm(v)
        text_words = docs[source][1].split()
        picked = rng.choice(len(text_words), size=min(4, len(text_words)), replace=False)
        queries.append((f"q{j}", " ".join(text_words[k] for k in picked), v))
    # Held-out points of the same clusters (drawn as the documents are, from a stream of
    # their own so that the documents and queries above do not change): what a vector
    # query of a real corpus looks like, near its neighbours. The queries above are a
    # document plus noise six times its norm: a stress case whose true top 10 barely
    # stand out.
    held = np.random.default_rng(seed + 1)
    points = centres[held.integers(0, clusters, n_queries)] + 0.6 * held.standard_normal(
        (n_queries, dim)
    ).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    held_out = [(f"h{j}", points[j]) for j in range(n_queries)]
    return Data(f"synthetic ({n:,} docs)", docs, queries, None, held_out)


def ndcg10(ranked, qrels):
    if not qrels:
        return None
    total = 0.0
    for q, rel in qrels.items():
        hits = ranked.get(q, [])[:10]
        dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(hits) if d in rel)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
        total += dcg / ideal
    return total / len(qrels)


def du(path):
    """Bytes allocated on disk (preallocated, sparse files count what they use)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- engines --------------------------------------------------------------------------


class Ruche:
    def __init__(self, binary, work, name="ruche"):
        self.binary = binary
        self.work = work
        self.name = name

    def ingest(self, data):
        self.dir = os.path.join(self.work, self.name.replace(" ", "-"))
        chunks = os.path.join(self.work, "chunks.jsonl")
        with open(chunks, "w") as f:
            for doc_id, text, v in data.docs:
                f.write(json.dumps({"id": doc_id, "content": text, "embedding": v.tolist()}) + "\n")
        self.queries = os.path.join(self.work, "queries.jsonl")
        with open(self.queries, "w") as f:
            for q_id, text, v in data.queries:
                f.write(json.dumps({"id": q_id, "text": text, "kind": "chunks", "embedding": v.tolist()}) + "\n")
        with open(os.path.join(self.work, "first.jsonl"), "w") as f:
            q_id, text, v = data.queries[0]
            f.write(json.dumps({"id": q_id, "text": text, "kind": "chunks", "embedding": v.tolist()}) + "\n")
        os.sync()
        started = time.perf_counter()
        out = subprocess.run(
            [self.binary, "index", self.dir, "--chunks", chunks],
            check=True, capture_output=True, text=True,
        )
        total = time.perf_counter() - started
        # "commit: N changes, searchable now in X s" and the phases before it.
        searchable = sum(
            float(line.rsplit(" in ", 1)[1].split()[0])
            for line in out.stderr.splitlines()
            if line.split(":")[0] in ("read", "write", "embed", "commit") and " in " in line
        )
        return {"searchable_s": searchable, "total_s": total}

    def query_round(self, data):
        out = subprocess.run(
            [self.binary, "search", self.dir, "--batch", self.queries, "--json", "--top-k", "10"],
            check=True, capture_output=True, text=True,
        ).stdout
        latencies, ranked = [], {}
        for line in out.splitlines():
            o = json.loads(line)
            latencies.append(o["timings_us"]["total_us"] / 1000.0)
            ranked[o["id"]] = [h["id"] for h in o["hits"]]
        return latencies, ranked

    def open_first(self, data):
        first = os.path.join(self.work, "first.jsonl")
        started = time.perf_counter()
        subprocess.run(
            [self.binary, "search", self.dir, "--batch", first, "--json", "--top-k", "10"],
            check=True, capture_output=True,
        )
        return time.perf_counter() - started

    def rss_mb(self, data):
        out = subprocess.run(
            ["/usr/bin/time", "-f", "%M", self.binary, "search", self.dir, "--batch",
             self.queries, "--json", "--top-k", "10"],
            check=True, capture_output=True, text=True,
        )
        return int(out.stderr.strip().splitlines()[-1]) / 1024

    def disk(self):
        return du(self.dir)


class QdrantEdge:
    name = "Qdrant Edge"

    def __init__(self, work, fusion):
        self.work = work
        self.fusion = fusion

    def ingest(self, data):
        import qdrant_edge as qe

        self.dir = os.path.join(self.work, "qdrant")
        os.makedirs(self.dir)
        dim = len(data.docs[0][2])
        config = qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        bm25 = qe.Bm25(qe.Bm25Config(language="english"))
        os.sync()
        started = time.perf_counter()
        shard = qe.EdgeShard.create(self.dir, config)
        for at in range(0, len(data.docs), 1000):
            points = [
                qe.Point(i, {"dense": v.tolist(), "bm25": bm25.embed_document(text)}, {"doc": doc_id})
                for i, (doc_id, text, v) in enumerate(data.docs[at : at + 1000], start=at)
            ]
            shard.update(qe.UpdateOperation.upsert_points(points))
        shard.flush()
        searchable = time.perf_counter() - started
        shard.optimize()
        shard.flush()
        total = time.perf_counter() - started
        shard.close()
        self.ids = [doc_id for doc_id, _, _ in data.docs]
        return {"searchable_s": searchable, "total_s": total}

    def requests(self, data):
        import qdrant_edge as qe

        bm25 = qe.Bm25(qe.Bm25Config(language="english"))
        fusion = qe.Fusion.Rrf(k=60) if self.fusion == "rrf" else qe.Fusion.Dbsf()
        return [
            (q_id, qe.QueryRequest(
                limit=10,
                query=fusion,
                with_payload=False,
                prefetches=[
                    qe.Prefetch(limit=30, query=qe.Query.Nearest(bm25.embed_query(text), using="bm25")),
                    qe.Prefetch(limit=30, query=qe.Query.Nearest(v.tolist(), using="dense")),
                ],
            ))
            for q_id, text, v in data.queries
        ]

    def query_round(self, data):
        import qdrant_edge as qe

        shard = qe.EdgeShard.load(self.dir)
        requests = self.requests(data)
        latencies, ranked = [], {}
        for q_id, request in requests:
            started = time.perf_counter_ns()
            points = shard.query(request)
            latencies.append((time.perf_counter_ns() - started) / 1e6)
            ranked[q_id] = [self.ids[int(p.id)] for p in points]
        shard.close()
        return latencies, ranked

    def open_first(self, data):
        return subprocess_timing("qdrant_first", self, data)

    def rss_mb(self, data):
        return subprocess_timing("qdrant_rss", self, data)

    def disk(self):
        return du(self.dir)


class Lance:
    name = "LanceDB"

    def __init__(self, work):
        self.work = work

    def ingest(self, data):
        import lancedb
        import pyarrow as pa

        self.dir = os.path.join(self.work, "lance")
        os.sync()
        started = time.perf_counter()
        db = lancedb.connect(self.dir)
        dim = len(data.docs[0][2])
        table = pa.table({
            "id": [d for d, _, _ in data.docs],
            "text": [t for _, t, _ in data.docs],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.concatenate([v for _, _, v in data.docs]).astype(np.float32)), dim
            ),
        })
        tbl = db.create_table("docs", table)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_fts_index's deprecation
            tbl.create_fts_index("text")
        searchable = time.perf_counter() - started
        return {"searchable_s": searchable, "total_s": searchable}

    def query_round(self, data):
        import lancedb

        tbl = lancedb.connect(self.dir).open_table("docs")
        latencies, ranked = [], {}
        # LanceDB logs a deprecation warning per query on stderr: silenced here.
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            for q_id, text, v in data.queries:
                started = time.perf_counter_ns()
                rows = (
                    tbl.search(query_type="hybrid").vector(v.tolist()).text(text)
                    .limit(10).select(["id"]).to_list()
                )
                latencies.append((time.perf_counter_ns() - started) / 1e6)
                ranked[q_id] = [r["id"] for r in rows]
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(devnull)
        return latencies, ranked

    def open_first(self, data):
        return None

    def rss_mb(self, data):
        return None

    def disk(self):
        return du(self.dir)


def subprocess_timing(what, engine, data):
    """Runs this script in a fresh process to time an open + first query, or to measure
    the resident memory of opening and running every query."""
    queries = os.path.join(engine.work, "qdrant_queries.json")
    with open(queries, "w") as f:
        json.dump([[q, t, v.tolist()] for q, t, v in data.queries], f)
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, engine.dir, queries, engine.fusion],
        check=True, capture_output=True, text=True,
    )
    return float(out.stdout.strip())


def child(what, shard_dir, queries_file, fusion):
    import qdrant_edge as qe

    queries = json.load(open(queries_file))
    if what == "qdrant_first":
        q_id, text, v = queries[0]
        started = time.perf_counter()
        bm25 = qe.Bm25(qe.Bm25Config(language="english"))
        shard = qe.EdgeShard.load(shard_dir)
        f = qe.Fusion.Rrf(k=60) if fusion == "rrf" else qe.Fusion.Dbsf()
        shard.query(qe.QueryRequest(limit=10, query=f, prefetches=[
            qe.Prefetch(limit=30, query=qe.Query.Nearest(bm25.embed_query(text), using="bm25")),
            qe.Prefetch(limit=30, query=qe.Query.Nearest(v, using="dense")),
        ]))
        print(time.perf_counter() - started)
    else:
        engine = QdrantEdge(os.path.dirname(shard_dir), fusion)
        engine.dir = shard_dir
        data = Data("", [], [(q, t, np.array(v, dtype=np.float32)) for q, t, v in queries], None)
        engine.ids = None
        shard = qe.EdgeShard.load(shard_dir)
        for _, request in engine.requests(data):
            shard.query(request)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


# --- the run --------------------------------------------------------------------------


def run(data, engines, rounds):
    print(f"\n### {data.name}, {len(data.queries):,} queries, top 10\n", flush=True)
    results = {e.name: {} for e in engines}
    for e in engines:
        results[e.name]["ingest"] = e.ingest(data)
        results[e.name]["disk"] = e.disk()
    p50s = {e.name: [] for e in engines}
    p99s = {e.name: [] for e in engines}
    for r in range(rounds):
        order = engines if r % 2 == 0 else list(reversed(engines))
        for e in order:
            latencies, ranked = e.query_round(data)
            p50s[e.name].append(statistics.median(latencies))
            p99s[e.name].append(percentile(latencies, 0.99))
            results[e.name]["ndcg"] = ndcg10(ranked, data.qrels)
    for e in engines:
        results[e.name]["p50"] = statistics.median(p50s[e.name])
        results[e.name]["p99"] = statistics.median(p99s[e.name])
        results[e.name]["open_first"] = e.open_first(data)
        results[e.name]["rss"] = e.rss_mb(data)
    table(results, engines)
    return results


def table(results, engines):
    base = results[engines[0].name]

    def cell(name, key, fmt, lower_is_better=True):
        value = results[name].get(key)
        if value is None:
            return ""
        text = fmt(value)
        ref = base.get(key)
        if name != engines[0].name and ref and value:
            text += f" ({value / ref:.2f}×)"
        return text

    rows = [
        ("hybrid p50 (ms)", "p50", lambda v: f"{v:.2f}"),
        ("hybrid p99 (ms)", "p99", lambda v: f"{v:.2f}"),
        ("nDCG@10", "ndcg", lambda v: f"{v:.4f}"),
        ("open + first query (s)", "open_first", lambda v: f"{v:.2f}"),
        ("disk (MiB)", "disk", lambda v: f"{v / 2**20:.1f}"),
        ("RSS, all queries (MB)", "rss", lambda v: f"{v:.0f}"),
    ]
    names = [e.name for e in engines]
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, key, fmt in rows:
        print(f"| {label} | " + " | ".join(cell(n, key, fmt) for n in names) + " |")
    ingest = lambda n, k: results[n]["ingest"][k]
    print("| ingest, searchable (s) | " + " | ".join(f"{ingest(n, 'searchable_s'):.1f}" for n in names) + " |")
    print("| ingest, graph complete (s) | " + " | ".join(f"{ingest(n, 'total_s'):.1f}" for n in names) + " |")
    print(flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ruche", required=True, help="the ruche binary")
    parser.add_argument("--eval", default=os.path.join(HERE, "..", "..", "..", "..", "shared", "eval"))
    parser.add_argument("--docs", type=int, default=0, help="documents per set (0: SciFact whole, synthetic as --synthetic says)")
    parser.add_argument("--synthetic", default="10000,100000", help="sizes of the synthetic sets (comma-separated; empty: none)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fusion", choices=["rrf", "dbsf"], default="dbsf", help="Qdrant Edge's fusion")
    parser.add_argument("--no-lance", action="store_true", help="leave LanceDB out")
    parser.add_argument("--ruche-before", help="another ruche binary, in the same rounds "
                        "(the `before` of a change: its ratios to ruche say what the change did)")
    args = parser.parse_args()

    sets = []
    if os.path.exists(os.path.join(args.eval, "scifact", "corpus.jsonl")):
        sets.append(lambda: scifact(args.eval, args.docs))
    else:
        print(f"no SciFact under {args.eval}: synthetic sets only", file=sys.stderr)
    sizes = [int(n) for n in args.synthetic.split(",") if n.strip()]
    for n in ([args.docs] if args.docs else sizes):
        sets.append(lambda n=n: synthetic(n, seed=7))
    print(f"ruche: {args.ruche}; Qdrant Edge fusion: {args.fusion}; {args.rounds} rounds; "
          f"{os.cpu_count()} CPUs")
    for make in sets:
        data = make()
        work = tempfile.mkdtemp(prefix="ruche-peers-")
        try:
            engines = [Ruche(args.ruche, work)]
            if args.ruche_before:
                engines.append(Ruche(args.ruche_before, work, "ruche before"))
            engines.append(QdrantEdge(work, args.fusion))
            if not args.no_lance:
                engines.append(Lance(work))
            run(data, engines, args.rounds)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
