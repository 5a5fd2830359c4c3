#!/bin/bash
# How fast a coordinator thinks with one worker of one slot running a USI engine:
# a new store thought to LIMIT positions at NODES nodes; prints the worker's rate
# and the wall time from the coordinator's start to its exit (BENCHMARKS.md "The USI
# driver and YaneuraOu").
#
#   scripts/usi-think-rate.sh BIN_DIR ENGINE_CMD LIMIT NODES [NAME=VALUE ...]
#
# BIN_DIR holds release `coordinator` and `worker` binaries (two builds side by
# side compare two versions); NAME=VALUE are the engine's options (e.g.
# BookFile=no_book Threads=1 USI_Hash=16 for YaneuraOu).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,11p' "$0"; exit 2; }
bin=$1 engine=$2 limit=$3 nodes=$4
shift 4
options=()
for o in "$@"; do options+=(--engine-option "$o"); done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head -c 24 /dev/urandom | base64 > "$dir/token"
start=$(date +%s.%N)
timeout 900 "$bin/coordinator" --db "$dir/db" --listen 127.0.0.1:0 --token-file "$dir/token" \
    --think-limit "$limit" 2> "$dir/coordinator.log" &
coordinator=$!
port=""
for _ in $(seq 100); do
    port=$(grep -o 'listening addr=127.0.0.1:[0-9]*' "$dir/coordinator.log" | head -1 | cut -d: -f2 || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "the coordinator did not listen" >&2; cat "$dir/coordinator.log" >&2; exit 1; }
"$bin/worker" --coordinator "http://127.0.0.1:$port" --token-file "$dir/token" --slots 1 --prefetch 0 \
    --engine usi --engine-cmd "$engine" "${options[@]}" --nodes "$nodes" 2> "$dir/worker.log" &
worker=$!
status=0
wait "$coordinator" || status=$?
end=$(date +%s.%N)
kill "$worker" 2> /dev/null || true
wait "$worker" 2> /dev/null || true
[ "$status" = 0 ] || { echo "the coordinator failed ($status)" >&2; tail -5 "$dir/coordinator.log" "$dir/worker.log" >&2; exit 1; }
rate=$(grep -o 'evaluated [0-9]* ([0-9.]*/s)' "$dir/worker.log" | tail -1)
echo "$bin: $limit positions at $nodes nodes: worker $rate; $(echo "$end - $start" | bc) s wall"
