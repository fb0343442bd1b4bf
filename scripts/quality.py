#!/usr/bin/env python3
"""Retrieval and decision quality on the public evaluation sets, through the `ruche` CLI.

Usage:
    python3 scripts/quality.py [--ruche target/release/ruche] [--eval ../shared/eval]
                               [--embedder default|bert:DIR] [--config FILE]
                               [--sets clinc,banking,metatool,stb,locomo,scifact]
                               [--json]

Each set is indexed into a temporary directory with the given embedder and queried with
`ruche search --batch --json`, the default configuration unless `--config` names one.
Sets (their READMEs in the eval folder say how each is scored):

- clinc: CLINC150 val as rules (one per intent, 10 random train messages as patterns, a
  random priority 0..=100), out-of-scope weighted to a 1:4.5 mix: in-scope top-1,
  out-of-scope refused, accuracy with abstention.
- banking: BANKING77-OOS valid: accuracy with abstention over all messages, in-scope first
  right, uncovered banking requests (id-oos) refused, general out-of-scope (ood-oos)
  refused.
- metatool: MetaTool Task 1 dev half (199 tools with 5 examples): accuracy with
  abstention, top-1 when a tool is needed, none when none is.
- stb: StableToolBench G1_instruction (2,479 APIs): tools the default selection returns,
  the recall of that set, recall@5 with `top_k` 5.
- stbmulti: the same on 65 requests for two or three tools at once, written from the G1 dev
  requests (`crates/research/gate/minilm/stb_multi.jsonl`).
- locomo: LoCoMo dev conversations: turns the default selection returns, the evidence
  recall of that set, evidence recall@10 with `top_k` 10; adversarial questions answered
  with nothing.
- scifact: SciFact train with the supplied MiniLM vectors (the embedder is not used):
  nDCG@10 with `--top-k 10`, and the size and recall of the default selection.

LoCoMo is CC BY-NC 4.0: this script reads it from the eval folder and writes nothing of
it anywhere but a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Ruche:
    def __init__(self, binary, embedder, config, workdir):
        self.binary = binary
        self.embedder = embedder
        self.config = config
        self.workdir = workdir
        self.n = 0
        self.dump = None
        self.batches = 0

    def base(self):
        cmd = [self.binary]
        if self.config:
            cmd += ["--config", self.config]
        return cmd

    def index(self, **inputs):
        self.n += 1
        path = os.path.join(self.workdir, f"idx{self.n}")
        cmd = self.base() + ["index", path, "-q"]
        for kind, file in inputs.items():
            if kind != "embedder":
                cmd += [f"--{kind}", file]
        if self.embedder and inputs.get("embedder", True) is not False:
            cmd += ["--embedder", self.embedder]
        out = run(cmd)
        if out.returncode != 0:
            sys.exit(f"index failed: {out.stderr}")
        return path

    def batch(self, index, queries, extra=()):
        out = run(self.base() + ["search", index, "--batch", queries, "--json", *extra])
        if out.returncode != 0:
            sys.exit(f"search failed: {out.stderr}")
        if self.dump:
            # Everything but what differs between runs (timings, query ids).
            self.batches += 1
            with open(os.path.join(self.dump, f"batch{self.batches:03}.jsonl"), "w") as f:
                for line in out.stdout.splitlines():
                    o = json.loads(line)
                    o.pop("timings_us", None)
                    o.pop("query_id", None)
                    f.write(json.dumps(o, sort_keys=True) + "\n")
        hits = {}
        for line in out.stdout.splitlines():
            if line.strip():
                o = json.loads(line)
                hits[o["id"]] = [h["id"] for h in o["hits"]]
        return hits


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def clinc(r, ev, tmp):
    d = os.path.join(ev, "clinc150")
    train = read_jsonl(os.path.join(d, "train.jsonl"))
    val = read_jsonl(os.path.join(d, "val.jsonl"))
    oos = read_jsonl(os.path.join(d, "oos_val.jsonl"))
    by = {}
    for row in train:
        by.setdefault(row["intent"], []).append(row["text"])
    rng = random.Random(3)
    rules = [
        {"id": i, "condition": i.replace("_", " "), "action": f"handle {i}",
         "priority": rng.randint(0, 100), "patterns": rng.sample(by[i], 10)}
        for i in sorted(by)
    ]
    write_jsonl(f"{tmp}/clinc_rules.jsonl", rules)
    qs = val + oos
    write_jsonl(f"{tmp}/clinc_q.jsonl",
                [{"id": f"v{n}", "text": q["text"], "kind": "rules"} for n, q in enumerate(qs)])
    top = r.batch(r.index(rules=f"{tmp}/clinc_rules.jsonl"), f"{tmp}/clinc_q.jsonl")
    first = {k: (v[0] if v else None) for k, v in top.items()}
    ins = [(f"v{n}", q["intent"]) for n, q in enumerate(qs) if q["intent"] != "oos"]
    oo = [f"v{n}" for n, q in enumerate(qs) if q["intent"] == "oos"]
    right = sum(first.get(k) == g for k, g in ins)
    refused = sum(first.get(k) is None for k in oo)
    w = (1000 / 4500) / (len(oo) / len(ins))
    return {
        "in-scope top-1": right / len(ins),
        "out-of-scope refused": refused / len(oo),
        "accuracy with abstention": (right + w * refused) / (len(ins) + w * len(oo)),
    }


def banking(r, ev, tmp):
    d = os.path.join(ev, "banking77oos")
    top = r.batch(r.index(rules=f"{d}/rules.jsonl"), f"{d}/queries.valid.jsonl")
    gold = [line.split("\t") for line in open(f"{d}/gold.valid.tsv").read().splitlines()]
    first = {k: (v[0] if v else None) for k, v in top.items()}
    ins = [(q, g) for q, g, k in gold if k == "in"]
    ido = [q for q, g, k in gold if k == "id-oos"]
    ood = [q for q, g, k in gold if k == "ood-oos"]
    right = sum(first.get(q) == g for q, g in ins)
    return {
        "accuracy with abstention": (right + sum(first.get(q) is None for q in ido + ood)) / len(gold),
        "in-scope first right": right / len(ins),
        "uncovered banking refused": sum(first.get(q) is None for q in ido) / len(ido),
        "out-of-scope refused": sum(first.get(q) is None for q in ood) / len(ood),
    }


def metatool(r, ev, tmp):
    d = os.path.join(ev, "metatool")
    top = r.batch(r.index(tools=f"{d}/tools.jsonl"), f"{d}/queries.dev.jsonl")
    gold = [line.split("\t") for line in open(f"{d}/gold.dev.tsv").read().splitlines()]
    first = {k: (v[0] if v else None) for k, v in top.items()}
    need = [(q, g) for q, g in gold if g != "none"]
    none = [q for q, g in gold if g == "none"]
    right = sum(first.get(q) == g for q, g in need)
    refused = sum(first.get(q) is None for q in none)
    return {
        "accuracy with abstention": (right + refused) / len(gold),
        "top-1 when a tool is needed": right / len(need),
        "none when none is needed": refused / len(none),
    }


def precision(returned, gold):
    """The share of returned documents that are gold, over every returned document."""
    got = [d for q in gold for d in returned.get(q, [])]
    return sum(d in gold[q] for q in gold for d in returned.get(q, [])) / max(len(got), 1)


def recall(returned, gold):
    return sum(len(g & set(returned.get(q, []))) / len(g) for q, g in gold.items()) / len(gold)


def stb(r, ev, tmp):
    d = os.path.join(ev, "stb")
    idx = r.index(tools=f"{d}/tools.jsonl")
    gold = {}
    for line in open(f"{d}/gold.dev.tsv").read().splitlines():
        q, t = line.split("\t")[:2]
        gold.setdefault(q, set()).add(t)
    default = r.batch(idx, f"{d}/queries.dev.jsonl")
    k5 = r.batch(idx, f"{d}/queries.dev.k5.jsonl")
    return {
        "tools returned (default)": sum(len(v) for v in default.values()) / len(default),
        "recall of the returned set": recall(default, gold),
        "recall@5": recall(k5, gold),
    }


def stbmulti(r, ev, tmp):
    """StableToolBench requests for several tools at once (crates/research/gate/minilm/stb_multi.jsonl:
    two or three G1 dev requests combined in other words, with the union of their gold APIs)."""
    d = os.path.join(ev, "stb")
    idx = r.index(tools=f"{d}/tools.jsonl")
    cases = [json.loads(line) for line in open(os.path.join(os.path.dirname(__file__), "..", "crates", "research", "gate", "minilm", "stb_multi.jsonl"))]
    gold = {c["id"]: set(c["gold"]) for c in cases}
    path, path5 = f"{tmp}/multi.jsonl", f"{tmp}/multi.k5.jsonl"
    with open(path, "w") as f, open(path5, "w") as f5:
        for c in cases:
            f.write(json.dumps({"id": c["id"], "text": c["text"], "kind": "tools"}) + "\n")
            f5.write(json.dumps({"id": c["id"], "text": c["text"], "kind": "tools", "top_k": 5}) + "\n")
    default = r.batch(idx, path)
    k5 = r.batch(idx, path5)
    return {
        "tools returned (default)": sum(len(v) for v in default.values()) / len(default),
        "recall of the returned set": recall(default, gold),
        "recall@5": recall(k5, gold),
    }


def locomo(r, ev, tmp):
    d = os.path.join(ev, "locomo")
    idx = r.index(chunks=f"{d}/chunks.jsonl")
    gold = {}
    for line in open(f"{d}/gold.tsv").read().splitlines():
        q, c = line.split("\t")[:2]
        gold.setdefault(q, set()).add(c)
    default = r.batch(idx, f"{d}/queries.default.jsonl")
    k10 = r.batch(idx, f"{d}/queries.k10.jsonl")
    adv = r.batch(idx, f"{d}/queries.adv.jsonl")
    return {
        "turns returned (default)": sum(len(v) for v in default.values()) / len(default),
        "evidence recall (default)": recall(default, gold),
        "returned turns that are evidence (default)": precision(default, gold),
        "evidence recall@10": recall(k10, gold),
        "adversarial answered with nothing": sum(not v for v in adv.values()) / len(adv),
    }


def npy(path):
    b = open(path, "rb").read()
    header_len = struct.unpack("<H", b[8:10])[0]
    header = b[10:10 + header_len].decode()
    n, dim = [int(x) for x in header.split("(")[1].split(")")[0].split(",") if x.strip()]
    return [struct.unpack_from(f"<{dim}f", b, 10 + header_len + 4 * dim * i) for i in range(n)]


def scifact(r, ev, tmp):
    d = os.path.join(ev, "scifact")
    docs = read_jsonl(f"{d}/corpus.jsonl")
    vectors = npy(f"{d}/minilm_corpus.f32.npy")
    queries = read_jsonl(f"{d}/queries.train.jsonl")
    qvectors = npy(f"{d}/minilm_queries.train.f32.npy")
    write_jsonl(f"{tmp}/sf_c.jsonl", [
        {"id": x["_id"], "content": (x.get("title", "") + " " + x["text"]).strip(),
         "embedding": [round(v, 7) for v in e]} for x, e in zip(docs, vectors)])
    write_jsonl(f"{tmp}/sf_q.jsonl", [
        {"id": q["_id"], "text": q["text"], "kind": "chunks",
         "embedding": [round(v, 7) for v in e]} for q, e in zip(queries, qvectors)])
    rel = {}
    for line in open(f"{d}/qrels/train.tsv").read().splitlines()[1:]:
        q, doc, _ = line.split("\t")
        rel.setdefault(q, set()).add(doc)
    idx = r.index(chunks=f"{tmp}/sf_c.jsonl", embedder=False)
    top = r.batch(idx, f"{tmp}/sf_q.jsonl", ["--top-k", "10"])
    default = r.batch(idx, f"{tmp}/sf_q.jsonl")

    def ndcg(found, relevant):
        dcg = sum(1 / math.log2(i + 2) for i, x in enumerate(found[:10]) if x in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
        return dcg / ideal

    return {
        "nDCG@10": sum(ndcg(top.get(q, []), g) for q, g in rel.items()) / len(rel),
        "hits returned (default)": sum(len(v) for v in default.values()) / len(default),
        "recall (default)": recall(default, rel),
    }


SETS = {"clinc": clinc, "banking": banking, "metatool": metatool, "stb": stb, "stbmulti": stbmulti,
        "locomo": locomo, "scifact": scifact}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--ruche", default=os.path.join(here, "..", "target", "release", "ruche"))
    parser.add_argument("--eval", default=os.path.join(here, "..", "..", "shared", "eval"))
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--config", default=None)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump", default=None,
                        help="write every batch's answers (hits, scores, breakdowns) into this directory, to compare two builds byte for byte")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        r = Ruche(args.ruche, args.embedder, args.config, tmp)
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            r.dump = args.dump
        for name in args.sets.split(","):
            results[name] = SETS[name](r, args.eval, tmp)
            if not args.json:
                for metric, value in results[name].items():
                    print(f"{name:9} {metric:36} {value:.3f}", flush=True)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
