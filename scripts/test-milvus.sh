#!/usr/bin/env bash
# Tests the Milvus backend (crates/milvus) against milvus-lite on 127.0.0.1.
#
# Creates a venv with milvus-lite 3.2.2 and pymilvus (cached in target/milvus-venv),
# starts the server on a free loopback port, runs the backend's tests against it, and
# stops the server by its pid. Fails if the server does not start, if any test fails,
# or if any is skipped; ends by printing `milvus: N passed`.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${RUCHE_MILVUS_VENV:-target/milvus-venv}"
if [[ ! -x "$venv/bin/milvus-lite" ]]; then
    echo "installing milvus-lite 3.2.2 into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check milvus-lite==3.2.2 pymilvus==3.0.2
fi

# Build first, so that the server does not idle through a compilation. The whole
# workspace, as `cargo test` builds it: selecting one package (`-p`) would unify features
# differently and rebuild tantivy and the rest of the stack.
executables="$(cargo test --workspace --no-run --message-format=json-render-diagnostics | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if "ruchedb-milvus" in m["package_id"] or "crates/milvus" in m["package_id"]:
        print(m["executable"])
')"
if [[ -z "$executables" ]]; then
    echo "milvus: the backend's test executables were not built" >&2
    exit 1
fi
ruche="$PWD/target/debug/ruche"
[[ -x "$ruche" ]] || { echo "milvus: $ruche was not built" >&2; exit 1; }

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$venv/bin/milvus-lite" server --data-dir "$work/data" --host 127.0.0.1 --port "$port" \
    > "$work/server.log" 2>&1 &
pid=$!
stop() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap stop EXIT

ready=0
for _ in $(seq 1 150); do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "milvus-lite exited before accepting connections:" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 0.2
done
if [[ "$ready" != 1 ]]; then
    echo "milvus-lite did not accept connections on 127.0.0.1:$port within 30 s" >&2
    cat "$work/server.log" >&2
    exit 1
fi
echo "milvus-lite (pid $pid) on 127.0.0.1:$port"

export RUCHE_MILVUS_URI="milvus://127.0.0.1:$port"
status=0
: > "$work/test.log"
for executable in $executables; do
    echo "--- $(basename "$executable")"
    "$executable" --nocapture 2>&1 | tee -a "$work/test.log" || status=$?
done
if [[ "$status" != 0 ]]; then
    echo "milvus: tests failed" >&2
    exit "$status"
fi
sum() { grep -E '^test result:' "$work/test.log" | sed -E "s/.* ([0-9]+) $1.*/\1/" | awk '{s += $1} END {print s + 0}'; }
passed=$(sum passed)
ignored=$(sum ignored)
if [[ "$ignored" != 0 ]]; then
    echo "milvus: $ignored test(s) skipped" >&2
    exit 1
fi

# The CLI against the same server: the bundled sample corpus, as the README shows.
at="$RUCHE_MILVUS_URI/cli_sample"
check() { # name, expected exit code, command...
    local name=$1 expected=$2
    shift 2
    local code=0
    "$@" > "$work/out" 2> "$work/err" || code=$?
    if [[ "$code" != "$expected" ]]; then
        echo "cli $name: exit $code, expected $expected" >&2
        cat "$work/out" "$work/err" >&2
        exit 1
    fi
    echo "cli $name ... ok"
    passed=$((passed + 1))
}
check index 0 "$ruche" index "$at" --rules index_data/rules.toml --chunks index_data/chunks.jsonl
check search-rule 0 "$ruche" search "$at" "where is my package, it has not arrived" --json
grep -q '"id":"order-status"\|"id": "order-status"' "$work/out" || {
    echo "cli search-rule: order-status not among the hits" >&2; cat "$work/out" >&2; exit 1; }
check search-code 0 "$ruche" search "$at" --kind chunks "NW-10533" --now 2026-11-21T12:00:00Z --json
python3 -c "import json,sys; h=json.load(open('$work/out'))['hits']; assert h[0]['codes_matched'] == 1, h[0]" || {
    echo "cli search-code: the first hit does not hold NW-10533" >&2; exit 1; }
check out-of-scope 1 "$ruche" search "$at" "what is the weather tomorrow"
check stats 0 "$ruche" stats "$at" --tenant default --json
grep -q '"rules":135' "$work/out" || { echo "cli stats: $(cat "$work/out")" >&2; exit 1; }
check local-only-command 2 "$ruche" compact "$at"
check delete-all 0 "$ruche" delete "$at" --tenant default --all
check stats-after-delete 0 "$ruche" stats "$at" --tenant default --json
grep -q '"rules":0,"chunks":0' "$work/out" || { echo "cli stats: $(cat "$work/out")" >&2; exit 1; }
echo "milvus: $passed passed"
