#!/usr/bin/env bash
# Runs every test of the suite RUNS times in a row (default 5) while stress-ng
# keeps every core busy beside it: a test that waits for an order of events
# instead of the event fails here long before it fails in CI. Builds first (not
# timed), then prints one line per run and exits non-zero if any run failed.
#
#   scripts/stress-suite.sh [RUNS]      (needs stress-ng: apt-get install stress-ng)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/python-env.sh
. scripts/python-env.sh
export STERA_REQUIRE_ENGINES=1 STERA_REQUIRE_ORACLE=1 STERA_REQUIRE_BROWSER=1 STERA_REQUIRE_PROMETHEUS=1
export PATH="$PATH:/usr/games" CARGO_INCREMENTAL=0
runs=${1:-5}
command -v stress-ng >/dev/null || { echo "stress-ng is needed (apt-get install stress-ng)" >&2; exit 2; }

cargo nextest run --workspace --locked --no-fail-fast --no-tests=pass -E 'none()' >/dev/null

stress-ng --cpu "$(nproc)" --timeout 0 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null' EXIT
failed=0
logs=$(mktemp -d)
for run in $(seq 1 "$runs"); do
    start=$(date +%s)
    if cargo nextest run --workspace --locked --no-fail-fast >"$logs/run-$run.log" 2>&1 &&
        cargo test --workspace --locked --doc >>"$logs/run-$run.log" 2>&1; then
        verdict=passed
    else
        verdict=FAILED
        failed=$((failed + 1))
    fi
    summary=$(grep -E '^ +Summary' "$logs/run-$run.log" | tail -1 | sed 's/^ *//')
    echo "run $run/$runs: $verdict in $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg): $summary"
    [ "$verdict" = passed ] || grep -E '^ +(FAIL|TIMEOUT|SIGSEGV|SIGABRT)' "$logs/run-$run.log" || true
done
echo "logs: $logs"
[ "$failed" -eq 0 ]
