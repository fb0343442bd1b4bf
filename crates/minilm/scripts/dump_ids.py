"""Writes token ids (and expected vectors) for the Rust test and benchmark.

  testdata/ref50.bin   50 of the 300 parity texts: ids, sentence-transformers vectors and
                       the numpy simulation of the Rust numerics (py/quant.py, "(d)+A16").
  scripts/out/bench_ids.bin the 20-word query, then 2,000 synthetic tool descriptions.

Id file format (little-endian): b"MLMIDS01", u32 count, u32 dim (0 if no vectors), then per
sentence u32 length + ids; then `count * dim` f32 reference vectors and `count * dim` f32
simulated vectors (when dim > 0).
Run ref.py and quant.py first.
"""
import json
import os
import struct

import numpy as np

import common
import texts

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, ids, vectors=()):
    dim = vectors[0].shape[1] if vectors else 0
    with open(path, "wb") as f:
        f.write(b"MLMIDS01" + struct.pack("<II", len(ids), dim))
        for t in ids:
            f.write(struct.pack("<I", len(t)) + np.asarray(t, "<u4").tobytes())
        for v in vectors:
            f.write(np.ascontiguousarray(v, "<f4").tobytes())
    print(f"{path}: {len(ids)} sentences, {os.path.getsize(path):,} bytes")


def main():
    sample = json.load(open(os.path.join(common.OUT, "sample_ids.json")))
    ref = np.load(os.path.join(common.OUT, "ref_st.npy"))
    sim = np.load(os.path.join(common.OUT, "sim_a16.npy"))
    pick = list(range(0, 300, 6))
    ids = [sample["ids"][i] for i in pick]
    os.makedirs(os.path.join(HERE, "..", "testdata"), exist_ok=True)
    write(os.path.join(HERE, "..", "testdata", "ref50.bin"), ids, (ref[pick], sim[pick]))
    cos = (ref[pick] * sim[pick]).sum(1)
    print(f"  simulation vs reference on these 50: min {cos.min():.5f} mean {cos.mean():.6f}")

    query = common.token_ids([texts.QUERY_20_WORDS])[0]
    tools = common.token_ids(texts.tool_descriptions())
    lens = [len(t) for t in tools]
    print(f"query: {len(texts.QUERY_20_WORDS.split())} words, {len(query)} tokens; tool descriptions: "
          f"{len(tools)}, tokens min {min(lens)} mean {np.mean(lens):.1f} max {max(lens)}")
    write(os.path.join(common.OUT, "bench_ids.bin"), [query] + tools)


if __name__ == "__main__":
    main()
