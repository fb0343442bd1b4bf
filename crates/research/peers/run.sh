#!/usr/bin/env bash
# ruche against Qdrant Edge and LanceDB on the same data, interleaved (see bench.py).
#
#   crates/research/peers/run.sh                      # SciFact, synthetic 10,000 and 100,000 (long)
#   crates/research/peers/run.sh --docs 2000          # every set at 2,000 documents (CI)
#   crates/research/peers/run.sh --ruche PATH ...     # another ruche binary (default: a release build)
#   crates/research/peers/run.sh --ruche-before PATH  # and an earlier build in the same rounds
#
# The venv (target/peers-venv) gets the pinned peers of requirements.txt from PyPI.
set -euo pipefail
cd "$(dirname "$0")/../../.."
venv=target/peers-venv
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import qdrant_edge, lancedb" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r crates/research/peers/requirements.txt
fi
ruche=""
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --ruche) ruche="$2"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
if [[ -z "$ruche" ]]; then
    cargo build --release --quiet -p ruchedb-cli
    ruche=target/release/ruche
fi
exec "$venv/bin/python" crates/research/peers/bench.py --ruche "$ruche" "${args[@]}"
