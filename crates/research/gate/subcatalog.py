#!/usr/bin/env python3
"""Does the catalog background (bg = q . mu) still work when the catalog is small?

CLINC150 sub-catalogs of n intents (rules as in quality.py: 10 random train messages),
queries: val messages of the n intents (in-scope), val messages of 300 other intents'
messages (uncovered requests, group "oos"), and oos_val (also "oos"). The gate of the
recommended design, with the all-sources coefficients, is applied with mu taken from
(a) the sub-catalog itself, (b) the sub-catalog shrunk towards a fixed prior
(mu_eff = (n mu_cat + n0 mu_prior) / (n + n0)), (c) no bg term refit (vec+cov, today).
Usage: python3 subcatalog.py [static|minilm]
"""
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np

from common import DATA, HERE, embeddings, rj
import features
from evalgate import Set
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))


RUCHE = os.environ.get("RUCHE", REPO + "/target/release/ruche")
EV = EVAL + "/clinc150"


def wj(p, rows):
    with open(p, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def make(n, seed):
    name = f"clinc_sub{n}s{seed}"
    if os.path.exists(f"{DATA}/{name}.hits.jsonl"):
        return name
    full = {d["id"]: d for d in rj(f"{DATA}/clinc.docs.jsonl")}
    rng = random.Random(100 + seed)
    chosen = sorted(rng.sample(sorted(full), n))
    docs = [full[i] for i in chosen]
    val = rj(f"{EV}/val.jsonl")
    oos = rj(f"{EV}/oos_val.jsonl")
    ins = [q for q in val if q["intent"] in chosen]
    other = [q for q in val if q["intent"] not in chosen]
    other = rng.sample(other, min(300, len(other)))
    qs = ins + other + oos
    queries = [{"id": f"s{k}", "text": q["text"], "kind": "rules"} for k, q in enumerate(qs)]
    gold = {f"s{k}": ({"label": q["intent"], "group": "in"} if q["intent"] in chosen else {"label": None, "group": "oos"})
            for k, q in enumerate(qs)}
    wj(f"{DATA}/{name}.docs.jsonl", docs)
    wj(f"{DATA}/{name}.queries.jsonl", queries)
    json.dump(gold, open(f"{DATA}/{name}.gold.json", "w"))
    idx = f"{HERE}/tmp/idx_{name}"
    shutil.rmtree(idx, ignore_errors=True)
    subprocess.run([RUCHE, "index", idx, "--rules", f"{DATA}/{name}.docs.jsonl", "-q"], check=True, capture_output=True)
    out = subprocess.run([RUCHE, "search", idx, "--batch", f"{DATA}/{name}.queries.jsonl", "--json", "--explain",
                          "--min-relevance", "0", "--top-k", "30"], capture_output=True, text=True, check=True)
    keep = ["id", "score", "vector", "bm25", "bm25_norm", "hybrid", "text_coverage", "relevance", "matched",
            "priority_term", "scope_term"]
    with open(f"{DATA}/{name}.hits.jsonl", "w") as f:
        for line in out.stdout.splitlines():
            o = json.loads(line)
            f.write(json.dumps({"id": o["id"], "hits": [{k: h.get(k) for k in keep} for h in o["hits"]]}) + "\n")
    return name


if __name__ == "__main__":
    from fit import fit, choose_threshold
    model = sys.argv[1] if len(sys.argv) > 1 else "static"
    N0 = int(sys.argv[2]) if len(sys.argv) > 2 else 0   # the design's own shrinkage (0: catalog mu)
    BG = "bg" if N0 == 0 else f"bg_s{N0}"
    feats = ["cen", "cov", BG]
    lr = fit(["clinc", "banking", "metatool"], feats, model=model)
    t = choose_threshold(lr, ["clinc", "banking", "metatool"], feats, model=model)
    lr0 = fit(["clinc", "banking", "metatool"], ["vec", "cov"], model=model)
    t0 = choose_threshold(lr0, ["clinc", "banking", "metatool"], ["vec", "cov"], model=model)
    w = dict(zip(["cen", "cov", "bg"], lr.coef_[0])); b = lr.intercept_[0]
    mu_prior = np.load(f"{DATA}/mu_prior.{model}.npy")
    print(f"model {model}; shrinkage n0={N0}; design z = {b:.3f} + {w['cen']:.3f} cen + {w['cov']:.3f} cov + {w['bg']:.3f} bg, relevance >= {t:.3f}")
    print(f"{'n':>4} {'seed':>4} | {'design mu: in/oos/acc':>26} | {'shrunk n0=20: in/oos/acc':>26} | {'full-150 mu':>22} | {'vec+cov (no bg)':>22}")
    for n in [3, 10, 30, 75]:
        for seed in range(3):
            name = make(n, seed)
            features.build(name, model, 10) if not os.path.exists(f"{DATA}/{name}.feat.{model}.npz") else None
            s = Set(name, model)
            Q, T, P, off, qidx, didx = embeddings(name, model)
            C = np.array([(lambda c: c / np.linalg.norm(c))(np.vstack([T[i:i + 1], P[off[i]:off[i + 1]]]).mean(0)) for i in range(len(T))])
            mu_cat = C.mean(0)
            qv = Q[[qidx[q] for q in s.qid]]
            full = np.load(f"{DATA}/clinc.emb.{model}.npz")
            res = []
            for mu in [(n * mu_cat + N0 * mu_prior) / (n + N0), (n * mu_cat + 20 * mu_prior) / (n + 20), None]:
                if mu is None:
                    Qf, Tf, Pf, offf = full["Q"], full["T"], full["P"], full["off"]
                    Cf = np.array([(lambda c: c / np.linalg.norm(c))(np.vstack([Tf[i:i + 1], Pf[offf[i]:offf[i + 1]]]).mean(0)) for i in range(len(Tf))])
                    mu = (Cf.sum(0) + N0 * mu_prior) / (len(Cf) + N0)
                bg = qv @ mu
                z = b + w["cen"] * s.f("cen") + w["cov"] * s.f("cov") + w["bg"] * bg
                m = s.metrics(1 / (1 + np.exp(-z)) >= t)
                res.append(f"{m['in_right']:.3f} {m['oos_refused']:.3f} {m['acc']:.3f}")
            X0 = np.column_stack([s.f("vec"), s.f("cov")])
            m = s.metrics(lr0.predict_proba(X0)[:, 1] >= t0)
            res.append(f"{m['in_right']:.3f} {m['oos_refused']:.3f} {m['acc']:.3f}")
            print(f"{n:4} {seed:4} | " + " | ".join(f"{r:>26}" for r in res), flush=True)
