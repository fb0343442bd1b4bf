"""Simulating a per-candidate gate on the gathered candidates and scoring it as quality.py
does (first passing candidate in the engine's order), with the realistic mixes.

Mixes (how valid/dev groups are weighted in `acc`):
- clinc: in-scope 4500 : out-of-scope 1000 (quality.py's 1:4.5).
- banking: the held-out test mix, in 2000 : id-oos 1080 : ood-oos 1000 (valid has
  1506 : 530 : 200), i.e. acc = (2000 in_right + 1080 id_refused + 1000 ood_refused) / 4080.
- metatool: as is (239 need a tool : 281 none).
"""
import json

import numpy as np

from common import DATA, load

MIX = {
    "clinc": {"in": 4500, "oos": 1000},
    "banking": {"in": 2000, "id-oos": 1080, "ood-oos": 1000},
    "metatool": {"in": 239, "none": 281},
}


class Set:
    def __init__(self, name, model="static"):
        z = np.load(f"{DATA}/{name}.feat.{model}.npz")
        self.name = name
        self.base = name.split("_")[0]
        self.cols = list(z["cols"])
        self.X = z["X"]
        self.qid = z["qid"]
        self.doc = z["doc"]
        self.rank = z["rank"]
        self.y = z["y"]
        self.grp = z["grp"]
        self.gold = json.load(open(f"{DATA}/{name}.gold.json"))
        self.qlist = list(self.gold)
        qpos = {q: i for i, q in enumerate(self.qlist)}
        self.qi = np.array([qpos[q] for q in self.qid])
        self.qgrp = np.array([self.gold[q]["group"] for q in self.qlist])
        # rows are grouped per query, in rank order
        self.top = self.rank == 0

    def f(self, name):
        return self.X[:, self.cols.index(name)]

    def first(self, passed):
        """index of the first passing row per query (-1: none)."""
        out = np.full(len(self.qlist), -1)
        idx = np.nonzero(passed)[0]
        # rows are in query order then rank order: first occurrence per query
        qi = self.qi[idx]
        _, firsts = np.unique(qi, return_index=True)
        out[qi[firsts]] = idx[firsts]
        return out

    def metrics(self, passed):
        f = self.first(passed)
        answered = f >= 0
        right = np.zeros(len(f), bool)
        right[answered] = self.y[f[answered]] > 0
        m = {}
        g = self.qgrp
        if self.base == "stb":
            return {"answered": answered.mean()}
        ins = g == "in"
        m["in_right"] = right[ins].mean()
        m["in_none"] = (~answered[ins]).mean()
        groups = [k for k in MIX[self.base] if k != "in"]
        for k in groups:
            m[f"{k}_refused"] = (~answered[g == k]).mean()
        mix = MIX[self.base]
        m["acc"] = (mix["in"] * m["in_right"] + sum(mix[k] * m[f"{k}_refused"] for k in groups)) / sum(mix.values())
        if self.base == "banking":
            m["acc_valid_unweighted"] = (right[ins].sum() + (~answered[~ins]).sum()) / len(g)
        if self.name == "clinc":
            pass
        return m


def fmt(m):
    return " ".join(f"{k}={v:.3f}" for k, v in m.items())
