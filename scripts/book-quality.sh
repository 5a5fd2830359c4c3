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
#
# Then growth aimed at where games go, against PV growth at equal compute
# (`low-exits`, `low-pv-more`): a training match of TRAIN_GAMES [1000] games on
# `low` (another seed), the positions where its games left the book
# (`scripts/match-positions.py exits`) added as roots with 5 leaves per turn, and
# GROW_MORE [5000] more positions grown from them; `low-pv-more` grows `low` by
# PV selection with the CPU time of both (the training match and the growth);
# both are matched on the openings of `low-best`. Then weights from PLAY_GAMES
# [4000] self-play games (`low-ndf`, `low-backup`, `ndf-vs-minimax`), on the same
# openings. Then Fairy-Stockfish books (`fs-high`, `fs-low`, `fs-high-vs-low`,
# `fs-high-sprt`;
# see below). Then the leaf discount (`high-d4`, `high-d8`, `high-d4-vs-d0`, `lowd5`,
# `highd5`), and matches from the start position (`high-start`, `low-start`,
# `none-start`, `single-start`), and moves chosen by games (`learn-start`,
# `learn-file-start`, `learn-vs-high-start`, `learn-start-2x`; LEARN_GAMES). Last,
# the evaluator's noise on
# 200 positions of each book (`scripts/evaluator-noise.py`). Needs cshogi.
set -euo pipefail
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"

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
        run "$BIN/coordinator" --db "$OUT/$name.db" --create --local-workers 2 \
            --think-limit "$THINK" --nodes "$nodes" "$@" 2> "$OUT/$name.grow.log"
    fi
}

match() { # match NAME [book-tools match flags...]
    local name=$1
    shift
    # ROWS=held names every held-out row, ROWS=suite those on the opening suite.
    wanted "$name" || { [[ $name == held-suite* ]] && wanted suite; } ||
        { [[ $name == held-third* || $name == held-suitefs-poolfs ]] && wanted third; } ||
        { [[ $name == transfer-* ]] && wanted transfer; } ||
        { [[ $name == held4x-* || $name == transfer-hi-fs ]] && wanted held4x; } ||
        { [[ $name == held-* ]] && [[ $name != held-suite* ]] && [[ $name != held-third* ]] && wanted held; } || return 0
    if [ ! -s "$OUT/$name.json" ]; then
        # A match whose pairs repeat exits non-zero after printing its counts.
        run "$BIN/book-tools" match --games "$GAMES" --nodes "$NODES" --concurrency "$JOBS" \
            --suite-plies "$PLIES" --out-games "$OUT/$name.csa" --json "$OUT/$name.json" "$@" \
            > "$OUT/$name.match" 2> "$OUT/$name.match.log" || true
    fi
    echo "== $name: $*"
    cat "$OUT/$name.match"
}

# The held-out rows (ROWS=held) grow their own book: the three below are not needed.
if [ "$ROWS" != held ] && [ "$ROWS" != suite ] && [ "$ROWS" != third ] && [ "$ROWS" != transfer ] &&
    [ "$ROWS" != held4x ]; then
    grow high "$GROW_NODES_HIGH"
    grow low "$GROW_NODES_LOW"
    # The same compute spread by sampling descents (near-best lines of both sides)
    # instead of the alpha-beta principal variation.
    grow lowsm "$GROW_NODES_LOW" --select softmax --select-temperature 20
    for book in high low; do
        if [ ! -s "$OUT/$book-minimax.db2016" ]; then
            run "$BIN/book-tools" export --db "$OUT/$book.db" --out "$OUT/$book-minimax.db2016"
        fi
    done
fi

match high-best --db "$OUT/high.db" --book-moves best
match high-yaneuraou --db "$OUT/high.db" --book-moves yaneuraou
match high-softmax10 --db "$OUT/high.db" --book-moves softmax --play-temperature 10
match high-file-yaneuraou --book "$OUT/high-minimax.db2016"
match low-best --db "$OUT/low.db" --book-moves best
match lowsm-best --db "$OUT/lowsm.db" --book-moves best
match low-vs-lowsm --db "$OUT/low.db" --against "$OUT/lowsm.db" --book-moves best
match high-vs-low --db "$OUT/high.db" --against "$OUT/low.db" --book-moves best

# Growth aimed at where games go, at equal compute.
TRAIN_GAMES=${TRAIN_GAMES:-1000}
GROW_MORE=${GROW_MORE:-5000}
SCRIPTS=$(dirname "$0")
cputime() { # cputime NAME COMMAND...: runs it, keeps its user+system CPU seconds in NAME.cpu
    local name=$1
    shift
    echo "+ $*" >&2
    /usr/bin/time -f "%U %S" -o "$OUT/$name.time" "$@"
    awk '{ print $1 + $2 }' "$OUT/$name.time" > "$OUT/$name.cpu"
}
if { wanted low-exits || wanted low-pv-more; } && [ ! -d "$OUT/low-exits.db" ]; then
    cp -r "$OUT/low.db" "$OUT/low-train.db"
    cputime train "$BIN/book-tools" match --db "$OUT/low-train.db" --games "$TRAIN_GAMES" \
        --nodes "$NODES" --concurrency "$JOBS" --suite-plies "$PLIES" --play-seed 2 --book-moves best \
        --out-games "$OUT/train.csa" > "$OUT/train.match" 2> "$OUT/train.log" || true
    python3 "$SCRIPTS/match-positions.py" exits "$OUT/train.csa" > "$OUT/exits.txt"
    cp -r "$OUT/low.db" "$OUT/low-exits.tmp"
    { "$BIN/book-tools" roots list --db "$OUT/low-exits.tmp" | grep -v '^#'; cat "$OUT/exits.txt"; } > "$OUT/exits-roots.txt"
    run "$BIN/book-tools" roots set --db "$OUT/low-exits.tmp" --leaves-per-turn 5 "$OUT/exits-roots.txt" | head -n 1
    cputime grow-exits "$BIN/coordinator" --db "$OUT/low-exits.tmp" --create --local-workers 2 \
        --think-limit "$GROW_MORE" --nodes "$GROW_NODES_LOW" 2> "$OUT/low-exits.grow.log"
    mv "$OUT/low-exits.tmp" "$OUT/low-exits.db"
fi
if wanted low-pv-more && [ ! -d "$OUT/low-pv-more.db" ]; then
    more=$(python3 -c "import sys; t, g = (float(open(f).read()) for f in sys.argv[1:]); print(round($GROW_MORE * (t + g) / g))" "$OUT/train.cpu" "$OUT/grow-exits.cpu")
    echo "low-pv-more: $more positions, the CPU time of the training match and the aimed growth" >&2
    cp -r "$OUT/low.db" "$OUT/low-pv-more.tmp"
    cputime grow-pv-more "$BIN/coordinator" --db "$OUT/low-pv-more.tmp" --create --local-workers 2 \
        --think-limit "$more" --nodes "$GROW_NODES_LOW" 2> "$OUT/low-pv-more.grow.log"
    mv "$OUT/low-pv-more.tmp" "$OUT/low-pv-more.db"
fi
fixed() { # fixed NAME [match flags...]: a match on the openings of low-best
    local name=$1
    shift
    # ROWS=held names every held-out row.
    wanted "$name" || { [[ $name == held-* ]] && wanted held; } || return 0
    [ -s "$OUT/low-openings.txt" ] || python3 "$SCRIPTS/match-positions.py" openings "$OUT/low-best.csa" > "$OUT/low-openings.txt"
    if [ ! -s "$OUT/$name.json" ]; then
        run "$BIN/book-tools" match --openings "$OUT/low-openings.txt" --games "$GAMES" \
            --nodes "$NODES" --concurrency "$JOBS" --out-games "$OUT/$name.csa" \
            --json "$OUT/$name.json" "$@" > "$OUT/$name.match" 2> "$OUT/$name.match.log" || true
    fi
    echo "== $name: $* on the openings of low-best"
    cat "$OUT/$name.match"
}
fixed low-exits --db "$OUT/low-exits.db" --book-moves best
fixed low-pv-more --db "$OUT/low-pv-more.db" --book-moves best

# Weights from games: PLAY_GAMES [4000] self-play games on a copy of `low`, then its
# minimax, NineDayFever and softmax-backup exports as book files.
PLAY_GAMES=${PLAY_GAMES:-4000}
if { wanted low-ndf || wanted low-backup || wanted ndf-vs-minimax; } && [ ! -s "$OUT/low-played-ndf.db2016" ]; then
    rm -rf "$OUT/low-played.db"
    cp -r "$OUT/low.db" "$OUT/low-played.db"
    run "$BIN/coordinator" --db "$OUT/low-played.db" --create --local-workers 2 --think-limit 0 --play-share 1 \
        --games "$PLAY_GAMES" --play-nodes "$NODES" 2> "$OUT/low-played.play.log"
    run "$BIN/book-tools" export --db "$OUT/low-played.db" --out "$OUT/low-played-minimax.db2016"
    run "$BIN/book-tools" export --db "$OUT/low-played.db" --out "$OUT/low-played-backup.db2016" --export-backup softmax
    run "$BIN/book-tools" export --db "$OUT/low-played.db" --out "$OUT/low-played-ndf.db2016" --export-weights ndf
fi
fixed low-ndf --book "$OUT/low-played-ndf.db2016" --book-moves count
fixed low-backup --book "$OUT/low-played-backup.db2016" --book-moves count
fixed ndf-vs-minimax --book "$OUT/low-played-ndf.db2016" --book-moves count \
    --against-book "$OUT/low-played-minimax.db2016" --against-book-moves best

# Books of a USI engine (Fairy-Stockfish, `UCI_Variant shogi`): grown through a
# coordinator and two worker processes at depth FS_DEPTH_HIGH [6] and at the match's
# FS_DEPTH [3], THINK positions each, then matched at depth FS_DEPTH on both sides.
FS=${FS:-/usr/games/fairy-stockfish}
FS_DEPTH=${FS_DEPTH:-3}
FS_DEPTH_HIGH=${FS_DEPTH_HIGH:-6}
FS_PORT=${FS_PORT:-50777}
fs_grow() { # fs_grow NAME DEPTH
    local name=$1 depth=$2
    [ -d "$OUT/$name.db" ] && return 0
    "$BIN/coordinator" --db "$OUT/$name.tmp" --create --listen "127.0.0.1:$FS_PORT" --think-limit "$THINK" \
        --depth "$depth" 2> "$OUT/$name.grow.log" &
    local coordinator=$! workers=()
    sleep 2
    for i in 1 2; do
        "$BIN/worker" --coordinator "http://127.0.0.1:$FS_PORT" --slots 1 --engine usi --engine-cmd "$FS" \
            --engine-option UCI_Variant=shogi --worker-id "$name-$i" 2> "$OUT/$name.worker-$i.log" &
        workers+=($!)
    done
    wait "$coordinator"
    # Workers wait for the next coordinator; this one was the last.
    kill "${workers[@]}" 2> /dev/null || true
    wait "${workers[@]}" 2> /dev/null || true
    mv "$OUT/$name.tmp" "$OUT/$name.db"
}
fs_match() { # fs_match NAME [match flags...]
    local name=$1
    shift
    # ROWS=held names every held-out row.
    wanted "$name" || { [[ $name == held-* ]] && wanted held; } || return 0
    if [ ! -s "$OUT/$name.json" ]; then
        run "$BIN/book-tools" match --games "$GAMES" --depth "$FS_DEPTH" --concurrency "$JOBS" \
            --suite-plies "$PLIES" --book-moves best --engine usi --engine-cmd "$FS" \
            --engine-option UCI_Variant=shogi --out-games "$OUT/$name.csa" --json "$OUT/$name.json" "$@" \
            > "$OUT/$name.match" 2> "$OUT/$name.match.log" || true
    fi
    echo "== $name: $*"
    cat "$OUT/$name.match"
}
if { wanted fs-high || wanted fs-low || wanted fs-high-vs-low || wanted fs-high-sprt; } && [ -x "$FS" ]; then
    fs_grow fs-high "$FS_DEPTH_HIGH"
    fs_grow fs-low "$FS_DEPTH"
    fs_match fs-high --db "$OUT/fs-high.db"
    fs_match fs-low --db "$OUT/fs-low.db"
    fs_match fs-high-vs-low --db "$OUT/fs-high.db" --against "$OUT/fs-low.db"
    # The confirmation of `fs-high`: a sequential test of 0 against +10 Elo on
    # openings of another seed, up to 8,000 games.
    GAMES=8000 fs_match fs-high-sprt --db "$OUT/fs-high.db" --sprt 0,10 --play-seed 2
fi

# The leaf discount (BENCHMARKS.md "Moves nobody thought"): `high` exported with
# discounts of 4 and 8 cp on the openings of `high-best`, head to head with the
# undiscounted export; then books grown and exported with a discount of 5 at both
# budgets, against no book.
if wanted high-d4 || wanted high-d8 || wanted high-d4-vs-d0 || wanted lowd5 || wanted highd5; then
    [ -s "$OUT/high-openings.txt" ] || python3 "$SCRIPTS/match-positions.py" openings "$OUT/high-best.csa" > "$OUT/high-openings.txt"
    for d in 0 4 8; do
        [ -s "$OUT/high-d$d.db2016" ] || run "$BIN/book-tools" export --db "$OUT/high.db" --export-leaf-discount "$d" --out "$OUT/high-d$d.db2016"
    done
    match high-d4 --book "$OUT/high-d4.db2016" --book-moves best --openings "$OUT/high-openings.txt"
    match high-d8 --book "$OUT/high-d8.db2016" --book-moves best --openings "$OUT/high-openings.txt"
    match high-d4-vs-d0 --book "$OUT/high-d4.db2016" --against-book "$OUT/high-d0.db2016" --book-moves best --openings "$OUT/high-openings.txt"
    for book in lowd5 highd5; do
        wanted "$book" || continue
        nodes=$([ "$book" = highd5 ] && echo "$GROW_NODES_HIGH" || echo "$GROW_NODES_LOW")
        grow "$book" "$nodes" --select-leaf-discount 5
        [ -s "$OUT/$book-d5.db2016" ] || run "$BIN/book-tools" export --db "$OUT/$book.db" --export-leaf-discount 5 --out "$OUT/$book-d5.db2016"
        match "$book" --book "$OUT/$book-d5.db2016" --book-moves best
    done
    for book in high low lowd5 highd5; do
        if [ -d "$OUT/$book.db" ]; then
            echo "== $book: $("$BIN/book-tools" stats --db "$OUT/$book.db" 2> /dev/null | grep expansion)"
        fi
    done
fi

# From the start position (BENCHMARKS.md "From the start position"): one opening,
# games made distinct by jittering each move's node limit; the book's own first
# moves are what is measured. `none-start`: a book file whose one entry (kings
# alone) no game reaches, for the engine's own score as black.
if wanted high-start || wanted low-start || wanted none-start; then
    echo startpos > "$OUT/startpos.txt"
    printf '#YANEURAOU-DB2016 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4h none 0 0 1\n' > "$OUT/unreached.db2016"
    start=(--openings "$OUT/startpos.txt" --repeat-openings --node-jitter 0.9 --play-seed 7)
    match high-start --db "$OUT/high.db" --book-moves best "${start[@]}"
    match low-start --db "$OUT/low.db" --book-moves best "${start[@]}"
    match none-start --book "$OUT/unreached.db2016" "${start[@]}"
fi
# A book grown from the start position alone, matched the same way.
if wanted single-start; then
    if [ ! -d "$OUT/single.db" ]; then
        echo startpos > "$OUT/startpos.txt"
        # `grow` would skip the store that `roots set` makes.
        run "$BIN/book-tools" roots set --create --db "$OUT/single.tmp" "$OUT/startpos.txt"
        run "$BIN/coordinator" --db "$OUT/single.tmp" --create --local-workers 2 --think-limit "$THINK" \
            --nodes "$GROW_NODES_HIGH" 2> "$OUT/single.grow.log"
        mv "$OUT/single.tmp" "$OUT/single.db"
    fi
    match single-start --db "$OUT/single.db" --book-moves best --openings "$OUT/startpos.txt" \
        --repeat-openings --node-jitter 0.9 --play-seed 7
fi

# Moves chosen by games (BENCHMARKS.md "Moves chosen by games"): `book-tools learn`
# plays LEARN_GAMES [20000, ten times a match's] games from the start position on a
# copy of `high`, its book side (Thompson sampling over the book's moves) against
# the engine without a book at the match's budget, another seed than the
# matches'; then the results rule against no book (`learn-start`), the export
# `--export-by-results` played by its best value (`learn-file-start`, the same moves),
# head to head against `high`'s minimax moves (`learn-vs-high-start`), and both
# sides at twice the budget it learned at (`learn-start-2x`).
LEARN_GAMES=${LEARN_GAMES:-20000}
if wanted learn-start || wanted learn-file-start || wanted learn-vs-high-start || wanted learn-start-2x; then
    echo startpos > "$OUT/startpos.txt"
    if [ ! -d "$OUT/learn.db" ]; then
        cp -r "$OUT/high.db" "$OUT/learn.tmp"
        run "$BIN/book-tools" learn --db "$OUT/learn.tmp" --openings "$OUT/startpos.txt" \
            --games "$LEARN_GAMES" --nodes "$NODES" --node-jitter 0.9 --concurrency "$JOBS" \
            --learn-seed 5 > "$OUT/learn.out" 2> "$OUT/learn.log"
        mv "$OUT/learn.tmp" "$OUT/learn.db"
    fi
    cat "$OUT/learn.out"
    [ -s "$OUT/learn-results.db2016" ] || run "$BIN/book-tools" export --db "$OUT/learn.db" \
        --export-by-results --out "$OUT/learn-results.db2016" > /dev/null
    start=(--openings "$OUT/startpos.txt" --repeat-openings --node-jitter 0.9 --play-seed 7)
    match learn-start --db "$OUT/learn.db" --book-moves results "${start[@]}"
    match learn-file-start --book "$OUT/learn-results.db2016" --book-moves best "${start[@]}"
    match learn-vs-high-start --db "$OUT/learn.db" --book-moves results \
        --against "$OUT/high.db" --against-book-moves best "${start[@]}"
    NODES=$((2 * NODES)) match learn-start-2x --db "$OUT/learn.db" --book-moves results "${start[@]}"
fi

# Learning that generalises (BENCHMARKS.md "Learning that generalises"): a book of
# HELD_THINK [3000] positions grown at GROW_NODES_LOW from the default roots, then
# HELD_LEARN_GAMES [10000] `learn` games from the start position on two copies: one
# against the book side's own engine and budget (`learn-single`), one against a pool of
# the built-in engine at 500, 1,000 and 2,000 nodes (`learn-pool`). Each is matched,
# with no book and the minimax book beside it, against opponents outside the pool:
# Fairy-Stockfish at FS_NODES [150] nodes (`held-fs-*`, a budget where the built-in
# engine at 1,000 nodes scores about 42 %) and the built-in engine at 4,000 nodes
# (`held-4k-*`); and against the training opponent, the built-in engine at 1,000 nodes
# (`train-*`). The book side plays at NODES; HELD_GAMES [1000] games a row.
HELD_THINK=${HELD_THINK:-3000}
HELD_LEARN_GAMES=${HELD_LEARN_GAMES:-10000}
HELD_GAMES=${HELD_GAMES:-1000}
FS_NODES=${FS_NODES:-150}
held_book() { # the book both the held-out and the suite rows start from
    echo startpos > "$OUT/startpos.txt"
    printf '#YANEURAOU-DB2016 1.00\nsfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4h none 0 0 1\n' > "$OUT/unreached.db2016"
    if [ ! -d "$OUT/held.db" ]; then
        run "$BIN/coordinator" --db "$OUT/held.tmp" --create --local-workers 2 --think-limit "$HELD_THINK" \
            --nodes "$GROW_NODES_LOW" --listen 127.0.0.1:0 2> "$OUT/held.grow.log"
        mv "$OUT/held.tmp" "$OUT/held.db"
    fi
    [ -s "$OUT/held-minimax.db2016" ] || run "$BIN/book-tools" export --db "$OUT/held.db" \
        --out "$OUT/held-minimax.db2016" > /dev/null
}
fs=(--opponent-engine usi --opponent-engine-cmd "$(command -v fairy-stockfish || echo /usr/games/fairy-stockfish)"
    --opponent-engine-option UCI_Variant=shogi --opponent-nodes "$FS_NODES")
if wanted held; then
    held_book
    learned() { # learned NAME [learn flags...]
        local name=$1
        shift
        if [ ! -d "$OUT/$name.db" ]; then
            cp -r "$OUT/held.db" "$OUT/$name.tmp"
            run "$BIN/book-tools" learn --db "$OUT/$name.tmp" --openings "$OUT/startpos.txt" \
                --games "$HELD_LEARN_GAMES" --nodes "$NODES" --concurrency 1 --learn-seed "${LEARN_SEED:-5}" "$@" \
                > "$OUT/$name.learn.out" 2> "$OUT/$name.learn.log"
            mv "$OUT/$name.tmp" "$OUT/$name.db"
        fi
    }
    learned single
    learned pool --opponent "--nodes 500" --opponent "--nodes 1000" --opponent "--nodes 2000"
    # The same pool on another seed (`poolb`): how far two learning runs differ.
    LEARN_SEED=6 learned poolb --opponent "--nodes 500" --opponent "--nodes 1000" --opponent "--nodes 2000"
    # The same pool learned through the cluster (`cluster`: two local worker
    # processes, no growth), and growth where the games go against no growth at
    # equal compute: `grow` also thinks HELD_GROW [1000] positions where its games
    # left the book (--learn-grow-share 1); `nogrow` is `cluster` given more games
    # until it has used the CPU time (user + system, workers included) of `grow`.
    HELD_GROW=${HELD_GROW:-1000}
    clustered() { # clustered NAME FROM GAMES SEED [coordinator flags...]
        local name=$1 from=$2 games=$3 seed=$4
        shift 4
        if [ ! -d "$OUT/$name.db" ]; then
            rm -rf "$OUT/$name.tmp"
            cp -r "$OUT/$from.db" "$OUT/$name.tmp"
            run /usr/bin/time -f "%U %S" -o "$OUT/$name.cpu" "$BIN/coordinator" --db "$OUT/$name.tmp" --create \
                --local-workers 2 --local-slots 1 --listen 127.0.0.1:0 --nodes "$GROW_NODES_LOW" \
                --learn-games "$games" --learn-nodes "$NODES" --learn-openings "$OUT/startpos.txt" \
                --learn-seed "$seed" --learn-opponent "--nodes 500" --learn-opponent "--nodes 1000" \
                --learn-opponent "--nodes 2000" "$@" 2> "$OUT/$name.learn.log"
            mv "$OUT/$name.tmp" "$OUT/$name.db"
        fi
    }
    cpu() { awk '{ print $1 + $2 }' "$OUT/$1.cpu"; }
    clustered cluster held "$HELD_LEARN_GAMES" 5 --think-limit 0 --learn-grow-plies 0
    clustered grow held "$HELD_LEARN_GAMES" 5 --think-limit "$HELD_GROW" --learn-grow-share 1
    more=$(awk -v g="$(cpu grow)" -v c="$(cpu cluster)" -v n="$HELD_LEARN_GAMES" \
        'BEGIN { m = int(n * (g - c) / c + 0.5); print (m > 0 ? m : 0) }')
    echo "== grow used $(cpu grow) s of CPU, cluster $(cpu cluster) s: nogrow gets $more more games"
    if [ "$more" -gt 0 ]; then
        clustered nogrow cluster "$more" 6 --think-limit 0 --learn-grow-plies 0
    else
        [ -d "$OUT/nogrow.db" ] || cp -r "$OUT/cluster.db" "$OUT/nogrow.db"
    fi
    start=(--openings "$OUT/startpos.txt" --repeat-openings --play-seed 7)
    for against in fs 4k train; do
        case $against in
            fs) opp=("${fs[@]}") ;;
            4k) opp=(--opponent-nodes $((4 * NODES))) ;;
            train) opp=() ;;
        esac
        GAMES=$HELD_GAMES match "held-$against-none" --book "$OUT/unreached.db2016" "${start[@]}" "${opp[@]}"
        GAMES=$HELD_GAMES match "held-$against-minimax" --db "$OUT/held.db" --book-moves best "${start[@]}" "${opp[@]}"
        GAMES=$HELD_GAMES match "held-$against-single" --db "$OUT/single.db" --book-moves results "${start[@]}" "${opp[@]}"
        GAMES=$HELD_GAMES match "held-$against-pool" --db "$OUT/pool.db" --book-moves results "${start[@]}" "${opp[@]}"
        GAMES=$HELD_GAMES match "held-$against-cluster" --db "$OUT/cluster.db" --book-moves results "${start[@]}" "${opp[@]}"
        [ "$against" = fs ] && GAMES=$HELD_GAMES match "held-$against-poolb" --db "$OUT/poolb.db" --book-moves results "${start[@]}" "${opp[@]}"
        [ "$against" = train ] && continue
        GAMES=$HELD_GAMES match "held-$against-grow" --db "$OUT/grow.db" --book-moves results "${start[@]}" "${opp[@]}"
        GAMES=$HELD_GAMES match "held-$against-nogrow" --db "$OUT/nogrow.db" --book-moves results "${start[@]}" "${opp[@]}"
    done
fi

# Many openings instead of the start position (ROWS=suite, rows `held-suite*`):
# SUITE_OPENINGS [100] positions of the held-out book at plies SUITE_PLIES [2-4]
# (`scripts/book-openings.py`, seed 1), books learned on them with
# SUITE_LEARN_GAMES [10000] games each and matched on them, each opening for a pair
# in turn, SUITE_GAMES [2000] games a row. Here a match judges the book's decisions
# at a hundred positions, not its first move. The books:
# - `suite-pool`: `book-tools learn` against the pool (two game threads);
# - `suite-single`: the same against the book side's own engine and budget alone;
# - `suite-grow`: the pool's learning through the coordinator, growing the book
#   where its games leave it (SUITE_GROW [20000] positions thought at
#   GROW_NODES_LOW, every think job given to those exits while any are queued), so
#   that the book is deep where the suite's games go; `growminimax` plays that
#   grown book's minimax moves (depth without learning).
# The opponents: Fairy-Stockfish (held out), the built-in engine at 4x NODES (held
# out: a budget outside the pool; its node limit jittered by SUITE_4K_JITTER [0.9]
# so that its games differ) and the training opponent.
if wanted suite; then
    held_book
    SUITE_OPENINGS=${SUITE_OPENINGS:-100}
    SUITE_PLIES=${SUITE_PLIES:-2-4}
    SUITE_LEARN_GAMES=${SUITE_LEARN_GAMES:-10000}
    SUITE_GAMES=${SUITE_GAMES:-2000}
    SUITE_GROW=${SUITE_GROW:-20000}
    SUITE_4K_JITTER=${SUITE_4K_JITTER:-0.9}
    [ -s "$OUT/suite.txt" ] || python3 "$SCRIPTS/book-openings.py" "$OUT/held-minimax.db2016" \
        "$SUITE_PLIES" "$SUITE_OPENINGS" 1 > "$OUT/suite.txt"
    suite_learned() { # suite_learned NAME [learn flags...]
        local name=$1
        shift
        if [ ! -d "$OUT/$name.db" ]; then
            rm -rf "$OUT/$name.tmp"
            cp -r "$OUT/held.db" "$OUT/$name.tmp"
            run /usr/bin/time -f "%e %U %S" -o "$OUT/$name.time" "$BIN/book-tools" learn \
                --db "$OUT/$name.tmp" --openings "$OUT/suite.txt" --games "$SUITE_LEARN_GAMES" \
                --nodes "$NODES" --concurrency 2 --learn-seed 5 "$@" \
                > "$OUT/$name.learn.out" 2> "$OUT/$name.learn.log"
            mv "$OUT/$name.tmp" "$OUT/$name.db"
        fi
    }
    suite_learned suite-pool --opponent "--nodes 500" --opponent "--nodes 1000" --opponent "--nodes 2000"
    if [ ! -d "$OUT/suite-grow.db" ]; then
        rm -rf "$OUT/suite-grow.tmp"
        cp -r "$OUT/held.db" "$OUT/suite-grow.tmp"
        run /usr/bin/time -f "%e %U %S" -o "$OUT/suite-grow.time" "$BIN/coordinator" \
            --db "$OUT/suite-grow.tmp" --local-workers 2 --local-slots 1 --listen 127.0.0.1:0 \
            --nodes "$GROW_NODES_LOW" --think-limit "$SUITE_GROW" --learn-grow-share 1 \
            --learn-games "$SUITE_LEARN_GAMES" --learn-nodes "$NODES" --learn-openings "$OUT/suite.txt" \
            --learn-seed 5 --learn-opponent "--nodes 500" --learn-opponent "--nodes 1000" \
            --learn-opponent "--nodes 2000" 2> "$OUT/suite-grow.learn.log"
        mv "$OUT/suite-grow.tmp" "$OUT/suite-grow.db"
    fi
    suite_learned suite-single
    suite=(--openings "$OUT/suite.txt" --repeat-openings --play-seed 7)
    for against in fs 4k train; do
        case $against in
            fs) opp=("${fs[@]}") ;;
            4k) opp=(--opponent-nodes $((4 * NODES)) --opponent-node-jitter "$SUITE_4K_JITTER") ;;
            train) opp=() ;;
        esac
        row() { GAMES=$SUITE_GAMES match "held-suite$against-$1" "${@:2}" "${suite[@]}" "${opp[@]}"; }
        row none --book "$OUT/unreached.db2016"
        [ "$against" = train ] || row minimax --db "$OUT/held.db" --book-moves best
        row single --db "$OUT/suite-single.db" --book-moves results
        row pool --db "$OUT/suite-pool.db" --book-moves results
        [ "$against" = 4k ] && continue
        row grow --db "$OUT/suite-grow.db" --book-moves results
        [ "$against" = train ] || row growminimax --db "$OUT/suite-grow.db" --book-moves best
    done
fi

# Another engine in the pool, judged by a third (ROWS=third, rows `held-third*`): the
# pool of the suite rows plus Fairy-Stockfish at FS_NODES (`suite-poolfs`, learned on
# the suite as `suite-pool` is), matched with the suite's books against YaneuraOu
# built with its material-only evaluation (YANEURAOU_ENGINE_MATERIAL, MATERIAL_LEVEL
# 1; no evaluation file needed; YO_CMD, at YO_NODES [1000] nodes, one thread, 16 MB
# hash, no book), which took no part in any learning. Build it from YaneuraOu's
# public source: make -C source normal YANEURAOU_EDITION=YANEURAOU_ENGINE_MATERIAL
# COMPILER=g++ TARGET_CPU=AVX2 MATERIAL_LEVEL=1.
if wanted third; then
    held_book
    [ -s "$OUT/suite.txt" ] || { echo "ROWS=third needs the suite (ROWS=suite) first" >&2; exit 1; }
    YO_CMD=${YO_CMD:?ROWS=third needs YO_CMD, a YaneuraOu material build}
    YO_NODES=${YO_NODES:-1000}
    SUITE_LEARN_GAMES=${SUITE_LEARN_GAMES:-10000}
    SUITE_GAMES=${SUITE_GAMES:-2000}
    if [ ! -d "$OUT/suite-poolfs.db" ]; then
        rm -rf "$OUT/suite-poolfs.tmp"
        cp -r "$OUT/held.db" "$OUT/suite-poolfs.tmp"
        run /usr/bin/time -f "%e %U %S" -o "$OUT/suite-poolfs.time" "$BIN/book-tools" learn \
            --db "$OUT/suite-poolfs.tmp" --openings "$OUT/suite.txt" --games "$SUITE_LEARN_GAMES" \
            --nodes "$NODES" --concurrency 2 --learn-seed 5 --opponent "--nodes 500" \
            --opponent "--nodes 1000" --opponent "--nodes 2000" \
            --opponent "--engine-cmd ${fs[3]} --engine-option UCI_Variant=shogi --nodes $FS_NODES" \
            > "$OUT/suite-poolfs.learn.out" 2> "$OUT/suite-poolfs.learn.log"
        mv "$OUT/suite-poolfs.tmp" "$OUT/suite-poolfs.db"
    fi
    suite=(--openings "$OUT/suite.txt" --repeat-openings --play-seed 7)
    opp=(--opponent-engine usi --opponent-engine-cmd "$YO_CMD" --opponent-engine-option Threads=1
        --opponent-engine-option USI_Hash=16 --opponent-engine-option BookFile=no_book
        --opponent-nodes "$YO_NODES")
    row() { GAMES=$SUITE_GAMES match "held-third-$1" "${@:2}" "${suite[@]}" "${opp[@]}"; }
    row none --book "$OUT/unreached.db2016"
    row minimax --db "$OUT/held.db" --book-moves best
    row pool --db "$OUT/suite-pool.db" --book-moves results
    row poolfs --db "$OUT/suite-poolfs.db" --book-moves results
    row single --db "$OUT/suite-single.db" --book-moves results
    # Fairy-Stockfish is a training opponent of `suite-poolfs`: what it learned there.
    GAMES=$SUITE_GAMES match held-suitefs-poolfs --db "$OUT/suite-poolfs.db" --book-moves results \
        "${suite[@]}" "${fs[@]}"
fi

# What there is to learn held out (ROWS=transfer, rows `transfer-*`; needs the no-book
# rows of ROWS=suite and ROWS=third, and YO_CMD): no-book matches on the suite at the
# suite's budgets and at four times them (the book side at 4 x NODES against
# Fairy-Stockfish at 4 x FS_NODES and YaneuraOu at 4 x and 1 x YO_NODES), each budget
# with Fairy-Stockfish replayed on another seed as the control; then, per budget, how
# much of what the openings decide the opponents share (`scripts/opening-transfer.py`)
# and whether the built-in engine's value at the book's exit, searched at GROW_NODES_LOW,
# predicts the games (`scripts/exit-value.py`).
if wanted transfer; then
    [ -s "$OUT/held-third-none.csa" ] && [ -s "$OUT/held-suitefs-none.csa" ] ||
        { echo "ROWS=transfer needs the no-book rows of ROWS=suite and ROWS=third first" >&2; exit 1; }
    YO_CMD=${YO_CMD:?ROWS=transfer needs YO_CMD, a YaneuraOu material build}
    YO_NODES=${YO_NODES:-1000}
    SUITE_GAMES=${SUITE_GAMES:-2000}
    unreached=(--book "$OUT/unreached.db2016" --openings "$OUT/suite.txt" --repeat-openings)
    yo=(--opponent-engine usi --opponent-engine-cmd "$YO_CMD" --opponent-engine-option Threads=1
        --opponent-engine-option USI_Hash=16 --opponent-engine-option BookFile=no_book)
    fs4=("${fs[@]:0:6}" --opponent-nodes $((4 * FS_NODES)))
    GAMES=$SUITE_GAMES match transfer-fs-seed8 "${unreached[@]}" --play-seed 8 "${fs[@]}"
    GAMES=$SUITE_GAMES NODES=$((4 * NODES)) match transfer-hi-fs "${unreached[@]}" --play-seed 7 "${fs4[@]}"
    GAMES=$SUITE_GAMES NODES=$((4 * NODES)) match transfer-hi-fs-seed8 "${unreached[@]}" --play-seed 8 "${fs4[@]}"
    GAMES=$SUITE_GAMES NODES=$((4 * NODES)) match transfer-hi-yo "${unreached[@]}" --play-seed 7 \
        "${yo[@]}" --opponent-nodes $((4 * YO_NODES))
    GAMES=$SUITE_GAMES NODES=$((4 * NODES)) match transfer-hi-yo1k "${unreached[@]}" --play-seed 7 \
        "${yo[@]}" --opponent-nodes "$YO_NODES"
    echo "== the suite's budgets: Fairy-Stockfish, the built-in engine at 4 x NODES, YaneuraOu"
    python3 "$SCRIPTS/opening-transfer.py" "$OUT/held-suitefs-none.csa" "$OUT/held-suite4k-none.csa" \
        "$OUT/held-third-none.csa"
    echo "== control: Fairy-Stockfish on two seeds"
    python3 "$SCRIPTS/opening-transfer.py" "$OUT/held-suitefs-none.csa" "$OUT/transfer-fs-seed8.csa"
    echo "== four times the budgets: Fairy-Stockfish, YaneuraOu at 4 x and 1 x YO_NODES"
    python3 "$SCRIPTS/opening-transfer.py" "$OUT/transfer-hi-fs.csa" "$OUT/transfer-hi-yo.csa" \
        "$OUT/transfer-hi-yo1k.csa"
    echo "== control: Fairy-Stockfish on two seeds, four times the budgets"
    python3 "$SCRIPTS/opening-transfer.py" "$OUT/transfer-hi-fs.csa" "$OUT/transfer-hi-fs-seed8.csa"
    echo "== the value at the book's exit (the built-in engine at $GROW_NODES_LOW nodes)"
    for name in held-suitefs-none held-suite4k-none held-third-none transfer-hi-fs transfer-hi-yo transfer-hi-yo1k; do
        python3 "$SCRIPTS/exit-value.py" "$OUT/$name.csa" 0 "$BIN/worker" "$GROW_NODES_LOW"
    done
fi

# Held out at four times the suite's budgets (ROWS=held4x, rows `held4x-*`; issue 44):
# at the suite's budgets the held-out opponents share nothing measurable of what the
# openings decide (ROWS=transfer), at four times them they start to, so this is where
# a book learned against a pool can gain against an opponent outside it. The book
# (`held4x-cluster`): a copy of the held-out book learned on the suite by the
# coordinator through workers, its two local built-in workers and HELD4X_FS_WORKERS [1]
# Fairy-Stockfish worker processes beside them (`--engine-id Fairy-Stockfish`: that
# opponent's searches go to those), HELD4X_LEARN_GAMES [10000: 28 minutes on two shared
# cores, 6.0 games/s] games, the book side at 4 x NODES against a pool of the
# built-in engine at 2, 4 and 8 x NODES and Fairy-Stockfish at 4 x FS_NODES. Then
# matched on the suite with no book and the minimax book beside it, the book side at
# 4 x NODES, against a judge outside the pool, engine and budget: YaneuraOu's material
# build (YO_CMD, as ROWS=third) at 4 x YO_NODES; HELD4X_GAMES [2000] games a row. With
# the transfer measurement of the same no-book row against Fairy-Stockfish at 4 x
# FS_NODES (`transfer-hi-fs`, as ROWS=transfer makes it): how much of what the
# openings decide the pool's external engine and the judge share.
if wanted held4x; then
    held_book
    SUITE_OPENINGS=${SUITE_OPENINGS:-100}
    SUITE_PLIES=${SUITE_PLIES:-2-4}
    [ -s "$OUT/suite.txt" ] || python3 "$SCRIPTS/book-openings.py" "$OUT/held-minimax.db2016" \
        "$SUITE_PLIES" "$SUITE_OPENINGS" 1 > "$OUT/suite.txt"
    YO_CMD=${YO_CMD:?ROWS=held4x needs YO_CMD, a YaneuraOu material build}
    YO_NODES=${YO_NODES:-1000}
    HELD4X_LEARN_GAMES=${HELD4X_LEARN_GAMES:-10000}
    HELD4X_GAMES=${HELD4X_GAMES:-2000}
    HELD4X_FS_WORKERS=${HELD4X_FS_WORKERS:-1}
    HELD4X_PORT=${HELD4X_PORT:-50778}
    if [ ! -d "$OUT/held4x-cluster.db" ]; then
        rm -rf "$OUT/held4x-cluster.tmp"
        cp -r "$OUT/held.db" "$OUT/held4x-cluster.tmp"
        learn=(--db "$OUT/held4x-cluster.tmp" --listen "127.0.0.1:$HELD4X_PORT" --local-workers 2
            --local-slots 1 --think-limit 0 --learn-openings "$OUT/suite.txt"
            --learn-games "$HELD4X_LEARN_GAMES" --learn-concurrency 4 --learn-nodes $((4 * NODES))
            --learn-seed 5 --learn-opponent "--nodes $((2 * NODES))"
            --learn-opponent "--nodes $((4 * NODES))" --learn-opponent "--nodes $((8 * NODES))"
            --learn-opponent "--engine-cmd ${fs[3]} --engine-option UCI_Variant=shogi --engine-id Fairy-Stockfish --nodes $((4 * FS_NODES))")
        echo "+ $BIN/coordinator ${learn[*]}" >&2
        /usr/bin/time -f "%e %U %S" -o "$OUT/held4x-cluster.time" "$BIN/coordinator" "${learn[@]}" \
            2> "$OUT/held4x-cluster.learn.log" &
        coordinator=$! workers=()
        sleep 2
        for i in $(seq "$HELD4X_FS_WORKERS"); do
            worker=("$BIN/worker" --coordinator "http://127.0.0.1:$HELD4X_PORT" --slots 1 --engine usi
                --engine-cmd "${fs[3]}" --engine-option UCI_Variant=shogi --worker-id "held4x-fs-$i")
            echo "+ ${worker[*]}" >&2
            "${worker[@]}" 2> "$OUT/held4x-cluster.worker-$i.log" &
            workers+=($!)
        done
        wait "$coordinator"
        # Workers wait for the next coordinator; this one was the last.
        kill "${workers[@]}" 2> /dev/null || true
        wait "${workers[@]}" 2> /dev/null || true
        mv "$OUT/held4x-cluster.tmp" "$OUT/held4x-cluster.db"
    fi
    echo "== held4x-cluster: $HELD4X_LEARN_GAMES learning games, wall/user/system s: $(cat "$OUT/held4x-cluster.time")"
    # The games counted per learning opponent.
    "$BIN/book-tools" stats --db "$OUT/held4x-cluster.db" 2> /dev/null |
        awk '/^games recorded/ { on = 1 } /^games through/ { on = 0 } on' || true
    suite=(--openings "$OUT/suite.txt" --repeat-openings --play-seed 7)
    yo=(--opponent-engine usi --opponent-engine-cmd "$YO_CMD" --opponent-engine-option Threads=1
        --opponent-engine-option USI_Hash=16 --opponent-engine-option BookFile=no_book
        --opponent-nodes $((4 * YO_NODES)))
    row() { GAMES=$HELD4X_GAMES NODES=$((4 * NODES)) match "held4x-$1" "${@:2}" "${suite[@]}" "${yo[@]}"; }
    row none --book "$OUT/unreached.db2016"
    row minimax --db "$OUT/held.db" --book-moves best
    row cluster --db "$OUT/held4x-cluster.db" --book-moves results
    # The transfer row of ROWS=transfer, the same definition (GAMES: SUITE_GAMES there).
    GAMES=$HELD4X_GAMES NODES=$((4 * NODES)) match transfer-hi-fs --book "$OUT/unreached.db2016" \
        --openings "$OUT/suite.txt" --repeat-openings --play-seed 7 "${fs[@]:0:6}" \
        --opponent-nodes $((4 * FS_NODES))
    echo "== four times the budgets: Fairy-Stockfish at $((4 * FS_NODES)) (in the pool) ~ YaneuraOu at $((4 * YO_NODES)) (the judge)"
    python3 "$SCRIPTS/opening-transfer.py" "$OUT/transfer-hi-fs.csa" "$OUT/held4x-none.csa"
fi

if wanted noise; then
    for book in high low; do
        budget=$([ "$book" = high ] && echo 300000 || echo "$GROW_NODES_LOW")
        echo "== evaluator noise, $book (budget $budget nodes)"
        [ -s "$OUT/noise-$book.txt" ] || python3 "$SCRIPTS/evaluator-noise.py" "$OUT/$book-minimax.db2016" \
            "$BIN/book-tools" 200 "$budget" > "$OUT/noise-$book.txt"
        cat "$OUT/noise-$book.txt"
    done
fi

python3 - "$OUT" <<'EOF'
import json, math, pathlib, sys
out = pathlib.Path(sys.argv[1])
print(f"\n{'row':<22} {'games':>5} {'distinct':>8} {'pairs':>5} {'elo (pentanomial, 95 %)':<26} {'los':>6} {'book/game':>9}")
for path in sorted(out.glob("*.json")):
    if path.stat().st_size == 0:
        continue  # a match still running (its JSON is opened at start)
    r = json.loads(path.read_text())
    p = r["pentanomial"]
    mark = ""
    if p is None and r.get("pentanomial_counts"):
        # Withheld by `match` (a book no game reaches: the engine alone, the
        # baseline the other rows are read against; or fewer than 95 % distinct
        # games): the pentanomial estimate over pairs all the same, marked `*`.
        mark = "*"
        c = r["pentanomial_counts"]; n = sum(c)
        scores = [0, 0.25, 0.5, 0.75, 1]
        m = sum(k * s for k, s in zip(c, scores)) / n
        v = sum(k * (s - m) ** 2 for k, s in zip(c, scores)) / n
        e = lambda x: -400 * math.log10(1 / min(max(x, 1e-9), 1 - 1e-9) - 1)
        h = 1.96 * math.sqrt(v / n)
        p = {"elo": e(m), "elo_low": e(m - h), "elo_high": e(m + h)}
    elo = "withheld" if p is None else (
        f"{p['elo']:+.1f} [{p['elo_low']:+.1f}, {p['elo_high']:+.1f}]{mark}"
        if None not in (p["elo"], p["elo_low"], p["elo_high"]) else "inf")
    los = "-" if r["los"] is None else f"{r['los']:.3f}"
    print(f"{path.stem:<22} {r['games']:>5} {r['distinct_games']:>8} {r['pairs']:>5} {elo:<26} {los:>6} "
          f"{r['coverage']['own_book_moves_per_game']:>9.2f}")

# Held-out rows read against the no-book row of the same opponent: the Elo
# difference over pairs, with a 95 % interval (delta method, independent rows).
def pair_stats(r):
    c = r["pentanomial_counts"]; n = sum(c)
    scores = [0, 0.25, 0.5, 0.75, 1]
    m = sum(k * s for k, s in zip(c, scores)) / n
    v = sum(k * (s - m) ** 2 for k, s in zip(c, scores)) / n
    return m, v / n
def elo(m):
    m = min(max(m, 1e-9), 1 - 1e-9)
    return -400 * math.log10(1 / m - 1)
rows = {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("held*-*.json")) if p.stat().st_size}
for name, r in rows.items():
    # held-AGAINST-BOOK read against held-AGAINST-none; held4x-BOOK against held4x-none.
    prefix, _, rest = name.partition("-")
    against, book = (rest.partition("-")[::2]) if prefix == "held" else ("", rest)
    base = rows.get(f"{prefix}-{against}-none" if against else f"{prefix}-none")
    if book == "none" or base is None:
        continue
    (m1, v1), (m0, v0) = pair_stats(r), pair_stats(base)
    slope = lambda m: 400 / (math.log(10) * max(m * (1 - m), 1e-9))
    d = elo(m1) - elo(m0)
    h = 1.96 * math.sqrt((slope(m1)) ** 2 * v1 + (slope(m0)) ** 2 * v0)
    print(f"{name:<22} against no book: {d:+.1f} [{d - h:+.1f}, {d + h:+.1f}]")
EOF
