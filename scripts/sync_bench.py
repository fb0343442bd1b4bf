#!/usr/bin/env python3
"""What `ruche sync` costs and what chunking does to retrieval, on data built from SciFact.

    python3 scripts/sync_bench.py scifact --ruche target/release/ruche --eval ../shared/eval \
        [--chunk-tokens 128,256,512] [--embedder minilm|default]
    python3 scripts/sync_bench.py tree --ruche target/release/ruche --eval ../shared/eval \
        [--files 2000] [--embedder default]

- scifact: the 5,183 abstracts gathered as `## title` sections of long Markdown documents
  (40 abstracts a document, in corpus order), synced at each chunk size; nDCG@10 over the
  train queries, where a hit counts for the abstracts its lines overlap (the hits' abstracts
  in rank order, each once, the first 10). Beside it, the abstract-level index: one chunk
  per abstract (title and text), the same embedder. Prints one JSON object per index.
- tree: a tree of N Markdown files (each a few abstracts as sections, in folders of 100),
  synced into a new index, synced again unchanged, then again after one file is edited;
  files per second, chunks per second and seconds of each.

SciFact is read from the eval folder; everything written goes to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

PER_DOCUMENT = 40


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr}{out.stdout}")
    return out


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def clean(text):
    return " ".join(text.split())


def write_documents(corpus, root):
    """The corpus as Markdown documents; returns {(path, line): abstract id} spans as
    [(path, first, last, id)]."""
    spans = []
    os.makedirs(root, exist_ok=True)
    for part in range(0, len(corpus), PER_DOCUMENT):
        name = f"part{part // PER_DOCUMENT:04}.md"
        lines = [f"# SciFact abstracts, part {part // PER_DOCUMENT + 1}", ""]
        for doc in corpus[part:part + PER_DOCUMENT]:
            first = len(lines) + 1
            lines.append(f"## {clean(doc.get('title') or doc['_id'])}")
            lines.append("")
            lines.append(clean(doc["text"]) or "(no abstract)")
            spans.append((f"scifact/{name}", first, len(lines), doc["_id"]))
            lines.append("")
        with open(os.path.join(root, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    return spans


def ndcg(found, relevant):
    dcg = sum(1 / math.log2(i + 2) for i, x in enumerate(found[:10]) if x in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


def search(ruche, index, queries, top_k):
    out = run([ruche, "search", index, "--batch", queries, "--kind", "chunks", "--json",
               "--top-k", str(top_k)])
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def scifact(args):
    d = os.path.join(args.eval, "scifact")
    corpus = read_jsonl(f"{d}/corpus.jsonl")
    queries = read_jsonl(f"{d}/queries.train.jsonl")
    rel = {}
    for line in open(f"{d}/qrels/train.tsv").read().splitlines()[1:]:
        q, doc, _ = line.split("\t")
        rel.setdefault(q, set()).add(doc)
    with tempfile.TemporaryDirectory() as tmp:
        qpath = f"{tmp}/q.jsonl"
        with open(qpath, "w") as f:
            for q in queries:
                if q["_id"] in rel:
                    f.write(json.dumps({"id": q["_id"], "text": q["text"]}) + "\n")
        # The abstract-level index.
        cpath = f"{tmp}/abstracts.jsonl"
        with open(cpath, "w") as f:
            for doc in corpus:
                f.write(json.dumps({"id": doc["_id"],
                                    "content": clean(doc.get("title", "") + " " + doc["text"])})
                        + "\n")
        started = time.time()
        embedder = ["--embedder", args.embedder] if args.embedder != "default" else []
        run([args.ruche, "index", f"{tmp}/abstracts", "-q", "--chunks", cpath, *embedder])
        seconds = time.time() - started
        responses = search(args.ruche, f"{tmp}/abstracts", qpath, 10)
        score = sum(ndcg([h["id"] for h in r["hits"]], rel[r["id"]]) for r in responses)
        print(json.dumps({"index": "abstracts", "embedder": args.embedder,
                          "nDCG@10": round(score / len(responses), 4),
                          "chunks": len(corpus), "index_s": round(seconds, 1)}), flush=True)
        spans = write_documents(corpus, f"{tmp}/scifact")
        by_path = {}
        for path, first, last, doc in spans:
            by_path.setdefault(path, []).append((first, last, doc))
        for tokens in [int(t) for t in args.chunk_tokens.split(",")]:
            index = f"{tmp}/sync{tokens}"
            started = time.time()
            out = run([args.ruche, "-q", "sync", index, "scifact", "--base", tmp, "--json",
                       "--chunk-tokens", str(tokens), *embedder])
            seconds = time.time() - started
            report = json.loads(out.stdout)
            responses = search(args.ruche, index, qpath, 40)
            total = 0.0
            spanning = 0
            hits_seen = 0
            for r in responses:
                found = []
                for hit in r["hits"]:
                    source = hit["source"]
                    first, last = source["lines"]
                    overlapped = [doc for a, b, doc in by_path[source["path"]]
                                  if a <= last and first <= b]
                    hits_seen += 1
                    spanning += len(overlapped) > 1
                    for doc in overlapped:
                        if doc not in found:
                            found.append(doc)
                total += ndcg(found, rel[r["id"]])
            print(json.dumps({
                "index": "sync", "chunk_tokens": tokens, "embedder": args.embedder,
                "nDCG@10": round(total / len(responses), 4),
                "chunks": report["documents_written"],
                "hits spanning two abstracts or more": round(spanning / max(hits_seen, 1), 3),
                "sync_s": round(seconds, 1)}), flush=True)


def tree(args):
    d = os.path.join(args.eval, "scifact")
    corpus = read_jsonl(f"{d}/corpus.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        root = f"{tmp}/tree"
        for i in range(args.files):
            folder = os.path.join(root, f"folder{i // 100:02}")
            os.makedirs(folder, exist_ok=True)
            docs = [corpus[(i * 3 + k) % len(corpus)] for k in range(3)]
            lines = [f"# Notes {i}", ""]
            for doc in docs:
                lines += [f"## {clean(doc.get('title') or doc['_id'])}", "", clean(doc["text"]), ""]
            with open(os.path.join(folder, f"note{i:05}.md"), "w") as f:
                f.write("\n".join(lines))
        index = f"{tmp}/idx"
        rows = []
        for step in ["first", "again", "one edited"]:
            if step == "one edited":
                with open(os.path.join(root, "folder00", "note00000.md"), "a") as f:
                    f.write("\nOne more line.\n")
            started = time.time()
            embedder = ["--embedder", args.embedder] if args.embedder != "default" else []
            out = run([args.ruche, "-q", "sync", index, "tree", "--base", tmp, "--json",
                       *embedder])
            seconds = time.time() - started
            report = json.loads(out.stdout)
            rows.append({"sync": step, "seconds": round(seconds, 2),
                         "files/s": round(args.files / seconds),
                         "chunks written": report["documents_written"],
                         "chunks/s": round(report["documents_written"] / seconds),
                         "changes": report["added"] + report["changed"] + report["removed"]})
            print(json.dumps(rows[-1]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", choices=["scifact", "tree"])
    parser.add_argument("--ruche", default="target/release/ruche")
    parser.add_argument("--eval", default="../shared/eval")
    parser.add_argument("--chunk-tokens", default="128,256,512")
    parser.add_argument("--embedder", default="minilm",
                        help="an embedder spec, or `default` (the index's defaults)")
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    {"scifact": scifact, "tree": tree}[args.bench](args)


if __name__ == "__main__":
    main()
