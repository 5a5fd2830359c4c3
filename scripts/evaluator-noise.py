#!/usr/bin/env python3
"""How large are the differences between a book's move values, against how much the
evaluator's own values move when the same position is evaluated again?

    scripts/evaluator-noise.py BOOK.db2016 BOOK_TOOLS [SAMPLE] [BUDGET] [SEED]
        [--go depth] [-- EVALUATE_FLAGS...]

BOOK.db2016 is a text export of the book under test (its `sfen` lines are the
thought positions); BOOK_TOOLS is the `book-tools` binary. SAMPLE positions
(default 200) are drawn with the seed SEED (default 1) among the positions with at
least two moves. Each is evaluated by the built-in engine (`book-tools evaluate`,
every legal move valued) at BUDGET nodes (default 300000, the book's default
budget) twice, then at 1.5x and at 10x the budget. With `--go depth` BUDGET is a
depth (default 6), and the second evaluations are at the same depth, one ply and
three plies deeper. Flags after `--` go to `book-tools evaluate`, e.g. a USI
engine: `-- --engine usi --engine-cmd /usr/games/fairy-stockfish --engine-option
UCI_Variant=shogi`. Prints, per comparison with the first evaluation:

- how often the two evaluations are identical (the built-in engine at a node
  limit is deterministic, as is a single-threaded USI engine started afresh, so a
  second evaluation at the same budget is expected to be identical: its noise is
  what a different budget does, not chance);
- the mean absolute change of a move's value, over all moves and over the five best;
- how often the best move changes;
- beside it, the spread the book chooses from: the gap between the best and the
  second-best move at the first evaluation (median), and how often that gap is
  smaller than the mean change of the five best (the choice lies inside the noise).

See BENCHMARKS.md "Book strength".
"""
import argparse
import random
import statistics
import subprocess
import sys


def positions(path):
    """SFENs of the book's positions that have at least two moves."""
    result, sfen, moves = [], None, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("sfen "):
                if sfen is not None and moves >= 2:
                    result.append(sfen)
                sfen, moves = line[5:].strip(), 0
            elif line and not line.startswith("#") and sfen is not None:
                moves += 1
    if sfen is not None and moves >= 2:
        result.append(sfen)
    return result


def evaluate(book_tools, sfen, go, limit, flags):
    """Move -> value of every legal move, by `book-tools evaluate`."""
    out = subprocess.run(
        [book_tools, "evaluate", f"--{go}", str(limit), *flags, "sfen " + sfen],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    values = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    if not values:
        raise SystemExit(f"no values for {sfen}: {out!r}")
    return values


def ranked(values):
    return sorted(values, key=lambda m: (-values[m], m))


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        flags = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("book")
    parser.add_argument("book_tools")
    parser.add_argument("sample", type=int, nargs="?", default=200)
    parser.add_argument("budget", type=int, nargs="?")
    parser.add_argument("seed", type=int, nargs="?", default=1)
    parser.add_argument("--go", choices=["nodes", "depth"], default="nodes")
    args = parser.parse_args(argv)
    path, book_tools, sample, seed, go = args.book, args.book_tools, args.sample, args.seed, args.go
    pool = positions(path)
    random.Random(seed).shuffle(pool)
    chosen = pool[:sample]
    if go == "nodes":
        budget = args.budget or 300000
        runs = [("again", budget), ("1.5x", budget * 3 // 2), ("10x", budget * 10)]
    else:
        budget = args.budget or 6
        runs = [("again", budget), ("+1 ply", budget + 1), ("+3 plies", budget + 3)]
    gaps = []
    stats = {name: {"same": 0, "all": [], "top5": [], "best_changed": 0} for name, _ in runs}
    inside = {name: 0 for name, _ in runs}
    for i, sfen in enumerate(chosen, 1):
        first = evaluate(book_tools, sfen, go, budget, flags)
        order = ranked(first)
        gap = first[order[0]] - first[order[1]]
        gaps.append(gap)
        for name, nodes in runs:
            other = evaluate(book_tools, sfen, go, nodes, flags)
            s = stats[name]
            s["same"] += other == first
            changes = [abs(other[m] - first[m]) for m in first if m in other]
            top5 = [abs(other[m] - first[m]) for m in order[:5] if m in other]
            s["all"].append(statistics.mean(changes))
            s["top5"].append(statistics.mean(top5))
            s["best_changed"] += ranked(other)[0] != order[0]
            inside[name] += gap < statistics.mean(top5)
        if i % 20 == 0:
            print(f"{i}/{len(chosen)} positions", file=sys.stderr)
    n = len(chosen)
    print(f"positions: {n} of {len(pool)} with two moves or more (seed {seed}), budget {go} {budget}")
    print(f"gap best - second at the first evaluation: median {statistics.median(gaps)} cp, "
          f"mean {statistics.mean(gaps):.1f} cp, zero in {sum(g == 0 for g in gaps)} positions")
    print("| second evaluation | identical | mean abs change, all moves | five best | best move changed | gap < change of five best |")
    print("|---|---|---|---|---|---|")
    for name, nodes in runs:
        s = stats[name]
        print(
            f"| {name} ({go} {nodes}) | {s['same']} of {n} | {statistics.mean(s['all']):.1f} cp "
            f"| {statistics.mean(s['top5']):.1f} cp | {s['best_changed']} ({100 * s['best_changed'] / n:.1f} %) "
            f"| {inside[name]} ({100 * inside[name] / n:.1f} %) |"
        )


if __name__ == "__main__":
    main()
