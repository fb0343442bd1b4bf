#!/usr/bin/env python3
"""Builds every evaluation set (records and queries carrying MiniLM vectors, so the engine
uses its MiniLM-family calibrations) into data/<set>/{docs,queries}.jsonl + gold.json.

Sets (dev data only, /work/shared/eval):
  clinc     CLINC150 as rules: quality.py's construction (seed 3, 10 train patterns,
            random priorities); queries val (in, 3000) + oos_val (oos, 100).
  banking   BANKING77-OOS valid: 50 rules; in 1506 / id-oos 530 / ood-oos 200.
  bank77    BANKING77 all in scope (crates/research/src/bin/relevance.rs construction): 77 rules, the first
            10 train.csv messages of each intent as patterns, the other 9233 as queries (in).
  metatool  MetaTool dev half: 199 tools with 5 examples; in 239 / none 281.
  stb       StableToolBench G1_instruction dev: 2479 APIs (no examples), 163 queries.
  stbmulti  multi-intent messages written by hand (stb_multi.jsonl), gold = union.
  scen      CLINC150 domains as scenarios (crates/research/src/bin/relevance.rs `scenarios`: 5 random train
            messages per intent, python random seed 3), queries val (in, domain) + oos_val.
Usage: python3 sets.py [set ...]
"""
import csv, json, os, random, sys
import numpy as np
from emb import embed
from common import text_to_embed  # crates/research/gate/common.py, on the path through emb

EV = os.environ.get("RUCHE_EVAL", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "shared", "eval"))
HERE = os.path.dirname(os.path.abspath(__file__))


def rj(p):
    return [json.loads(l) for l in open(p) if l.strip()]


def wj(p, rows):
    with open(p, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def clinc():
    by = {}
    for row in rj(f"{EV}/clinc150/train.jsonl"):
        by.setdefault(row["intent"], []).append(row["text"])
    rng = random.Random(3)
    docs = [{"id": i, "condition": i.replace("_", " "), "action": f"handle {i}",
             "priority": rng.randint(0, 100), "patterns": rng.sample(by[i], 10)} for i in sorted(by)]
    qs = rj(f"{EV}/clinc150/val.jsonl") + rj(f"{EV}/clinc150/oos_val.jsonl")
    queries = [{"id": f"v{n}", "text": q["text"], "kind": "rules"} for n, q in enumerate(qs)]
    gold = {f"v{n}": {"labels": [] if q["intent"] == "oos" else [q["intent"]],
                      "group": "oos" if q["intent"] == "oos" else "in"} for n, q in enumerate(qs)}
    return "rules", docs, queries, gold


def banking():
    d = f"{EV}/banking77oos"
    docs = rj(f"{d}/rules.jsonl")
    queries = rj(f"{d}/queries.valid.jsonl")
    gold = {}
    for line in open(f"{d}/gold.valid.tsv").read().splitlines():
        q, g, k = line.split("\t")
        gold[q] = {"labels": [g] if k == "in" else [], "group": k}
    return "rules", docs, queries, gold


def bank77():
    pats, queries, gold = {}, [], {}
    with open(f"{EV}/banking77/train.csv", newline="") as f:
        r = csv.reader(f)
        next(r)
        for text, intent in r:
            ex = pats.setdefault(intent, [])
            if len(ex) < 10:
                ex.append(text)
            else:
                qid = f"b{len(queries)}"
                queries.append({"id": qid, "text": text, "kind": "rules"})
                gold[qid] = {"labels": [intent], "group": "in"}
    docs = []
    for intent, ex in sorted(pats.items()):
        w = intent.replace("_", " ")
        docs.append({"id": intent, "condition": w, "action": w, "patterns": ex})
    return "rules", docs, queries, gold


def metatool():
    d = f"{EV}/metatool"
    docs = rj(f"{d}/tools.jsonl")
    queries = rj(f"{d}/queries.dev.jsonl")
    gold = {}
    for line in open(f"{d}/gold.dev.tsv").read().splitlines():
        q, g = line.split("\t")
        gold[q] = {"labels": [] if g == "none" else [g], "group": "none" if g == "none" else "in"}
    return "tools", docs, queries, gold


def stb():
    d = f"{EV}/stb"
    docs = rj(f"{d}/tools.jsonl")
    queries = rj(f"{d}/queries.dev.jsonl")
    gold = {}
    for line in open(f"{d}/gold.dev.tsv").read().splitlines():
        q, t = line.split("\t")[:2]
        gold.setdefault(q, {"labels": [], "group": "in"})["labels"].append(t)
    return "tools", docs, queries, gold


def stbmulti():
    kind, docs, _, _ = stb()
    rows = rj(f"{HERE}/stb_multi.jsonl")
    queries = [{"id": r["id"], "text": r["text"], "kind": "tools"} for r in rows]
    gold = {r["id"]: {"labels": sorted(set(r["gold"])), "group": "in", "parts": r["parts"]} for r in rows}
    return kind, docs, queries, gold


def scen():
    by = {}
    for row in rj(f"{EV}/clinc150/train.jsonl"):
        by.setdefault(row["intent"], []).append(row["text"])
    domains = json.load(open(f"{EV}/clinc150/domains.json"))
    rng = random.Random(3)
    docs, dom_of = [], {}
    for dom in sorted(domains):
        ex = []
        for it in domains[dom]:
            dom_of[it] = dom
            ex += rng.sample(by[it], 5)
        w = lambda s: s.replace("_", " ")
        docs.append({"id": dom, "name": w(dom), "description": f"{w(dom)}: " + ", ".join(w(i) for i in domains[dom]),
                     "examples": ex})
    qs = rj(f"{EV}/clinc150/val.jsonl") + rj(f"{EV}/clinc150/oos_val.jsonl")
    queries = [{"id": f"v{n}", "text": q["text"], "kind": "scenarios"} for n, q in enumerate(qs)]
    gold = {f"v{n}": {"labels": [] if q["intent"] == "oos" else [dom_of[q["intent"]]],
                      "group": "oos" if q["intent"] == "oos" else "in"} for n, q in enumerate(qs)}
    return "scenarios", docs, queries, gold


def clinc_dup():
    """Every CLINC150 intent twice (`<intent>` and `<intent>__twin`, each with its own 10
    train messages as patterns, the twin's condition and action worded alike): two rules
    apply to every in-scope message. A stress test for features that compare a candidate
    with the others (margins): the first hit may be either twin."""
    kind, docs, queries, gold = clinc()
    by = {}
    for row in rj(f"{EV}/clinc150/train.jsonl"):
        by.setdefault(row["intent"], []).append(row["text"])
    rng = random.Random(7)
    twins = []
    for d in docs:
        rest = [t for t in by[d["id"]] if t not in d["patterns"]]
        w = d["id"].replace("_", " ")
        twins.append({"id": d["id"] + "__twin", "condition": f"request about {w}", "action": f"handle {w} request",
                      "priority": d["priority"], "patterns": rng.sample(rest, 10)})
    for g in gold.values():
        g["labels"] = g["labels"] + [l + "__twin" for l in g["labels"]]
    return kind, docs + twins, queries, gold


def scen_fit(k):
    """Fitting data for the scenario calibration (crates/research/src/bin/relevance.rs fit-scenarios'
    protocol, on CLINC150 *train* only): fold k of 5 holds 2 of the 10 domains out (sorted
    domains, shuffled with seed 0); the 8 others are scenarios (5 random train messages per
    intent as examples); queries: 3 other train messages per intent of the 8 (in) and 10 per
    intent of the 2 held out (oos)."""
    by = {}
    for row in rj(f"{EV}/clinc150/train.jsonl"):
        by.setdefault(row["intent"], []).append(row["text"])
    domains = json.load(open(f"{EV}/clinc150/domains.json"))
    names = sorted(domains); random.Random(0).shuffle(names)
    out = set(names[2 * k:2 * k + 2])
    rng = random.Random(100 + k)
    docs, queries, gold = [], [], {}
    w = lambda s: s.replace("_", " ")
    for dom in sorted(domains):
        ex = []
        for it in domains[dom]:
            msgs = rng.sample(by[it], 15)
            if dom in out:
                qs, grp = msgs[:10], "oos"
            else:
                ex += msgs[:5]; qs, grp = msgs[5:8], "in"
            for t in qs:
                qid = f"s{k}_{len(queries)}"
                queries.append({"id": qid, "text": t, "kind": "scenarios"})
                gold[qid] = {"labels": [dom] if grp == "in" else [], "group": grp}
        if dom not in out:
            docs.append({"id": dom, "name": w(dom), "description": f"{w(dom)}: " + ", ".join(w(i) for i in domains[dom]), "examples": ex})
    return "scenarios", docs, queries, gold


def held_out(base, k, folds=5):
    """`base` with fold k of its documents removed (seed 0 shuffle, 5 disjoint folds): the
    messages of the removed documents become near misses (group id-oos)."""
    kind, docs, queries, gold = BUILD[base]()
    ids = sorted(d["id"] for d in docs)
    random.Random(0).shuffle(ids)
    out = set(ids[k::folds])
    docs = [d for d in docs if d["id"] not in out]
    for q, g in gold.items():
        if g["group"] == "in" and set(g["labels"]) <= out:
            g["group"], g["labels"] = "id-oos", []
    return kind, docs, queries, gold


BUILD = dict(clinc_dup=clinc_dup, clinc=clinc, banking=banking, bank77=bank77, metatool=metatool, stb=stb, stbmulti=stbmulti, scen=scen)


for _k in range(5):
    BUILD[f"scenfit{_k}"] = (lambda k: lambda: scen_fit(k))(_k)
    BUILD[f"clinc_ho{_k}"] = (lambda k: lambda: held_out("clinc", k))(_k)
    BUILD[f"metatool_ho{_k}"] = (lambda k: lambda: held_out("metatool", k))(_k)


def without_examples(base):
    kind, docs, queries, gold = BUILD[base]()
    for d in docs:
        d.pop("patterns", None); d.pop("examples", None)
    return kind, docs, queries, gold


for _b in ["clinc", "banking", "bank77", "metatool", "clinc_ho0", "clinc_ho1", "clinc_ho2", "clinc_ho3", "clinc_ho4",
           "metatool_ho0", "metatool_ho1", "metatool_ho2", "metatool_ho3", "metatool_ho4"]:
    BUILD[_b.replace("_ho", "_np_ho") if "_ho" in _b else _b + "_np"] = (lambda b: lambda: without_examples(b))(_b)


def doc_text(kind, d):
    return f'{d["condition"]} {d["action"]}' if kind == "rules" else f'{d["name"]} {d["description"]}'


def main():
    for name in sys.argv[1:] or ["clinc", "banking", "bank77", "metatool", "stb", "scen"]:
        kind, docs, queries, gold = BUILD[name]()
        out = f"{HERE}/data/{name}"
        os.makedirs(out, exist_ok=True)
        ex_key = "patterns" if kind == "rules" else "examples"
        emb_key = "pattern_embeddings" if kind == "rules" else "example_embeddings"
        texts = [doc_text(kind, d) for d in docs] + [e for d in docs for e in d.get(ex_key, [])] \
            + [text_to_embed(q["text"]) for q in queries]
        V = embed(texts)
        rnd = lambda v: [round(float(x), 7) for x in v]
        i = 0
        for d in docs:
            d["embedding"] = rnd(V[i]); i += 1
        for d in docs:
            n = len(d.get(ex_key, []))
            if n:
                d[emb_key] = [rnd(v) for v in V[i:i + n]]
            i += n
        for q in queries:
            q["embedding"] = rnd(V[i]); i += 1
        wj(f"{out}/docs.jsonl", docs)
        wj(f"{out}/queries.jsonl", queries)
        json.dump({"kind": kind, "gold": gold}, open(f"{out}/gold.json", "w"))
        print(name, kind, len(docs), "docs", len(queries), "queries", flush=True)


if __name__ == "__main__":
    main()
