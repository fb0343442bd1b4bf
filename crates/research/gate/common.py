"""Shared helpers: loading the gathered data, the engine's text analysis (approximated),
the engine's query text for embedding (codes left out), embeddings (cached)."""
import json
import math
import os
import re

import numpy as np
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))


HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
STATIC = REPO + "/crates/minilm/model/minilm-static"


def rj(p):
    return [json.loads(l) for l in open(p) if l.strip()]


def load(name):
    docs = rj(f"{DATA}/{name}.docs.jsonl")
    queries = rj(f"{DATA}/{name}.queries.jsonl")
    gold = json.load(open(f"{DATA}/{name}.gold.json"))
    hits = {h["id"]: h["hits"] for h in rj(f"{DATA}/{name}.hits.jsonl")}
    return docs, queries, gold, hits


def doc_text(d):
    """What the engine embeds as the document's main vector (Document::text)."""
    if "condition" in d:
        return f'{d["condition"]} {d["action"]}'
    return f'{d["name"]} {d["description"]}'


def doc_examples(d):
    return d.get("patterns") or d.get("examples") or []


# ---------------------------------------------------------------- text analysis
LUCENE_STOP = set("a an and are as at be but by for if in into is it no not of on or such that the "
                  "their then there these they this to was will with".split())
FUNCTION_WORDS = set(open(os.path.join(HERE, "stopwords.txt")).read().split())
_stemmer = None


def stem(w):
    global _stemmer
    if _stemmer is None:
        import snowballstemmer
        _stemmer = snowballstemmer.stemmer("english")
    return _stemmer.stemWord(w)


def _word_spans(text):
    """analyzer.rs word_spans: alphanumeric runs split at camelCase boundaries."""
    out = []
    for m in re.finditer(r"[^\W_]+", text):
        w = m.group(0)
        start = 0
        for i in range(1, len(w)):
            c, prev = w[i], w[i - 1]
            nxt = w[i + 1] if i + 1 < len(w) else ""
            lower_to_upper = c.isupper() and (prev.islower() or prev.isnumeric())
            acronym_end = c.isupper() and prev.isupper() and nxt.islower()
            if lower_to_upper or acronym_end:
                out.append(w[start:i])
                start = i
        out.append(w[start:])
    return out


def words(text):
    """Stemmed content tokens (lucene stop words dropped) as the `words` analyzer makes them."""
    return [stem(w.lower()) for w in _word_spans(text) if w.lower() not in LUCENE_STOP and len(w.encode()) <= 64]


def query_words(text):
    """The query's words that coverage counts: function words and code pieces left out,
    de-duplicated, in order."""
    codes = set()
    for w in text.split():
        t = _ident_token(w)
        if t and is_code(t):
            codes.update(words(t))
    seen = []
    for w in _word_spans(text):
        lw = w.lower()
        if lw in LUCENE_STOP or lw in FUNCTION_WORDS or len(lw.encode()) > 64:
            continue
        s = stem(lw)
        if s in codes or s in seen:
            continue
        seen.append(s)
    return seen


# ---------------------------------------------------------------- codes (rank.rs text_to_embed)
def _is_plain_word(w):
    return all(c.isascii() and c.isalpha() for c in w) and not re.search(r"[a-z][A-Z]", w)


def _is_identifier(w):
    has_alpha = any(c.isalpha() for c in w)
    has_digit = any(c.isdigit() for c in w)
    joiner = any(c in "_/\\.:-@#$~" for c in w)
    camel = re.search(r"[a-z][A-Z]", w) is not None
    long_number = len(w) >= 5 and w.isdigit()
    return (has_alpha and has_digit) or long_number or (joiner and sum(c.isalnum() for c in w) >= 2) or camel


def _ident_token(word):
    if _is_plain_word(word):
        return None
    t = word.strip("".join(c for c in set(word) if not (c.isalnum() or c in "_/\\@#$~")))
    if not t or not _is_identifier(t) or len(t.encode()) > 64:
        return None
    return t.lower()


def is_code(t):
    if len(t) < 4 or sum(c.isdigit() for c in t) < 2:
        return False
    m = re.match(r"\d*", t)
    digits = len(m.group(0))
    rest = t[digits:]
    quantity = digits > 0 and 1 <= len(rest) <= 2 and rest.isalpha()
    return not quantity


def text_to_embed(text):
    kept, dropped = [], False
    for w in text.split():
        t = _ident_token(w)
        code = t is not None and is_code(t)
        dropped |= code
        if not code:
            kept.append(w)
    k = " ".join(kept)
    if dropped and any(c.isalnum() for c in k):
        return k
    return text


# ---------------------------------------------------------------- embeddings
_models = {}


def static_model():
    if "static" not in _models:
        from model2vec import StaticModel
        _models["static"] = StaticModel.from_pretrained(STATIC)
    return _models["static"]


def encode(texts, model="static"):
    if model == "static":
        v = static_model().encode(list(texts))
    elif model == "minilm":
        v = minilm_encode(list(texts))
    else:
        raise ValueError(model)
    v = np.asarray(v, dtype=np.float32)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1
    return v / n


MINILM_DIR = os.path.join(HERE, "models", "all-MiniLM-L6-v2")


def minilm_encode(texts):
    """all-MiniLM-L6-v2 (numpy implementation, minilm_np.py; exact to sentence-transformers)."""
    import minilm_np
    return minilm_np.encode(texts)


def embeddings(name, model="static"):
    """Cached: query vectors (text_to_embed), doc text vectors, example vectors (list per doc)."""
    path = f"{DATA}/{name}.emb.{model}.npz"
    docs, queries, gold, hits = load(name)
    if os.path.exists(path):
        z = np.load(path)
        Q, T, P, off = z["Q"], z["T"], z["P"], z["off"]
    else:
        Q = encode([text_to_embed(q["text"]) for q in queries], model)
        T = encode([doc_text(d) for d in docs], model)
        allp = [p for d in docs for p in doc_examples(d)]
        P = encode(allp, model) if allp else np.zeros((0, Q.shape[1]), np.float32)
        off = np.cumsum([0] + [len(doc_examples(d)) for d in docs])
        np.savez(path, Q=Q, T=T, P=P, off=off)
    qidx = {q["id"]: i for i, q in enumerate(queries)}
    didx = {d["id"]: i for i, d in enumerate(docs)}
    return Q, T, P, off, qidx, didx


def idf_table(docs, patterns_in_text=True):
    """The engine's idf (BM25's, over the indexed text) of every stemmed word."""
    df = {}
    for d in docs:
        txt = doc_text(d) + (" " + " ".join(doc_examples(d)) if patterns_in_text else "")
        for w in set(words(txt)):
            df[w] = df.get(w, 0) + 1
    n = len(docs)
    return df, n, (lambda w: math.log1p((n - df.get(w, 0) + 0.5) / (df.get(w, 0) + 0.5)))


def sigmoid(z):
    return 1 / (1 + np.exp(-z))
