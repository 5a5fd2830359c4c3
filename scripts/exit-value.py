#!/usr/bin/env python3
"""Does an engine's value of the position where the book ends predict who wins?

    scripts/exit-value.py GAMES.csa AFTER ENGINE NODES [NAME=VALUE ...]

GAMES.csa is a `book-tools match --out-games` record. For each game, the position
after the book side's AFTER-th own engine move (0: the position where its engine
first moved, which is where a book ends) is searched by ENGINE (a USI engine, or
the `worker` binary for the built-in engine) at NODES nodes with the options
given; its value, from the book side's view, as a win rate (600 cp logistic), is
set against the book side's points in that game. Printed: the correlation over
games (its standard error about 1/sqrt(games)), the median absolute value, and
the score of the games whose value lies above the median against the others.

A learner that counted such a value beside a game's result would learn only what
the value predicts (BENCHMARKS.md "What there is to learn held out"). Needs cshogi
(PyPI).
"""
import math
import sys

import cshogi
from match_games import games, results
from usi_client import Engine, engine_command


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    path, after, engine_path, nodes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    engine = Engine(engine_command(engine_path), sys.argv[5:])
    found = list(games(path, lambda sign: cshogi.BLACK if sign == "+" else cshogi.WHITE))
    ends = results(path)
    if len(found) != len(ends):
        raise SystemExit(f"{path}: {len(found)} games but {len(ends)} result lines")
    values, rows = {}, []
    for (side, moves), end in zip(found, ends):
        if side is None:
            raise SystemExit(f"{path}: a game without a book side (no `N` line naming a book)")
        board, played, own = cshogi.Board(), [], 0
        for csa, comment in moves:
            if comment != "opening" and board.turn == side:
                if own == after:
                    break
                own += 1
            move = board.move_from_csa(csa)
            played.append(cshogi.move_to_usi(move))
            board.push(move)
        else:
            continue  # the game ended before that move
        points = 0.5 if "draw" in end else float(end.startswith("black") == (side == cshogi.BLACK))
        position = "startpos moves " + " ".join(played)
        if position not in values:
            values[position] = engine.value_at(position, nodes)
        if values[position] is not None:
            rows.append((max(-3000, min(3000, values[position])), points))
    n = len(rows)
    if n < 3:
        raise SystemExit("fewer than three games with a value")
    rates = [1 / (1 + math.exp(-v / 600)) for v, _ in rows]
    points = [p for _, p in rows]
    mr, mp = sum(rates) / n, sum(points) / n
    cov = sum((r - mr) * (p - mp) for r, p in zip(rates, points)) / n
    vr = sum((r - mr) ** 2 for r in rates) / n
    vp = sum((p - mp) ** 2 for p in points) / n
    corr = cov / math.sqrt(vr * vp) if vr > 0 and vp > 0 else float("nan")
    median = sorted(v for v, _ in rows)[n // 2]
    above = [p for v, p in rows if v > median]
    rest = [p for v, p in rows if v <= median]
    print(f"{path}, own move {after}, {engine_path} at {nodes} nodes: {n} games, "
          f"{len(values)} positions; correlation {corr:+.3f} (se {1 / math.sqrt(n):.3f}); "
          f"median |value| {sorted(abs(v) for v, _ in rows)[n // 2]} cp; score above the "
          f"median value {sum(above) / max(1, len(above)):.3f} ({len(above)} games), "
          f"the rest {sum(rest) / max(1, len(rest)):.3f} ({len(rest)})")


if __name__ == "__main__":
    main()
