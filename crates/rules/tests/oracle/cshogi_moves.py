"""Independent oracle for the rules tests: legal moves and perft(2) by cshogi.

Reads one SFEN per line on stdin; prints, per position, one line:
`<perft2> <move> <move> ...` with the legal moves in USI, sorted.
"""
import sys

import cshogi


def perft(board, depth):
    if depth == 0:
        return 1
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += perft(board, depth - 1)
        board.pop()
    return total


def main():
    board = cshogi.Board()
    for line in sys.stdin:
        sfen = line.strip()
        if not sfen:
            continue
        board.set_sfen(sfen)
        moves = sorted(cshogi.move_to_usi(m) for m in board.legal_moves)
        print(perft(board, 2), *moves)


if __name__ == "__main__":
    main()
