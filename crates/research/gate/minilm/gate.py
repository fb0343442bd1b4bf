"""Loading the engine's candidate dumps into arrays, computing the per-candidate features the
engine has (or could compute per query from its candidates), simulating a gate, scoring.

A set S: rows = every candidate of every query (the engine's score order, gate off, default
candidate pool), columns:
  cen   cosine of the query and the document's centroid (normalised mean of its normalised
        text and example vectors; the text vector alone for a document without examples)
  cov   the engine's text_coverage      vec  the engine's vector (max(0, best cosine))
  bg    the engine's background (gate.background; query . shrunk catalog mean)
  rel   the engine's relevance (today's gate)        y   candidate is a right answer
  pmax  best example cosine (or the text's)          tcos  cosine with the text vector
  ex    document has examples (BackgroundCalibration applies)
Derived per query from the candidates (what the engine has at rank time):
  cen_gap   cen - best cen among the *other* candidates (margin, + for the best)
  cen_rank  rank of the candidate by cen among the candidates (0 = best)
"""
import json, os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MIX = {
    "clinc": {"in": 4500, "oos": 1000},
    "clinc_dup": {"in": 4500, "oos": 1000},
    "scen": {"in": 4500, "oos": 1000},
    "scenfit": {"in": 4500, "oos": 1000},
    "banking": {"in": 2000, "id-oos": 1080, "ood-oos": 1000},
    "metatool": {"in": 239, "none": 281},
    "bank77": {"in": 1},
    "clinc_np": {"in": 4500, "oos": 1000},
    "banking_np": {"in": 2000, "id-oos": 1080, "ood-oos": 1000},
    "metatool_np": {"in": 239, "none": 281},
    "bank77_np": {"in": 1},
}


def rj(p):
    return [json.loads(l) for l in open(p) if l.strip()]


def sig(z):
    return 1 / (1 + np.exp(-z))


class S:
    def __init__(self, name, dump="dump"):
        d = f"{HERE}/data/{name}"
        self.name = name
        g = json.load(open(f"{d}/gold.json"))
        self.kind, gold = g["kind"], g["gold"]
        docs = rj(f"{d}/docs.jsonl")
        qs = rj(f"{d}/queries.jsonl")
        exk = "pattern_embeddings" if self.kind == "rules" else "example_embeddings"
        self.didx = {x["id"]: i for i, x in enumerate(docs)}
        self.dids = [x["id"] for x in docs]
        T = np.array([x["embedding"] for x in docs], np.float32)
        T /= np.linalg.norm(T, axis=1, keepdims=True)
        C, P, off, nex = [], [], [0], []
        for i, x in enumerate(docs):
            E = np.array(x.get(exk) or np.zeros((0, T.shape[1])), np.float32)
            if len(E):
                E /= np.linalg.norm(E, axis=1, keepdims=True)
            M = np.vstack([T[i:i + 1], E])
            c = M.mean(0)
            C.append(c / np.linalg.norm(c))
            P.append(E); off.append(off[-1] + len(E)); nex.append(len(E))
        self.T, self.C, self.nex = T, np.array(C), np.array(nex)
        self.P = np.vstack(P) if off[-1] else np.zeros((0, T.shape[1]), np.float32)
        self.off = np.array(off)
        self.qids = [q["id"] for q in qs]
        self.Q = np.array([q["embedding"] for q in qs], np.float32)
        self.qtext = [q["text"] for q in qs]
        self.qgrp = np.array([gold[q]["group"] for q in self.qids])
        self.labels = [set(gold[q]["labels"]) for q in self.qids]
        self.gold = gold
        self.base = name
        qpos = {q: i for i, q in enumerate(self.qids)}
        rows = []
        bg = np.zeros(len(qs))
        for o in rj(f"{d}/{dump}.jsonl"):
            qi = qpos[o["id"]]
            bg[qi] = (o.get("gate") or {}).get("background") or np.nan
            for r, h in enumerate(o["hits"]):
                rows.append((qi, r, self.didx[h["id"]], h["vector"] or 0.0, h["text_coverage"], h["relevance"],
                             h["hybrid"], h["score"], h["bm25_norm"] or 0.0, float(h["id"] in self.labels[qi]), float(h.get("codes_matched") or 0), h["bm25"] or 0.0))
        A = np.array(rows, dtype=np.float64)
        self.qi = A[:, 0].astype(int); self.rank = A[:, 1].astype(int); self.di = A[:, 2].astype(int)
        self.vec, self.cov, self.rel, self.hyb, self.score, self.bm = A[:, 3], A[:, 4], A[:, 5], A[:, 6], A[:, 7], A[:, 8]
        self.y = A[:, 9]
        self.bm25 = A[:, 11]
        self.code = A[:, 10] > 0  # holds a code of the query: passes whatever its relevance
        # the background the engine computes (reported only when the background calibration
        # applied): query . (sum of centroids + 10 prior) / (n + 10)
        prior = np.load(f"{HERE}/data/mu_prior_minilm.npy")
        mu = (self.C.astype(np.float64).sum(0) + 10 * prior) / (len(docs) + 10)
        bg_py = self.Q.astype(np.float64) @ mu
        self.bg_check = np.nanmax(np.abs(bg_py - bg)) if np.isfinite(bg).any() else None
        bg = np.where(np.isfinite(bg), bg, bg_py)
        self.bg = bg[self.qi]
        self.bgq = bg
        self.cen = np.einsum("ij,ij->i", self.Q[self.qi], self.C[self.di]).astype(np.float64)
        self.tcos = np.einsum("ij,ij->i", self.Q[self.qi], self.T[self.di]).astype(np.float64)
        self.ex = self.nex[self.di] > 0
        # queries whose text leg did not run (no searchable word): the engine used the
        # vector-only calibration; recognised by which of today's two formulas gives its relevance
        zb = -5.6107 + 12.4699 * self.cen + 1.3509 * self.cov - 11.5081 * self.bg
        zv = -5.7428 + 13.6647 * self.cen - 11.4218 * self.bg
        vo_row = self.ex & (np.abs(sig(zv) - self.rel) < np.abs(sig(zb) - self.rel) - 1e-9)
        vq = np.zeros(len(qs), bool); vq[self.qi[vo_row]] = True
        self.vonly = vq[self.qi]
        pm = self.tcos.copy()
        for k in np.nonzero(self.ex)[0]:
            i = self.di[k]
            pm[k] = float((self.P[self.off[i]:self.off[i + 1]] @ self.Q[self.qi[k]]).max())
        self.pmax = pm
        # per-query derived features over the candidates
        self.cen_gap = np.zeros(len(A)); self.cen_rank = np.zeros(len(A))
        self.vgap2 = np.zeros(len(A)); self.vgap3 = np.zeros(len(A)); self.btop = np.zeros(len(A)); self.vec_gap = np.zeros(len(A)); self.pmax_gap = np.zeros(len(A)); self.soft05 = np.zeros(len(A)); self.cen_loc = np.zeros(len(A))
        starts = np.r_[0, np.nonzero(np.diff(self.qi))[0] + 1, len(A)]
        self.starts = starts
        for a, b in zip(starts[:-1], starts[1:]):
            c = self.cen[a:b]
            o = np.argsort(-c)
            rk = np.empty(len(c)); rk[o] = np.arange(len(c))
            self.cen_rank[a:b] = rk
            best, second = c[o[0]], (c[o[1]] if len(c) > 1 else -1.0)
            self.cen_gap[a:b] = np.where(np.arange(len(c)) == o[0], c - second, c - best)
            p_ = self.pmax[a:b]; op = np.sort(p_)[::-1]
            self.pmax_gap[a:b] = np.where(p_ >= op[0], p_ - (op[1] if len(p_) > 1 else 0), p_ - op[0])
            e = np.exp((c - c.max()) / 0.05); self.soft05[a:b] = e / e.sum()
            top5 = np.sort(c)[::-1][:6]
            self.cen_loc[a:b] = c - np.array([np.mean([x for x in top5 if x != ci][:5]) for ci in c])
            bb = self.bm25[a:b]
            self.btop[a:b] = (bb >= bb.max()) & (bb.max() > 0)
            v = self.vec[a:b]; ov = np.sort(v)[::-1]
            for kk in (2, 3):
                # the k-th best vector among the *other* candidates
                ref = np.where(v >= ov[kk - 1], ov[kk] if len(v) > kk else 0.0, ov[kk - 1])
                getattr(self, f"vgap{kk}")[a:b] = v - ref
            self.vec_gap[a:b] = np.where(v >= ov[0], v - (ov[1] if len(v) > 1 else 0), v - ov[0])
        self.nq = len(qs)

    # ---- simulation: the answer is the first passing candidate (engine score order)
    def first(self, passed):
        passed = passed | self.code
        out = np.full(self.nq, -1)
        idx = np.nonzero(passed)[0]
        q = self.qi[idx]
        _, f = np.unique(q, return_index=True)
        out[q[f]] = idx[f]
        return out

    def metrics(self, passed):
        f = self.first(passed)
        ans = f >= 0
        right = np.zeros(self.nq, bool)
        right[ans] = self.y[f[ans]] > 0
        g = self.qgrp
        m = {}
        ins = g == "in"
        m["in_right"] = right[ins].mean()
        m["in_refused"] = (~ans[ins]).mean()
        m["in_wrong"] = (ans[ins] & ~right[ins]).mean()
        mix = MIX[self.base]
        others = [k for k in mix if k != "in"]
        for k in others:
            m[f"{k}_refused"] = (~ans[g == k]).mean()
        m["acc"] = (mix["in"] * m["in_right"] + sum(mix[k] * m[f"{k}_refused"] for k in others)) / sum(mix.values())
        m["n"] = {k: int((g == k).sum()) for k in mix}
        return m

    def gate_off_top1(self):
        return self.metrics(np.ones(len(self.y), bool))["in_right"]


def fmt(m, keys=None):
    return " ".join(f"{k}={v:.3f}" for k, v in m.items() if not isinstance(v, dict) and (keys is None or k in keys))
