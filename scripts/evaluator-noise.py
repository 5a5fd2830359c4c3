#!/usr/bin/env python3
"""How large are the differences between a book's move values, against how much the
evaluator's own values move when the same position is evaluated again?

    scripts/evaluator-noise.py BOOK.db2016 BOOK_TOOLS [SAMPLE] [BUDGET] [SEED]

BOOK.db2016 is a text export of the book under test (its `sfen` lines are the
thought positions); BOOK_TOOLS is the `book-tools` binary. SAMPLE positions
(default 200) are drawn with the seed SEED (default 1) among the positions with at
least two moves. Each is evaluated by the built-in engine (`book-tools evaluate`,
every legal move valued) at BUDGET nodes (default 300000, the book's default
budget) twice, then at 1.5x and at 10x the budget. Prints, per comparison with the
first evaluation:

- how often the two evaluations are identical (the built-in engine at a node
  limit is deterministic, so a second evaluation at the same budget is expected to
  be identical: its noise is what a different budget does, not chance);
- the mean absolute change of a move's value, over all moves and over the five best;
- how often the best move changes;
- beside it, the spread the book chooses from: the gap between the best and the
  second-best move at the first evaluation (median), and how often that gap is
  smaller than the mean change of the five best (the choice lies inside the noise).

See BENCHMARKS.md "Book strength".
"""
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


def evaluate(book_tools, sfen, nodes):
    """Move -> value of every legal move, by `book-tools evaluate`."""
    out = subprocess.run(
        [book_tools, "evaluate", "--nodes", str(nodes), "sfen " + sfen],
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
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    path, book_tools = sys.argv[1], sys.argv[2]
    sample = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    budget = int(sys.argv[4]) if len(sys.argv) > 4 else 300000
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    pool = positions(path)
    random.Random(seed).shuffle(pool)
    chosen = pool[:sample]
    runs = [("again", budget), ("1.5x", budget * 3 // 2), ("10x", budget * 10)]
    gaps = []
    stats = {name: {"same": 0, "all": [], "top5": [], "best_changed": 0} for name, _ in runs}
    inside = {name: 0 for name, _ in runs}
    for i, sfen in enumerate(chosen, 1):
        first = evaluate(book_tools, sfen, budget)
        order = ranked(first)
        gap = first[order[0]] - first[order[1]]
        gaps.append(gap)
        for name, nodes in runs:
            other = evaluate(book_tools, sfen, nodes)
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
    print(f"positions: {n} of {len(pool)} with two moves or more (seed {seed}), budget {budget} nodes")
    print(f"gap best - second at the first evaluation: median {statistics.median(gaps)} cp, "
          f"mean {statistics.mean(gaps):.1f} cp, zero in {sum(g == 0 for g in gaps)} positions")
    print("| second evaluation | identical | mean abs change, all moves | five best | best move changed | gap < change of five best |")
    print("|---|---|---|---|---|---|")
    for name, nodes in runs:
        s = stats[name]
        print(
            f"| {name} ({nodes} nodes) | {s['same']} of {n} | {statistics.mean(s['all']):.1f} cp "
            f"| {statistics.mean(s['top5']):.1f} cp | {s['best_changed']} ({100 * s['best_changed'] / n:.1f} %) "
            f"| {inside[name]} ({100 * inside[name] / n:.1f} %) |"
        )


if __name__ == "__main__":
    main()
