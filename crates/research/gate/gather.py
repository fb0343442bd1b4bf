#!/usr/bin/env python3
"""Builds the rule/tool sets exactly as scripts/quality.py does, indexes them with the
built CLI and dumps every candidate's explain features (gate off) to data/<set>.jsonl.

Usage: python3 gather.py [sets...]   (clinc banking metatool stb; default all)
Outputs: data/<set>.docs.jsonl (the rules/tools indexed), data/<set>.queries.jsonl,
data/<set>.gold.json, data/<set>.hits.jsonl (one line per query: hits with features).
"""
import json, os, random, subprocess, sys, shutil
import os
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))


RUCHE = os.environ.get("RUCHE", REPO + "/target/release/ruche")
EV = EVAL + ""
HERE = os.path.dirname(os.path.abspath(__file__))
D = os.path.join(HERE, "data")


def rj(p):
    return [json.loads(l) for l in open(p) if l.strip()]


def wj(p, rows):
    with open(p, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def build(name):
    if name.endswith("_nopat") or name.endswith("_noex"):
        kind, docs, queries, gold = build(name.rsplit("_", 1)[0])
        for d in docs:
            d.pop("patterns", None)
            d.pop("examples", None)
        return kind, docs, queries, gold
    if name == "clinc":
        d = f"{EV}/clinc150"
        by = {}
        for row in rj(f"{d}/train.jsonl"):
            by.setdefault(row["intent"], []).append(row["text"])
        rng = random.Random(3)
        docs = [{"id": i, "condition": i.replace("_", " "), "action": f"handle {i}",
                 "priority": rng.randint(0, 100), "patterns": rng.sample(by[i], 10)}
                for i in sorted(by)]
        qs = rj(f"{d}/val.jsonl") + rj(f"{d}/oos_val.jsonl")
        queries = [{"id": f"v{n}", "text": q["text"], "kind": "rules"} for n, q in enumerate(qs)]
        gold = {f"v{n}": {"label": (None if q["intent"] == "oos" else q["intent"]),
                          "group": ("oos" if q["intent"] == "oos" else "in")}
                for n, q in enumerate(qs)}
        return "rules", docs, queries, gold
    if name == "banking":
        d = f"{EV}/banking77oos"
        docs = rj(f"{d}/rules.jsonl")
        queries = rj(f"{d}/queries.valid.jsonl")
        gold = {}
        for line in open(f"{d}/gold.valid.tsv").read().splitlines():
            q, g, k = line.split("\t")
            gold[q] = {"label": g if k == "in" else None, "group": k}
        return "rules", docs, queries, gold
    if name == "metatool":
        d = f"{EV}/metatool"
        docs = rj(f"{d}/tools.jsonl")
        queries = rj(f"{d}/queries.dev.jsonl")
        gold = {}
        for line in open(f"{d}/gold.dev.tsv").read().splitlines():
            q, g = line.split("\t")
            gold[q] = {"label": None if g == "none" else g, "group": "none" if g == "none" else "in"}
        return "tools", docs, queries, gold
    if name == "stb":
        d = f"{EV}/stb"
        docs = rj(f"{d}/tools.jsonl")
        queries = rj(f"{d}/queries.dev.jsonl")
        gold = {}
        for line in open(f"{d}/gold.dev.tsv").read().splitlines():
            q, t = line.split("\t")[:2]
            gold.setdefault(q, {"labels": [], "group": "in"})["labels"].append(t)
        return "tools", docs, queries, gold
    raise SystemExit(name)


def main():
    sets = sys.argv[1:] or ["clinc", "banking", "metatool", "stb", "clinc_nopat", "banking_nopat", "metatool_noex"]
    os.makedirs(D, exist_ok=True)
    for name in sets:
        kind, docs, queries, gold = build(name)
        wj(f"{D}/{name}.docs.jsonl", docs)
        wj(f"{D}/{name}.queries.jsonl", queries)
        json.dump(gold, open(f"{D}/{name}.gold.json", "w"))
        idx = f"{HERE}/tmp/idx_{name}"
        shutil.rmtree(idx, ignore_errors=True)
        subprocess.run([RUCHE, "index", idx, f"--{kind}", f"{D}/{name}.docs.jsonl", "-q"], check=True)
        topk = "100" if name == "stb" else "30"
        out = subprocess.run([RUCHE, "search", idx, "--batch", f"{D}/{name}.queries.jsonl", "--json",
                              "--explain", "--min-relevance", "0", "--top-k", topk],
                             capture_output=True, text=True, check=True)
        keep = ["id", "score", "vector", "bm25", "bm25_norm", "hybrid", "text_coverage",
                "relevance", "matched", "priority_term", "scope_term"]
        with open(f"{D}/{name}.hits.jsonl", "w") as f:
            for line in out.stdout.splitlines():
                o = json.loads(line)
                f.write(json.dumps({"id": o["id"], "hits": [{k: h.get(k) for k in keep} for h in o["hits"]],
                                    "gate": o.get("gate")}) + "\n")
        # and the default configuration's output (what quality.py scores)
        out = subprocess.run([RUCHE, "search", idx, "--batch", f"{D}/{name}.queries.jsonl", "--json"],
                             capture_output=True, text=True, check=True)
        with open(f"{D}/{name}.default.jsonl", "w") as f:
            for line in out.stdout.splitlines():
                o = json.loads(line)
                f.write(json.dumps({"id": o["id"], "hits": [h["id"] for h in o["hits"]]}) + "\n")
        print(name, len(docs), "docs", len(queries), "queries", flush=True)


if __name__ == "__main__":
    main()
