#!/usr/bin/env python3
"""Does a book's move agree with a much deeper search more often than the match
engine's own move does?

    scripts/book-agreement.py GAMES.csa WORKER SHALLOW DEEP [LIMIT]

GAMES.csa is the `--out-games` file of a `book-tools match`; the positions are
the first book move of each game (the position where the book under test played
its first book move, once per position). For each, the built-in engine (WORKER
is the `worker` binary, run as `worker --usi`) searches SHALLOW nodes (the
match's budget) and DEEP nodes. Prints how often the book's move, and the
shallow search's move, equal the deep search's. Needs cshogi (PyPI) to replay
the CSA moves. See BENCHMARKS.md "Book strength".
"""
import subprocess
import sys

import cshogi
from match_games import games


class Engine:
    def __init__(self, command):
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.send("usi")
        self.wait("usiok")
        self.send("isready")
        self.wait("readyok")

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def wait(self, token):
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("the engine ended")
            if line.startswith(token):
                return line

    def best(self, moves, nodes):
        self.send("usinewgame")
        self.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        self.send(f"go nodes {nodes}")
        return self.wait("bestmove").split()[1]


def main():
    path, worker, shallow, deep = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    engine = Engine([worker, "--usi"])
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
