#!/usr/bin/env bash
# Learning games per second (issue 44): the coordinator's learning through its
# workers beside `book-tools learn` on the same machine, with the built-in engine
# as the opponent and with Fairy-Stockfish (an external USI engine) as the
# opponent, with 1 and 2 worker processes (or game threads). Each row starts
# from a copy of one book, plays GAMES games and reports games per second of
# wall time from start to exit.
#
#   scripts/learning-rate.sh [DIR]        # BIN=target/release, GAMES=200, NODES=1000
#
# Needs the release binaries (cargo build --release --bins) and fairy-stockfish.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${BIN:-$HERE/../target/release}"
GAMES="${GAMES:-200}"
NODES="${NODES:-1000}"
DIR="${1:-$(mktemp -d)}"
FAIRY_CMD="${FAIRY_CMD:-$(command -v fairy-stockfish || echo /usr/games/fairy-stockfish)}"
FAIRY="--engine-cmd $FAIRY_CMD --engine-option UCI_Variant=shogi"
mkdir -p "$DIR"
cd "$DIR"

# shellcheck source=scripts/games-rate-common.sh
. "$HERE/games-rate-common.sh"
grow_book

copy() { rm -rf "$1"; cp -r book.db "$1"; }
row() { printf '| %s | %s | %s s | %s games/s |\n' "$1" "$2" "$3" "$(rate "$GAMES" "$3")"; }

echo "| front end | opponent, processes or threads | wall time | rate |"
echo "|---|---|---|---|"
for OPP in builtin fairy; do
  if [ "$OPP" = builtin ]; then
    LOCAL_OPP="--nodes $NODES"
    CLUSTER_OPP="--nodes $NODES"
  else
    LOCAL_OPP="$FAIRY --engine-id Fairy-Stockfish --nodes $NODES"
    CLUSTER_OPP="--engine-id Fairy-Stockfish --nodes $NODES"
  fi
  for W in 1 2; do
    copy "local-$OPP-$W.db"
    start=$(date +%s.%N)
    "$BIN/book-tools" learn --db "local-$OPP-$W.db" --learn-games "$GAMES" --nodes "$NODES" \
      --learn-concurrency "$W" --learn-opponent "$LOCAL_OPP" >"local-$OPP-$W.log" 2>&1
    row "book-tools learn" "$OPP, $W thread(s)" "$(elapsed "$start")"

    copy "cluster-$OPP-$W.db"
    PORT=$((50100 + W + ${#OPP}))
    start=$(date +%s.%N)
    "$BIN/coordinator" --db "cluster-$OPP-$W.db" --listen "127.0.0.1:$PORT" --think-limit 0 \
      --local-workers "$W" --local-slots 1 --learn-games "$GAMES" \
      --learn-concurrency $((2 * W)) --learn-nodes "$NODES" \
      --learn-opponent "$CLUSTER_OPP" >"cluster-$OPP-$W.log" 2>&1 &
    COORD=$!
    WORKERS=()
    if [ "$OPP" = fairy ]; then
      for _ in $(seq "$W"); do
        # shellcheck disable=SC2086
        "$BIN/worker" --coordinator "http://127.0.0.1:$PORT" --slots 1 --engine usi $FAIRY \
          >>"cluster-$OPP-$W.workers.log" 2>&1 &
        WORKERS+=($!)
      done
    fi
    wait "$COORD"
    row "coordinator" "$OPP, $W worker process(es) of each engine" "$(elapsed "$start")"
    for w in "${WORKERS[@]}"; do kill "$w" 2>/dev/null || true; wait "$w" 2>/dev/null || true; done
  done
done
