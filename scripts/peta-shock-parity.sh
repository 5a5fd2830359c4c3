#!/usr/bin/env bash
# Entry-by-entry parity of our tera-shock export with YaneuraOu's `makebook
# peta_shock` on the same book (BENCHMARKS.md, "Parity with YaneuraOu's makebook
# peta_shock"). Not part of the tests: it needs YaneuraOu's source, which CI cannot
# fetch.
#
# usage: scripts/peta-shock-parity.sh YANEURAOU_SOURCE_DIR STORE WORKDIR
#   YANEURAOU_SOURCE_DIR  the `source` folder of a YaneuraOu checkout (built here with
#                         the makebook command if it holds no YaneuraOu-by-gcc yet)
#   STORE                 a book store (not in use by a coordinator)
#   WORKDIR               where the books are written (created)
set -euo pipefail
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"
[ $# -eq 3 ] || { sed -n '2,12p' "$0"; exit 2; }
src=$(cd "$1" && pwd)
store=$2
work=$(mkdir -p "$3" && cd "$3" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -x "$src/YaneuraOu-by-gcc" ]; then
    make -C "$src" -j"$(nproc)" normal COMPILER=g++ TARGET_CPU=AVX2 \
        YANEURAOU_EDITION=YANEURAOU_ENGINE_MATERIAL EXTRA_CPPFLAGS=-DENABLE_MAKEBOOK_CMD
fi
cargo build --release --manifest-path "$root/Cargo.toml" -p book-tools
tools="$root/target/release/book-tools"
mkdir -p "$work/book"
"$tools" export --db "$store" --export-raw --out "$work/book/raw.db"
"$tools" export --db "$store" --out "$work/ours.db"
printf 'setoption name BookDir value %s\nisready\nmakebook peta_shock raw.db peta.db\nquit\n' \
    "$work/book" | "$src/YaneuraOu-by-gcc" > "$work/peta_shock.log"
grep -q "Making a peta-shock book has been completed" "$work/peta_shock.log" || {
    echo "makebook peta_shock failed; see $work/peta_shock.log" >&2
    exit 1
}
python3 "$root/scripts/compare_books.py" "$work/book/peta.db" "$work/ours.db" 5
