#!/usr/bin/env python3
"""Multi-intent tool search, simulated through the engine: each message is also searched
clause by clause. Writes data/<set>_parts/ (queries = the parts, with MiniLM vectors; the
same tool index) and runs the engine on them (dump30 = default pool, gate off).
Splitters: `sent` = sentences (. ? ! ;); `clause` = sentences, then ', and ' / ' and also ' /
' as well as ' / ' plus ' / ', then '."""
import json, os, re, subprocess, sys
from emb import embed
from common import text_to_embed  # crates/research/gate/common.py, on the path through emb
from gate import rj, HERE
from run_engine import slim

def sentences(t):
    parts = re.split(r"(?<=[.?!;])\s+", t.strip())
    return [p for p in parts if len(re.findall(r"\w+", p)) >= 3]

def clauses(t):
    out = []
    for s in sentences(t):
        out += [p for p in re.split(r",? and also |, as well as |, plus |, then |, and (?=[a-z])|; ", s) if len(re.findall(r"\w+", p)) >= 3]
    return out

SPLIT = {"sent": sentences, "clause": clauses}
if __name__ == "__main__":
    for name in sys.argv[1:]:
        qs = rj(f"{HERE}/data/{name}/queries.jsonl")
        for how, fn in SPLIT.items():
            parts = []
            for q in qs:
                ps = fn(q["text"])
                if len(ps) > 1:
                    for i, p in enumerate(ps):
                        parts.append({"id": f"{q['id']}#{i}", "text": p, "kind": "tools"})
            V = embed([text_to_embed(p["text"]) for p in parts])
            for p, v in zip(parts, V):
                p["embedding"] = [round(float(x), 7) for x in v]
            d = f"{HERE}/data/{name}_{how}"
            os.makedirs(d, exist_ok=True)
            with open(f"{d}/queries.jsonl", "w") as f:
                for p in parts: f.write(json.dumps(p) + "\n")
            out = subprocess.run([f"{HERE}/ruche", "search", f"{HERE}/tmp/idx_{name}", "--batch", f"{d}/queries.jsonl", "--json",
                                  "--explain", "--min-relevance", "0", "--top-k", "30", "--kind", "tools"], capture_output=True, text=True, check=True).stdout
            with open(f"{d}/dump30.jsonl", "w") as f:
                for l in out.splitlines():
                    if l.strip(): f.write(json.dumps(slim(l)) + "\n")
            print(name, how, len(parts), "parts of", len({p['id'].split('#')[0] for p in parts}), "messages", flush=True)
