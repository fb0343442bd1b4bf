#!/usr/bin/env bash
# Reruns everything (2 cores: ~40 min, most of it MiniLM embeddings on first run, cached after).
set -euo pipefail
cd "$(dirname "$0")"
PY=./venv/bin/python
# 0. python3 -m venv venv && venv/bin/pip install numpy scipy safetensors tokenizers scikit-learn snowballstemmer
#    cp /work/main/target/release/ruche ./ruche  (only this copy is used)
#    model: /work/models/all-MiniLM-L6-v2 (scripts/fetch_bert_model.sh)
PYTHONPATH=.. $PY -c "import minilm_np; minilm_np.check(200)"          # numpy MiniLM == sentence-transformers (SciFact vectors)
$PY mu_prior_from_rust.py                                 # prior::MINILM, to recompute the engine's background
HO="clinc_ho0 clinc_ho1 clinc_ho2 clinc_ho3 clinc_ho4 metatool_ho0 metatool_ho1 metatool_ho2 metatool_ho3 metatool_ho4"
NP="clinc_np banking_np bank77_np metatool_np clinc_np_ho0 clinc_np_ho1 clinc_np_ho2 clinc_np_ho3 clinc_np_ho4 metatool_np_ho0 metatool_np_ho1 metatool_np_ho2 metatool_np_ho3 metatool_np_ho4"
SETS="clinc banking bank77 metatool stb stbmulti scen clinc_dup scenfit0 scenfit1 scenfit2 scenfit3 scenfit4 $HO $NP"
$PY sets.py $SETS                                        # records and queries with MiniLM vectors
$PY run_engine.py $SETS                                  # engine: candidate dumps (gate off) + default answers
$PY check_sim.py clinc banking bank77 metatool           # Python reproduces the engine's relevance and first hits
$PY baseline.py clinc banking bank77 metatool scen       # today's gate through the engine
$PY final_tables.py                                      # RESULTS.md: before / after LOSO, operating points
$PY feature_table.py                                     # + added features, twin stress test
{ $PY roc_ceiling.py; $PY scen_fit.py; $PY noho.py; $PY noho_np.py; $PY tools_nopat.py; } >> RESULTS.md
$PY run_engine.py --config scen_engine.toml --tag scenfit scen   # the scenario calibration through the engine
for n in stb stbmulti; do ./ruche search tmp/idx_$n --batch data/$n/queries.jsonl --json --explain --min-relevance 0 --top-k 30 --kind tools \
  | $PY -c "import sys,json; from run_engine import slim; [print(json.dumps(slim(l))) for l in sys.stdin if l.strip()]" > data/$n/dump30.jsonl; done
$PY split_parts.py stb stbmulti                          # clause-level searches for the multi-intent proposal
{ $PY tools_eval.py; $PY tools_select.py; $PY tools_multi.py; $PY tools_partcover.py; } >> RESULTS.md
$PY compare.py "cen cov bg" "cen cov bg vgap btop" "cen cov bg btop"   # paired bootstrap, LOSO
$PY dup_check.py data/coefs.cen_cov_bg.json                            # (after coefs.py "cen cov bg")
$PY constrained.py                                       # with id-oos held at today's level: no slack
