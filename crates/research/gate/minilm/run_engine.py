#!/usr/bin/env python3
"""Indexes each set (records with MiniLM vectors) with ./ruche and runs its queries:
  data/<set>/dump.jsonl     --explain --min-relevance 0 --top-k K (K=30; 100 for stb*): every
                            candidate of the default pool with its features, gate off
  data/<set>/default.jsonl  the default configuration (gate + default selection), explain
  data/<set>/k5.jsonl       tools only: --top-k 5 (gate on), for recall@5
Usage: python3 run_engine.py [--config FILE --tag T] set...
"""
import json, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUCHE = os.path.join(HERE, "ruche")


def run(args):
    r = subprocess.run([RUCHE] + args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(r.stderr)
    return r.stdout


def slim(line, keep_all=True):
    o = json.loads(line)
    hits = [{k: h.get(k) for k in ("id", "score", "vector", "bm25", "bm25_norm", "hybrid", "text_coverage",
                                   "relevance", "gate", "matched", "codes_matched")} for h in o["hits"]]
    return {"id": o["id"], "hits": hits, "gate": o.get("gate"), "selection": o.get("selection")}


def main():
    argv = sys.argv[1:]
    cfg, tag = [], ""
    if argv and argv[0] == "--config":
        cfg = ["--config", argv[1]]; tag = "." + argv[3]; argv = argv[4:]
    for name in argv:
        d = f"{HERE}/data/{name}"
        kind = json.load(open(f"{d}/gold.json"))["kind"]
        idx = f"{HERE}/tmp/idx_{name}"
        if not os.path.exists(idx):
            run(["index", idx, f"--{kind}", f"{d}/docs.jsonl", "-q"])
        q = f"{d}/queries.jsonl"
        K = "100" if name.startswith("stb") else "30"
        outs = {"dump": ["--explain", "--min-relevance", "0", "--top-k", K], "default": ["--explain"]}
        if kind == "tools":
            outs["k5"] = ["--top-k", "5"]
        for what, extra in outs.items():
            if tag and what == "dump":
                continue
            out = run(cfg + ["search", idx, "--batch", q, "--json", "--kind", kind] + extra)
            with open(f"{d}/{what}{tag}.jsonl", "w") as f:
                for line in out.splitlines():
                    if line.strip():
                        f.write(json.dumps(slim(line)) + "\n")
        print(name, "done", flush=True)


if __name__ == "__main__":
    main()
