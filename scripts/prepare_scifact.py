#!/usr/bin/env python3
"""Turn BEIR SciFact (with precomputed MiniLM vectors) into ruche JSONL.

Usage: scripts/prepare_scifact.py [EVAL_DIR] [OUT_DIR]
  EVAL_DIR defaults to ../shared/eval/scifact, OUT_DIR to target/scifact.

Writes OUT_DIR/corpus.jsonl (chunks with `embedding`), OUT_DIR/queries.train.jsonl
(search --batch lines with `embedding`, kind chunks) and OUT_DIR/qrels.train.tsv.
Only the standard library is needed (the .npy files are read directly).
"""
import json
import struct
import sys
from array import array
from pathlib import Path


def read_npy_f32(path):
    """Rows of a little-endian float32 .npy (v1 or v2) file."""
    data = Path(path).read_bytes()
    assert data[:6] == b"\x93NUMPY", f"{path}: not a .npy file"
    major = data[6]
    if major == 1:
        (header_len,) = struct.unpack("<H", data[8:10])
        start = 10 + header_len
    else:
        (header_len,) = struct.unpack("<I", data[8:12])
        start = 12 + header_len
    header = data[10:start].decode("latin1") if major == 1 else data[12:start].decode("latin1")
    assert "'<f4'" in header and "False" in header, f"{path}: expected C-order <f4, got {header}"
    shape = header.split("'shape': (")[1].split(")")[0]
    rows, cols = (int(x) for x in shape.split(",") if x.strip())
    values = array("f")
    values.frombytes(data[start:start + rows * cols * 4])
    if sys.byteorder != "little":
        values.byteswap()
    return [values[i * cols:(i + 1) * cols].tolist() for i in range(rows)]


def main():
    root = Path(__file__).resolve().parent.parent
    eval_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent / "shared" / "eval" / "scifact"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else root / "target" / "scifact"
    out.mkdir(parents=True, exist_ok=True)

    corpus = [json.loads(line) for line in open(eval_dir / "corpus.jsonl")]
    vectors = read_npy_f32(eval_dir / "minilm_corpus.f32.npy")
    assert len(corpus) == len(vectors)
    with open(out / "corpus.jsonl", "w") as f:
        for doc, vector in zip(corpus, vectors):
            content = (doc.get("title", "") + " " + doc["text"]).strip()
            record = {"id": doc["_id"], "content": content, "embedding": [round(x, 7) for x in vector]}
            f.write(json.dumps(record) + "\n")

    queries = [json.loads(line) for line in open(eval_dir / "queries.train.jsonl")]
    qvectors = read_npy_f32(eval_dir / "minilm_queries.train.f32.npy")
    assert len(queries) == len(qvectors)
    with open(out / "queries.train.jsonl", "w") as f:
        for query, vector in zip(queries, qvectors):
            record = {"id": query["_id"], "text": query["text"], "kind": "chunks",
                      "embedding": [round(x, 7) for x in vector]}
            f.write(json.dumps(record) + "\n")

    (out / "qrels.train.tsv").write_text((eval_dir / "qrels" / "train.tsv").read_text())
    print(f"wrote {len(corpus)} documents and {len(queries)} queries to {out}")


if __name__ == "__main__":
    main()
