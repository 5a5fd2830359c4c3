#!/usr/bin/env python3
"""Where two text exports of one book choose different best moves, which choice
does a deep search agree with?

    scripts/export-disagreement.py A.db2016 B.db2016 WORKER DEEP [LIMIT]

The positions held by both files whose first (best) move differs, each strictly
best in its file, shuffled with seed 1; at most LIMIT [200] of them are searched
by the engine (the built-in `worker` binary, run with `--usi`, or any USI
engine's command) with `go nodes DEEP`. Prints how often the
deep search plays A's move and B's move. Used for the leaf discount
(BENCHMARKS.md "Moves nobody thought").
"""
import random
import sys

import db2016
from usi_client import Engine, engine_command


def strictly_best_first(moves):
    return len(moves) == 1 or moves[0][1] > moves[1][1]


def main():
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__)
    a, b = db2016.load(sys.argv[1]), db2016.load(sys.argv[2])
    deep = int(sys.argv[4])
    limit = int(sys.argv[5]) if len(sys.argv) == 6 else 200
    differ = [
        k
        for k in a
        if k in b
        and a[k][0][0] != b[k][0][0]
        and strictly_best_first(a[k])
        and strictly_best_first(b[k])
    ]
    random.seed(1)
    random.shuffle(differ)
    print(f"{len(differ)} positions choose differently; searching {min(limit, len(differ))}")
    engine = Engine(engine_command(sys.argv[3]))
    n = agree_a = agree_b = 0
    for sfen in differ[:limit]:
        move = engine.best_at(f"sfen {sfen} 1", deep)
        n += 1
        agree_a += move == a[sfen][0][0]
        agree_b += move == b[sfen][0][0]
    if n == 0:
        raise SystemExit("the two files choose alike everywhere")
    print(
        f"positions {n}: deep = {sys.argv[1]} {agree_a} ({100 * agree_a / n:.1f} %), "
        f"deep = {sys.argv[2]} {agree_b} ({100 * agree_b / n:.1f} %)"
    )


if __name__ == "__main__":
    main()
