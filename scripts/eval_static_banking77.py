#!/usr/bin/env python3
"""Measures static embedding models on BANKING77 used as rule matching.

Usage:
    python scripts/eval_static_banking77.py MODEL_DIR [MODEL_DIR ...] [--teacher DIR]

Reads `../shared/eval/banking77/` beside the repository (or $BANKING77_DIR). Each
MODEL_DIR is a model2vec model folder (model.safetensors, tokenizer.json,
config.json), loaded with `model2vec.StaticModel.from_pretrained`. `--teacher DIR` also
measures a sentence-transformers folder (the full all-MiniLM-L6-v2) for reference.

Setup (the one of issue 7):
- 77 rules, one per intent of `categories.json`. A rule's text is its intent name in
  words (`card_arrival` -> `card arrival`).
- Split of `train.csv` (10,003 messages), fixed and deterministic: for each intent, its
  first 10 messages in file order are the rule's example patterns (770 in all); every
  other message is held out (9,233). The "sample" column uses a fixed sample of 3,000
  held-out messages (`random.Random(77).sample`, then sorted back into file order).
- Zero-shot: a rule's score is the cosine between the message and the rule text.
  With patterns: a rule's score is the maximum cosine over its text and its 10 patterns.
- Metrics: top-1 accuracy and MRR@10 (ties go to the rule that comes first in
  `categories.json`).

Prints a Markdown table. Importable: `evaluate(encode)` takes a function that maps a
list of texts to an (n, d) array of L2-normalised rows.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

# `../shared/eval/banking77` next to the repository, or $BANKING77_DIR.
EVAL_DIR = Path(
    os.environ.get("BANKING77_DIR", Path(__file__).resolve().parents[2] / "shared/eval/banking77")
)
N_PATTERNS = 10
SAMPLE_SIZE = 3000
SAMPLE_SEED = 77

Encode = Callable[[Sequence[str]], np.ndarray]


def load_split(eval_dir: Path = EVAL_DIR):
    """Returns (intents, rule_texts, patterns[intent_idx] -> [text], held_out [(text, intent_idx)])."""
    intents = json.loads((eval_dir / "categories.json").read_text())
    intent_idx = {name: idx for idx, name in enumerate(intents)}
    rule_texts = [name.replace("_", " ") for name in intents]
    patterns: list[list[str]] = [[] for _ in intents]
    held_out: list[tuple[str, int]] = []
    with open(eval_dir / "train.csv", newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            idx = intent_idx[row["category"]]
            if len(patterns[idx]) < N_PATTERNS:
                patterns[idx].append(row["text"])
            else:
                held_out.append((row["text"], idx))
    assert all(len(p) == N_PATTERNS for p in patterns), "an intent has fewer than 10 messages"
    return intents, rule_texts, patterns, held_out


def sample_positions(n_held_out: int) -> list[int]:
    """The fixed sample of held-out positions (sorted)."""
    return sorted(random.Random(SAMPLE_SEED).sample(range(n_held_out), SAMPLE_SIZE))


def _metrics(rule_scores: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """Top-1 accuracy and MRR@10 of a (n_messages, n_rules) score matrix."""
    gold_scores = rule_scores[np.arange(len(gold)), gold]
    n_rules = rule_scores.shape[1]
    rule_order = np.arange(n_rules)
    # Rank = rules with a higher score, plus rules with the same score that come first.
    higher = (rule_scores > gold_scores[:, None]).sum(axis=1)
    tied_before = ((rule_scores == gold_scores[:, None]) & (rule_order[None, :] < gold[:, None])).sum(axis=1)
    rank = higher + tied_before + 1
    top1 = float(np.mean(rank == 1))
    mrr10 = float(np.mean(np.where(rank <= 10, 1.0 / rank, 0.0)))
    return top1, mrr10


def evaluate(encode: Encode, eval_dir: Path = EVAL_DIR) -> dict[str, float]:
    """Top-1 and MRR@10, zero-shot and with patterns, on all held-out messages and the sample."""
    _, rule_texts, patterns, held_out = load_split(eval_dir)
    n_rules = len(rule_texts)
    rule_vecs = encode(rule_texts)
    pattern_vecs = encode([text for rule in patterns for text in rule]).reshape(n_rules, N_PATTERNS, -1)
    message_vecs = encode([text for text, _ in held_out])
    gold = np.array([idx for _, idx in held_out])

    zero_shot = message_vecs @ rule_vecs.T
    by_pattern = np.einsum("md,rpd->mrp", message_vecs, pattern_vecs).max(axis=2)
    with_patterns = np.maximum(zero_shot, by_pattern)

    sample = np.array(sample_positions(len(held_out)))
    results: dict[str, float] = {}
    for name, scores in (("zero_shot", zero_shot), ("patterns", with_patterns)):
        results[f"{name}_top1"], results[f"{name}_mrr10"] = _metrics(scores, gold)
        results[f"{name}_top1_sample"], results[f"{name}_mrr10_sample"] = _metrics(scores[sample], gold[sample])
    return results


def static_encoder(model_dir: Path) -> Encode:
    """The encode function of a model2vec folder."""
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(model_dir))

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), use_multiprocessing=False), dtype=np.float32)

    return encode


def teacher_encoder(model_dir: Path) -> Encode:
    """The encode function of a sentence-transformers folder (the full transformer)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, normalize_embeddings=True), dtype=np.float32)

    return encode


TABLE_HEADER = (
    "| model | size | zero-shot top-1 | with patterns top-1 | zero-shot MRR@10 | with patterns MRR@10 "
    "| zero-shot top-1 (sample) | with patterns top-1 (sample) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|"
)


def table_row(name: str, size: str, r: dict[str, float]) -> str:
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return (
        f"| {name} | {size} | {pct(r['zero_shot_top1'])} | {pct(r['patterns_top1'])} "
        f"| {r['zero_shot_mrr10']:.3f} | {r['patterns_mrr10']:.3f} "
        f"| {pct(r['zero_shot_top1_sample'])} | {pct(r['patterns_top1_sample'])} |"
    )


def folder_size(model_dir: Path) -> int:
    return sum(f.stat().st_size for f in Path(model_dir).iterdir() if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", type=Path, help="model2vec model folders")
    parser.add_argument("--teacher", type=Path, help="a sentence-transformers folder to measure as well")
    args = parser.parse_args()

    _, _, _, held_out = load_split()
    print(f"held out: {len(held_out)} messages, sample: {SAMPLE_SIZE}, patterns: {N_PATTERNS} per rule\n")
    print(TABLE_HEADER)
    for model_dir in args.models:
        size = f"{folder_size(model_dir) / 1e6:.2f} MB"
        print(table_row(model_dir.name, size, evaluate(static_encoder(model_dir))), flush=True)
    if args.teacher:
        print(table_row("all-MiniLM-L6-v2 (teacher)", "-", evaluate(teacher_encoder(args.teacher))), flush=True)


if __name__ == "__main__":
    main()
