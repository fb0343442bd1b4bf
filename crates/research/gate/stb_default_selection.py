"""StableToolBench: what the default selection returns today and the recall of that set
(static and MiniLM vectors)."""
import json, numpy as np
from common import rj
gold = json.load(open("data/stb.gold.json"))
for n in ["stb", "stb_mx"]:
    d = {o["id"]: o["hits"] for o in rj(f"data/{n}.default.jsonl")}
    print(n, "today's default selection: returned", np.mean([len(v) for v in d.values()]).round(2), "recall", np.mean([len(set(gold[q]["labels"]) & set(v)) / len(gold[q]["labels"]) for q, v in d.items()]).round(3))
