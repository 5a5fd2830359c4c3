#!/usr/bin/env bash
# Self-play games per second through the coordinator (issue 44): a games-only
# run (`--think-limit 0 --play-share 1 --play-games GAMES`) with 1 and 2 local
# worker processes of one slot each, the binaries in BIN beside those in
# OLD_BIN (e.g. a build from before self-play became search jobs), alternating
# on copies of one book. Reports games per second of wall time, start to exit,
# and the ratio new / old.
#
#   OLD_BIN=DIR scripts/self-play-rate.sh [DIR]   # BIN=target/release, GAMES=200, NODES=1000
#
# Needs the release binaries (cargo build --release --bins).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${BIN:-$HERE/../target/release}"
OLD_BIN="${OLD_BIN:?OLD_BIN: the directory of the binaries to compare with}"
GAMES="${GAMES:-200}"
NODES="${NODES:-1000}"
ROUNDS="${ROUNDS:-2}"
DIR="${1:-$(mktemp -d)}"
mkdir -p "$DIR"
cd "$DIR"

# shellcheck source=scripts/games-rate-common.sh
. "$HERE/games-rate-common.sh"
grow_book

run() { # binaries, workers, name -> seconds
  rm -rf "$3.db"
  cp -r book.db "$3.db"
  local start
  start=$(date +%s.%N)
  "$1/coordinator" --db "$3.db" --listen 127.0.0.1:0 --think-limit 0 --local-workers "$2" \
    --local-slots 1 --play-share 1 --play-games "$GAMES" --play-nodes "$NODES" >"$3.log" 2>&1
  elapsed "$start"
}

echo "| worker processes | round | old: wall, games/s | new: wall, games/s | new / old |"
echo "|---|---|---|---|---|"
for W in 1 2; do
  for R in $(seq "$ROUNDS"); do
    OLD=$(run "$OLD_BIN" "$W" "old-$W-$R")
    NEW=$(run "$BIN" "$W" "new-$W-$R")
    printf '| %s | %s | %s s, %s | %s s, %s | %s |\n' "$W" "$R" "$OLD" "$(rate "$GAMES" "$OLD")" \
      "$NEW" "$(rate "$GAMES" "$NEW")" \
      "$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$OLD" "$NEW")"
  done
done
