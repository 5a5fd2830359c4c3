#!/usr/bin/env bash
# The book-strength measurement of BENCHMARKS.md ("Book strength"): books grown from
# the default roots (startpos and its children) with the built-in engine at two budgets, then matches against no book and
# against each other with independent games (one opening per pair, drawn from the
# book under test at plies PLIES), each row with its distinct-game count.
#
#   scripts/book-quality.sh [OUT_DIR]
#
# Environment (defaults in brackets): BIN [target/release] holds `coordinator` and
# `book-tools`; THINK [10000] positions per book; GROW_NODES_HIGH [0: the built-in
# engine's default budget, 300,000 nodes a position, about 10x the match's thinking
# per move] and GROW_NODES_LOW [30000: about the match's] the books' budgets (`lowsm`: the low
# budget with softmax selection);
# GAMES [2000] games per match; NODES [1000] nodes per move in the matches; JOBS [2]
# games in parallel; PLIES [2-8] plies of the openings; ROWS [all] a space-separated
# subset of the row names below. Every step prints its command; each match writes
# OUT_DIR/NAME.json (the result), NAME.match (the text), NAME.csa (the games).
# A table of every row is printed at the end (python3 reads the JSON).
set -euo pipefail

OUT=${1:-/tmp/stera-book-quality}
BIN=${BIN:-target/release}
THINK=${THINK:-10000}
GROW_NODES_HIGH=${GROW_NODES_HIGH:-0}
GROW_NODES_LOW=${GROW_NODES_LOW:-30000}
GAMES=${GAMES:-2000}
NODES=${NODES:-1000}
JOBS=${JOBS:-2}
PLIES=${PLIES:-2-8}
ROWS=${ROWS:-all}

mkdir -p "$OUT"
run() {
    echo "+ $*" >&2
    "$@"
}

wanted() {
    [ "$ROWS" = all ] || [[ " $ROWS " == *" $1 "* ]]
}

grow() { # grow NAME NODES [coordinator flags...]
    local name=$1 nodes=$2
    shift 2
    if [ ! -d "$OUT/$name.db" ]; then
        # The default roots: startpos and its 30 children.
        run "$BIN/coordinator" --db "$OUT/$name.db" --local-workers 2 \
            --think-limit "$THINK" --nodes "$nodes" "$@" 2> "$OUT/$name.grow.log"
    fi
}

match() { # match NAME [book-tools match flags...]
    local name=$1
    shift
    wanted "$name" || return 0
    if [ ! -s "$OUT/$name.json" ]; then
        # A match whose pairs repeat exits non-zero after printing its counts.
        run "$BIN/book-tools" match --games "$GAMES" --nodes "$NODES" --concurrency "$JOBS" \
            --suite-plies "$PLIES" --out-games "$OUT/$name.csa" --json "$OUT/$name.json" "$@" \
            > "$OUT/$name.match" 2> "$OUT/$name.match.log" || true
    fi
    echo "== $name: $*"
    cat "$OUT/$name.match"
}

grow high "$GROW_NODES_HIGH"
grow low "$GROW_NODES_LOW"
# The same compute spread by sampling descents (near-best lines of both sides)
# instead of the alpha-beta principal variation.
grow lowsm "$GROW_NODES_LOW" --select softmax --temperature 20
for book in high low; do
    if [ ! -s "$OUT/$book-minimax.db2016" ]; then
        run "$BIN/book-tools" export --db "$OUT/$book.db" --out "$OUT/$book-minimax.db2016"
    fi
done

match high-best --db "$OUT/high.db" --book-moves best
match high-yaneuraou --db "$OUT/high.db" --book-moves yaneuraou
match high-softmax10 --db "$OUT/high.db" --book-moves softmax --temperature 10
match high-file-yaneuraou --book "$OUT/high-minimax.db2016"
match low-best --db "$OUT/low.db" --book-moves best
match lowsm-best --db "$OUT/lowsm.db" --book-moves best
match low-vs-lowsm --db "$OUT/low.db" --against "$OUT/lowsm.db" --book-moves best
match high-vs-low --db "$OUT/high.db" --against "$OUT/low.db" --book-moves best

python3 - "$OUT" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print(f"\n{'row':<22} {'games':>5} {'distinct':>8} {'pairs':>5} {'elo (pentanomial, 95 %)':<26} {'los':>6} {'book/game':>9}")
for path in sorted(out.glob("*.json")):
    r = json.loads(path.read_text())
    p = r["pentanomial"]
    elo = "withheld" if p is None else (
        f"{p['elo']:+.1f} [{p['elo_low']:+.1f}, {p['elo_high']:+.1f}]"
        if None not in (p["elo"], p["elo_low"], p["elo_high"]) else "inf")
    los = "-" if r["los"] is None else f"{r['los']:.3f}"
    print(f"{path.stem:<22} {r['games']:>5} {r['distinct_games']:>8} {r['pairs']:>5} {elo:<26} {los:>6} "
          f"{r['coverage']['own_book_moves_per_game']:>9.2f}")
EOF
