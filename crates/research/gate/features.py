#!/usr/bin/env python3
"""Per (query, candidate) evidence for the top-K candidates of the engine's order (gate off).

Usage: python3 features.py [--model static|minilm] [--k 10] [sets...]
Writes data/<set>.feat.<model>.npz: X (rows x features), cols, qid, doc, rank, score, y
(candidate right), grp (query group).

With --model minilm, the vector features are recomputed from MiniLM embeddings (the
engine's `vector` = max(0, best of text, examples, centroid) recomputed in Python) while
BM25/coverage come from the engine; the engine order is then re-derived with the same
fusion (0.8 * vector + 0.2 * bm25 min-max) -- an approximation of running the engine with
--embedder bert.
"""
import argparse
import math

import numpy as np

from common import (DATA, doc_examples, doc_text, embeddings, idf_table, load, query_words,
                    words)

COLS = [
    "vec", "cov", "bm", "rel0", "hyb",
    "tcos", "pmax", "cen", "top2", "top3", "npat",
    "sc_mean", "sc_min", "sc_q25", "sc_cen",
    "ev_diff", "ev_ratio", "cen_diff", "top2_diff",
    "margin_v", "margin_h", "margin_p", "margin_c",
    "unexpl", "unexpl_rare", "max_miss_idf", "miss_unknown", "miss_unknown_share",
    "agree", "is_vtop", "is_btop",
    "knn5", "knn10", "vec_rel_med",
    "bg", "vec_bg", "cen_bg", "ccos", "ccen", "margin_cc", "bg_fix", "nq", "bg_s10", "bg_s20", "msp05", "msp10", "energy05", "bg_local",
]


def rule_scales(Pr):
    """Leave-one-out scale of a rule from its own patterns (rows normalised)."""
    n = len(Pr)
    if n < 2:
        return (np.nan,) * 4
    S = Pr @ Pr.T
    np.fill_diagonal(S, -np.inf)
    best = S.max(1)
    # cosine of each pattern to the centroid of the others
    tot = Pr.sum(0)
    loo = []
    for j in range(n):
        c = tot - Pr[j]
        c = c / (np.linalg.norm(c) or 1)
        loo.append(Pr[j] @ c)
    return best.mean(), best.min(), np.quantile(best, 0.25), float(np.mean(loo))


def build(name, model="static", K=10):
    docs, queries, gold, hits = load(name)
    Q, T, P, off, qidx, didx = embeddings(name, model)
    df, N, idf = idf_table(docs)
    dwords = [set(words(doc_text(d) + " " + " ".join(doc_examples(d)))) for d in docs]
    qtext = {q["id"]: q["text"] for q in queries}
    # per-doc precomputation
    npat = np.array([off[i + 1] - off[i] for i in range(len(docs))])
    scales = np.array([rule_scales(P[off[i]:off[i + 1]]) for i in range(len(docs))])
    cents = []
    for i in range(len(docs)):
        M = np.vstack([T[i:i + 1], P[off[i]:off[i + 1]]])
        c = M.mean(0)
        cents.append(c / np.linalg.norm(c))
    cents = np.array(cents)
    pat_doc = np.repeat(np.arange(len(docs)), npat)
    # the catalog's mean direction: the mean of every document's centroid (text + examples)
    mu = cents.mean(0)
    def centred(M):
        M = M - mu
        return M / np.maximum(np.linalg.norm(M, axis=-1, keepdims=True), 1e-9)
    Tc, Pc, Cc = centred(T), (centred(P) if len(P) else P), centred(cents)
    import os
    fx = f"{DATA}/mu_fixed.{model}.npy"
    mu_fix = np.load(fx) if os.path.exists(fx) else None
    mu_prior = np.load(f"{DATA}/mu_prior.{model}.npy")
    n_docs = len(docs)
    mu_s10 = (cents.sum(0) + 10 * mu_prior) / (n_docs + 10)
    mu_s20 = (cents.sum(0) + 20 * mu_prior) / (n_docs + 20)
    rare_df = max(1, int(0.02 * N))  # "rare in the rule set": in at most 2% of docs (>=1)

    rows, meta = [], []
    for q in queries:
        qid = q["id"]
        qi = qidx[qid]
        qv = Q[qi]
        hs = hits[qid]
        if model != "static" and not name.endswith("_mx"):
            # recompute the vector leg with this model, keep BM25/coverage; re-rank
            for h in hs:
                i = didx[h["id"]]
                M = np.vstack([T[i:i + 1], P[off[i]:off[i + 1]]] + ([cents[i:i + 1]] if npat[i] else []))
                h = h
                h["vector"] = float(max(0.0, (M @ qv).max()))
                h["hybrid"] = 0.8 * h["vector"] + 0.2 * h["bm25_norm"]
                h["score"] = h["hybrid"] + (h["priority_term"] or 0) + (h["scope_term"] or 0)
            hs = sorted(hs, key=lambda h: -h["score"])
        hs = hs[:max(K, 2)]
        if not hs:
            continue
        g = gold[qid]
        right = set(g.get("labels") or ([g["label"]] if g.get("label") else []))
        qw = query_words(qtext[qid])
        W = {w: idf(w) for w in qw}
        tot = sum(W.values())
        unknown = [w for w in qw if df.get(w, 0) == 0]
        miss_unknown = len(unknown)
        miss_unknown_share = (sum(W[w] for w in unknown) / tot) if tot else 0.0
        # per-candidate cosines
        per = []
        for h in hs:
            i = didx[h["id"]]
            pc = P[off[i]:off[i + 1]] @ qv
            per.append((i, float(T[i] @ qv), pc, float(cents[i] @ qv)))
        vecs = np.array([h["vector"] for h in hs])
        hybs = np.array([h["hybrid"] for h in hs])
        pmaxs = np.array([(pc.max() if len(pc) else t) for (_, t, pc, _) in per])
        cens = np.array([c for (*_, c) in per])
        vtop = int(np.argmax(vecs))
        btop = int(np.argmax([h["bm25"] for h in hs]))
        agree = float(hs[vtop]["id"] == hs[btop]["id"])
        # kNN over all patterns of the set
        if len(P):
            allc = P @ qv
            order = np.argsort(-allc)[:10]
            nn = pat_doc[order]
        else:
            nn = None
        allv = cents @ qv
        med = float(np.median(allv))
        bg = float(mu @ qv)
        bg_fix = float(mu_fix @ qv) if mu_fix is not None else np.nan
        qc = centred(qv[None])[0]
        ccs = []
        for h in hs:
            i = didx[h["id"]]
            ccs.append(max([float(Tc[i] @ qc)] + list(Pc[off[i]:off[i + 1]] @ qc) + ([float(Cc[i] @ qc)] if npat[i] else [])))
        ccs = np.array(ccs)
        def msp(i, tau):
            e = np.exp((allv - allv.max()) / tau)
            return float(e[i] / e.sum())
        energy05 = float(0.05 * np.log(np.exp((allv - allv.max()) / 0.05).sum()) + allv.max())
        top_all = np.sort(allv)[::-1]
        for r, (h, (i, t, pc, c)) in enumerate(zip(hs[:K], per[:K])):
            others = np.delete(np.arange(len(hs)), r)
            mx = lambda a: a[others].max() if len(others) else 0.0
            mv = vecs[r] - mx(vecs)
            mh = hybs[r] - mx(hybs)
            mp = pmaxs[r] - mx(pmaxs)
            mc = cens[r] - mx(cens)
            sp = np.sort(pc)[::-1] if len(pc) else np.array([t])
            pm = float(sp[0])
            top2 = float(sp[:2].mean())
            top3 = float(sp[:3].mean())
            sc = scales[i]
            missing = [w for w in qw if w not in dwords[i]]
            unexpl = sum(W[w] for w in missing) / tot if tot else 0.0
            rare_missing = [w for w in missing if df.get(w, 0) <= rare_df]
            unexpl_rare = sum(W[w] for w in rare_missing) / tot if tot else 0.0
            mmi = max([W[w] for w in missing], default=0.0) / math.log1p((N + 0.5) / 0.5)
            knn5 = float(np.mean(nn[:5] == i)) if nn is not None else np.nan
            knn10 = float(np.mean(nn[:10] == i)) if nn is not None else np.nan
            rows.append([
                h["vector"], h["text_coverage"], h["bm25_norm"], h["relevance"], h["hybrid"],
                t, pm, c, top2, top3, npat[i],
                sc[0], sc[1], sc[2], sc[3],
                pm - sc[0], pm / sc[0] if sc[0] == sc[0] else np.nan, c - sc[3], top2 - sc[0],
                mv, mh, mp, mc,
                unexpl, unexpl_rare, mmi, miss_unknown, miss_unknown_share,
                agree, float(r == vtop), float(r == btop),
                knn5, knn10, h["vector"] - med,
                bg, h["vector"] - bg, c - bg, ccs[r], float(Cc[i] @ qc), ccs[r] - mx(ccs), bg_fix, math.log1p(len(qw)), float(mu_s10 @ qv), float(mu_s20 @ qv),
                msp(i, 0.05), msp(i, 0.10), energy05, float(np.mean([v for v in top_all[:6] if v != c][:5])),
            ])
            meta.append((qid, h["id"], r, h["score"], float(h["id"] in right), g["group"]))
    X = np.array(rows, dtype=np.float64)
    qids, dids, rank, score, y, grp = zip(*meta)
    np.savez(f"{DATA}/{name}.feat.{model}.npz", X=X, cols=np.array(COLS), qid=np.array(qids),
             doc=np.array(dids), rank=np.array(rank), score=np.array(score), y=np.array(y),
             grp=np.array(grp))
    print(name, model, X.shape, flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="static")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("sets", nargs="*")
    a = ap.parse_args()
    for s in a.sets or ["clinc", "banking", "metatool", "stb"]:
        build(s, a.model, a.k)
