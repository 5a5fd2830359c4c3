#!/usr/bin/env python3
"""Does a book's move agree with a much deeper search more often than the match
engine's own move does?

    scripts/book-agreement.py GAMES.csa ENGINE SHALLOW DEEP [LIMIT]
        [--go nodes|depth] [--option NAME=VALUE ...]

GAMES.csa is the `--out-games` file of a `book-tools match`; the positions are
the first book move of each game (the position where the book under test played
its first book move, once per position), at most LIMIT [200]. For each, the
engine searches SHALLOW (the match's budget) and DEEP (`go nodes N`, or
`go depth N` with `--go depth`). ENGINE is the built-in engine's `worker`
binary (run as `worker --usi`) or any USI engine's command, e.g.
`/usr/games/fairy-stockfish --option UCI_Variant=shogi`. Prints how often the
book's move, and the shallow search's move, equal the deep search's. Needs
cshogi (PyPI) to replay the CSA moves. See BENCHMARKS.md "Book strength".
"""
import argparse

import cshogi
from match_games import games
from usi_client import Engine, engine_command


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("games")
    parser.add_argument("engine")
    parser.add_argument("shallow", type=int)
    parser.add_argument("deep", type=int)
    parser.add_argument("limit", type=int, nargs="?", default=200)
    parser.add_argument("--go", choices=["nodes", "depth"], default="nodes")
    parser.add_argument("--option", action="append", default=[])
    args = parser.parse_args()
    path, shallow, deep, limit = args.games, args.shallow, args.deep, args.limit
    engine = Engine(engine_command(args.engine), args.option, args.go)
    seen = set()
    n = book_deep = shallow_deep = book_shallow = 0
    for _, moves in games(path, lambda sign: sign):
        if n >= limit:
            break
        board = cshogi.Board()
        played = []
        for csa, source in moves:
            move = board.move_from_csa(csa)
            usi = cshogi.move_to_usi(move)
            if source == "book":
                if board.sfen() not in seen:
                    seen.add(board.sfen())
                    shallow_move = engine.best(played, shallow)
                    deep_move = engine.best(played, deep)
                    n += 1
                    book_deep += usi == deep_move
                    shallow_deep += shallow_move == deep_move
                    book_shallow += usi == shallow_move
                break
            played.append(usi)
            board.push(move)
    if n == 0:
        raise SystemExit("no game of the file has a book move")
    print(
        f"positions {n}: book = deep {book_deep} ({100 * book_deep / n:.1f} %), "
        f"shallow = deep {shallow_deep} ({100 * shallow_deep / n:.1f} %), "
        f"book = shallow {book_shallow} ({100 * book_shallow / n:.1f} %)"
    )


if __name__ == "__main__":
    main()
