#!/usr/bin/env bash
# Refreshes docs/inspector.png, the README's picture of `ruche inspect`: the sample
# index, one message in the playground, headless Chromium (Debian's `chromium`;
# `pngquant`, when installed, makes the file smaller).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p ruchedb-cli
ruche="$PWD/target/debug/ruche"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$ruche" -q index "$work/idx" --rules index_data/rules.toml --chunks index_data/chunks.jsonl \
    --scenarios index_data/scenarios.toml --tools index_data/tools.toml > /dev/null
(cd "$work" && exec "$ruche" -q inspect idx > url) &
pid=$!
until [[ -s "$work/url" ]]; do sleep 0.1; done
url="$(sed 's/^ruche inspect: //' "$work/url")"
chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$work/profile" --window-size=1280,1000 \
    --screenshot="$work/shot.png" "${url}?q=where+is+my+package%2C+it+has+not+arrived&kind=rules" \
    2> /dev/null
if command -v pngquant > /dev/null; then
    pngquant --force --output docs/inspector.png "$work/shot.png"
else
    cp "$work/shot.png" docs/inspector.png
fi
ls -l docs/inspector.png
