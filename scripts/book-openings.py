#!/usr/bin/env python3
"""Openings drawn from a YaneuraOu DB2016 book: positions reached from the start
through book moves into positions the book holds, at plies LO to HI, N of them
sampled with a seed, written as `startpos moves ...` lines that `match --openings`
and `learn --openings` read.

    scripts/book-openings.py BOOK.db2016 LO-HI N SEED > openings.txt

A suite of many openings judges many of a book's decisions, where games from the
start position judge little more than its first move (BENCHMARKS.md, "Learning
that generalises"). Needs cshogi (PyPI).
"""
import random
import sys

import cshogi

import db2016


def key(board):
    return board.sfen().rsplit(" ", 1)[0]


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    book = db2016.load(sys.argv[1])
    lo, _, hi = sys.argv[2].partition("-")
    lo, hi = int(lo), int(hi or lo)
    count, seed = int(sys.argv[3]), int(sys.argv[4])
    seen, chosen = set(), []
    frontier = [[]]
    for ply in range(1, hi + 1):
        reached = []
        for line in frontier:
            board = cshogi.Board()
            for m in line:
                board.push_usi(m)
            for move, _, _ in book.get(key(board), []):
                if move in ("none", "resign", "win"):
                    continue
                board.push_usi(move)
                k = key(board)
                if k in book and k not in seen:
                    seen.add(k)
                    reached.append(line + [move])
                board.pop()
        if ply >= lo:
            chosen.extend(reached)
        frontier = reached
    lines = sorted(" ".join(line) for line in chosen)
    random.Random(seed).shuffle(lines)
    if len(lines) < count:
        print(f"book-openings: only {len(lines)} positions at plies {lo}-{hi}", file=sys.stderr)
    for line in sorted(lines[:count]):
        print(f"startpos moves {line}")


if __name__ == "__main__":
    main()
