#!/usr/bin/env bash
# The book-quality comparison of BENCHMARKS.md ("Book weights from results"):
# books grown from startpos with the built-in engine, self-play games through the
# coordinator, exports with minimax / softmax backup / NineDayFever weights, and
# matches of each against no book and against each other, all at one node budget.
#
#   scripts/book-quality.sh [OUT_DIR]
#
# Environment (defaults in brackets): BIN [target/release] holds `coordinator` and
# `book-tools`; THINK [3000] positions per book; PLAY_GAMES [1000] self-play games
# counted into the alpha-beta book; GAMES [400] games per match; NODES [10000] nodes
# per move in games and matches; JOBS [2] games in parallel; SELECT_SOFTMAX [1]
# also grows a book with `--select softmax` (needs a coordinator that has it).
# Every step prints its command; the match summaries land in OUT_DIR/*.match.
set -euo pipefail

OUT=${1:-/tmp/stera-book-quality}
BIN=${BIN:-target/release}
THINK=${THINK:-3000}
PLAY_GAMES=${PLAY_GAMES:-1000}
GAMES=${GAMES:-400}
NODES=${NODES:-10000}
JOBS=${JOBS:-2}
SELECT_SOFTMAX=${SELECT_SOFTMAX:-1}

mkdir -p "$OUT"
run() {
    echo "+ $*" >&2
    "$@"
}

echo startpos > "$OUT/roots.txt"

grow() { # grow NAME [extra coordinator flags...]
    local name=$1
    shift
    if [ ! -d "$OUT/$name.db" ]; then
        run "$BIN/book-tools" roots set --db "$OUT/$name.db" "$OUT/roots.txt"
        run "$BIN/coordinator" --db "$OUT/$name.db" --local-workers 2 \
            --think-limit "$THINK" "$@" 2> "$OUT/$name.grow.log"
    fi
}

match() { # match NAME [book-tools match flags...]
    local name=$1
    shift
    if [ ! -s "$OUT/$name.match" ]; then
        run "$BIN/book-tools" match --games "$GAMES" --nodes "$NODES" --concurrency "$JOBS" \
            --openings "$OUT/roots.txt" --out-games "$OUT/$name.csa" "$@" \
            > "$OUT/$name.match.tmp" 2> "$OUT/$name.match.log"
        mv "$OUT/$name.match.tmp" "$OUT/$name.match"
    fi
    echo "== $name: $*"
    cat "$OUT/$name.match"
}

grow ab
if [ ! -s "$OUT/ab.games.txt" ]; then
    run "$BIN/coordinator" --db "$OUT/ab.db" --local-workers 2 --think-limit 0 \
        --play-share 1 --games "$PLAY_GAMES" --play-nodes "$NODES" \
        --games-out "$OUT/ab.games.txt" 2> "$OUT/ab.play.log"
fi
run "$BIN/book-tools" export --db "$OUT/ab.db" --out "$OUT/ab-minimax.db2016"
run "$BIN/book-tools" export --db "$OUT/ab.db" --out "$OUT/ab-ndf.db2016" --weights ndf
run "$BIN/book-tools" export --db "$OUT/ab.db" --out "$OUT/ab-softmax.db2016" --backup softmax

match ab-vs-none --db "$OUT/ab.db"
match minimax-vs-none --book "$OUT/ab-minimax.db2016" --book-moves softmax
match ndf-vs-none --book "$OUT/ab-ndf.db2016" --book-moves count
match softmax-vs-none --book "$OUT/ab-softmax.db2016" --book-moves count
match ndf-vs-minimax --book "$OUT/ab-ndf.db2016" --book-moves count \
    --against-book "$OUT/ab-minimax.db2016" --against-book-moves softmax
if [ "$SELECT_SOFTMAX" = 1 ]; then
    grow sm --select softmax --temperature 50
    match sm-vs-none --db "$OUT/sm.db"
    match ab-vs-sm --db "$OUT/ab.db" --against "$OUT/sm.db"
fi
