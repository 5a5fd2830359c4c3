#!/usr/bin/env bash
# Regenerates the peta_shock parity fixtures: the small raw books of
# scripts/make-cycle-books.py and YaneuraOu's `makebook peta_shock` of each, in
# book-tools/tests/fixtures/peta_shock/ (NAME.raw.db, NAME.peta.db). The test
# book-tools/tests/it/peta_shock_fixtures.rs compares our export with them; CI cannot
# build YaneuraOu, so its outputs are committed.
#
# usage: scripts/peta-shock-fixtures.sh YANEURAOU_SOURCE_DIR [--compare]
#   YANEURAOU_SOURCE_DIR  the `source` folder of a YaneuraOu checkout (built here with
#                         the makebook command if it holds no YaneuraOu-by-gcc yet)
#   --compare             also import every book into a fresh store, export it with
#                         our book-tools and print scripts/compare_books.py's counts
#   Environment: SEED (default 1) is make-cycle-books.py's seed.
# The test lists the books on which our export agrees (AGREEING, asserted) and
# those on which it differs (DIFFERING, documented there): check both lists with
# --compare after regenerating.
set -euo pipefail
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '2,16p' "$0"; exit 2; }
src=$(cd "$1" && pwd)
compare=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/book-tools/tests/fixtures/peta_shock"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$src/YaneuraOu-by-gcc" ]; then
    make -C "$src" -j"$(nproc)" normal COMPILER=g++ TARGET_CPU=AVX2 \
        YANEURAOU_EDITION=YANEURAOU_ENGINE_MATERIAL EXTRA_CPPFLAGS=-DENABLE_MAKEBOOK_CMD
fi

mkdir -p "$out"
rm -f "$out"/*.raw.db "$out"/*.peta.db
python3 "$root/scripts/make-cycle-books.py" "$out" --seed "${SEED:-1}"

for raw in "$out"/*.raw.db; do
    name=$(basename "$raw" .raw.db)
    mkdir -p "$work/$name"
    cp "$raw" "$work/$name/raw.db"
    printf 'setoption name BookDir value %s\nisready\nmakebook peta_shock raw.db peta.db\nquit\n' \
        "$work/$name" | "$src/YaneuraOu-by-gcc" > "$work/$name/peta_shock.log"
    grep -q "Making a peta-shock book has been completed" "$work/$name/peta_shock.log" || {
        echo "makebook peta_shock failed on $name; log:" >&2
        cat "$work/$name/peta_shock.log" >&2
        exit 1
    }
    cp "$work/$name/peta.db" "$out/$name.peta.db"
    echo "$name: $(grep -E 'non-const_nodes|check-loops nodes|converged_moves' "$work/$name/peta_shock.log" | tr -s ' \n' ' ')"
done

if [ "$compare" = "--compare" ]; then
    cargo build --release --manifest-path "$root/Cargo.toml" -p book-tools
    tools="$root/target/release/book-tools"
    for raw in "$out"/*.raw.db; do
        name=$(basename "$raw" .raw.db)
        "$tools" import --create --db "$work/$name/store" "$raw" > "$work/$name/import.log" 2>&1
        "$tools" export --db "$work/$name/store" --out "$work/$name/ours.db" \
            > "$work/$name/export.log" 2>&1
        echo "== $name: $(grep -E '^solved' "$work/$name/export.log")"
        python3 "$root/scripts/compare_books.py" "$out/$name.peta.db" "$work/$name/ours.db" 3
    done
fi
