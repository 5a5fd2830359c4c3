#!/usr/bin/env python3
"""Positions read off a `book-tools match --out-games` file, as lines `roots set` and
`match --openings` read.

    scripts/match-positions.py openings GAMES.csa > openings.txt
    scripts/match-positions.py exits GAMES.csa > exits.txt

`openings`: each pair's opening (the moves marked `'opening`), once per distinct
position, in game order: the same suite replayed against other books.
`exits`: for each game, the position where the book under test (the side whose
`N` line names a book) first had to move and played no book move: where its book
ended. Distinct positions, most frequent first. Used as roots, they aim growth at
the positions games reach (BENCHMARKS.md "Book strength"). Needs cshogi (PyPI).
"""
import collections
import sys

import cshogi
from match_games import games


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("openings", "exits"):
        raise SystemExit(__doc__)
    kind, path = sys.argv[1], sys.argv[2]
    found = collections.Counter()
    order = []
    for side, moves in games(path, lambda sign: cshogi.BLACK if sign == "+" else cshogi.WHITE):
        board = cshogi.Board()
        played = []
        for csa, comment in moves:
            if kind == "openings" and comment != "opening":
                break
            if kind == "exits" and comment != "opening" and board.turn == side and comment != "book":
                break
            move = board.move_from_csa(csa)
            played.append(cshogi.move_to_usi(move))
            board.push(move)
        else:
            if kind == "exits":
                continue  # the game ended inside the book
        line = "startpos" + (" moves " + " ".join(played) if played else "")
        if kind == "exits" and side is None:
            continue
        if line not in found:
            order.append(line)
        found[line] += 1
    if kind == "exits":
        order.sort(key=lambda line: -found[line])
    for line in order:
        print(line)
    print(f"{len(order)} distinct positions from {sum(found.values())} games", file=sys.stderr)


if __name__ == "__main__":
    main()
