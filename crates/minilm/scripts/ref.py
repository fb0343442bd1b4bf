"""Reference vectors for the sample texts.

- sentence-transformers (PyTorch, float32) = the true reference, if installed;
- numpy float64 forward (common.forward) as a cross-check.
Writes out/sample_ids.json, out/ref_st.npy, out/ref_np64.npy.
"""
import json
import os
import sys

import numpy as np

import common
import texts


def main():
    sample = texts.sample_texts()
    ids = common.token_ids(sample)
    lens = [len(t) for t in ids]
    print(f"{len(sample)} texts, tokens min {min(lens)} median {int(np.median(lens))} "
          f"max {max(lens)} ({sum(l == 256 for l in lens)} truncated at 256)")
    json.dump({"texts": sample, "ids": ids}, open(os.path.join(common.OUT, "sample_ids.json"), "w"))

    w = common.weights()
    p64 = common.prepare(w, common.Variant("f64", dtype=np.float64))
    np64 = common.forward_batched(ids, p64, dtype=np.float64)
    np.save(os.path.join(common.OUT, "ref_np64.npy"), np64)

    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        print("sentence-transformers unavailable:", e, file=sys.stderr)
        return
    torch.set_num_threads(2)
    model = SentenceTransformer(common.MODEL_DIR, device="cpu")
    print("sentence-transformers", model.max_seq_length, "max tokens;", model)
    st_ids = [model.tokenizer(t, truncation=True, max_length=model.max_seq_length)["input_ids"]
              for t in sample]
    bad = [i for i, (a, b) in enumerate(zip(ids, st_ids)) if list(a) != list(b)]
    print(f"token ids differing between tokenizer.json and sentence-transformers: {len(bad)}",
          [sample[i][:40] for i in bad[:5]])
    st = model.encode(sample, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    np.save(os.path.join(common.OUT, "ref_st.npy"), st.astype(np.float32))
    cos = (st * np64).sum(1)
    print(f"cos(numpy f64, sentence-transformers): min {cos.min():.7f} mean {cos.mean():.7f}")

    # The SciFact query vectors shipped in the eval folder, as a third check.
    qs = [json.loads(l)["text"] for l in open(texts.EVAL + "/scifact/queries.train.jsonl")][:100]
    shipped = np.load(texts.EVAL + "/scifact/minilm_queries.train.f32.npy")[:100]
    mine = model.encode(qs, normalize_embeddings=True)
    c = (mine * shipped).sum(1)
    print(f"cos(sentence-transformers here, shipped SciFact vectors): min {c.min():.7f}")


if __name__ == "__main__":
    main()
