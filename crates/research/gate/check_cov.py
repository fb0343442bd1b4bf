"""Agreement of the Python coverage (stemmer, stop words, idf) with the engine's text_coverage."""
import numpy as np
from common import *
for name in ["banking", "clinc", "metatool", "stb"]:
    docs, queries, gold, hits = load(name)
    df, n, idf = idf_table(docs)
    dw = {d["id"]: set(words(doc_text(d) + " " + " ".join(doc_examples(d)))) for d in docs}
    qt = {q["id"]: q["text"] for q in queries}
    diffs = []; bad = []
    for qid, hs in hits.items():
        qw = query_words(qt[qid])
        W = np.array([idf(w) for w in qw]); tot = W.sum()
        for h in hs[:10]:
            c = sum(idf(w) for w in qw if w in dw[h["id"]]) / tot if tot > 0 else 0
            diffs.append(c - h["text_coverage"])
            if abs(diffs[-1]) > 1e-3 and len(bad) < 3: bad.append((qt[qid][:120], qw, h["id"], c, h["text_coverage"]))
    d = np.abs(diffs)
    print(f"{name:9} max|diff| {d.max():.3f} mean {d.mean():.2e} share>1e-3 {(d>1e-3).mean():.4f}")
    for b in bad: print("    ", b)
