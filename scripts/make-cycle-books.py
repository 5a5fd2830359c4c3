#!/usr/bin/env python3
"""Small raw YaneuraOu books for the peta_shock parity fixtures.

usage: make-cycle-books.py OUTDIR [--seed N]

Writes OUTDIR/<name>.raw.db, one raw DB2016 book per case: every entry lists every
legal move (cshogi's legal moves, non-promotions included, as `book-tools import`
requires) with a value from the side to move's view and a search depth that
`makebook peta_shock` and our export both ignore. The books are deterministic for a
seed. Kinds:

- cycle_*      hand-made: two kings walking in small boxes, so positions transpose
               and A->B->C->D->A repetition loops are everywhere; the exits are valued
               so that the loops are the best lines (cycle_draw), so that some
               positions leave them with a win (cycle_mixed), or so that a value
               leaves one lone loop (cycle_tiny).
- perpetual_*  a dragon checking a king that can only step between 1a and 1b (and
               other loops through 4a/4b/2a/2b): the checker's best other move is
               worth 0 (exit0), less (exitneg), -32000 (exitmate: no better exit),
               more (exitpos, the loop is off every best line), the same as exitneg
               with colours swapped (white), or 0 or -40 by the square of the
               checked king (split: a check loop that is the checked side's best
               line while its escapes tie with the draw).
- random_*     random neighbourhoods of sparse positions (kings, a dragon or rook, a
               few pieces): every king move inside a two-square box per king, checks
               often, other moves seldom, so repetitions and checks are frequent;
               random values including 0, +-31990 and +-32000, random search depths.
               random_perpetual_*: the perpetual_* positions with random values.
- twins_*      random books in which some entries are replaced by their colour-flipped
               twin: moves of other entries lead to a position that is not an entry but
               whose twin is. A book never holds both twins of a pair (peta_shock keeps
               the one read later, we keep the first: a documented difference).

Each book prints its entries, its moves into entries and its moves into the twin
of a position that is not an entry.

Regenerate the fixtures (inputs and YaneuraOu's outputs) with
scripts/peta-shock-fixtures.sh; the test is book-tools/tests/it/peta_shock_fixtures.rs.
"""
import argparse
import os
import random
from collections import deque

import cshogi

HAND_ORDER = "RBGSNLP"
RANKS = "abcdefghi"


# ---------------------------------------------------------------- SFEN helpers


def split_sfen(sfen):
    """(board, side, hand, ply) of an SFEN with or without ply."""
    parts = sfen.split()
    ply = int(parts[3]) if len(parts) > 3 else 1
    return parts[0], parts[1], parts[2], ply


def canonical_hand(hand):
    """Hands in the canonical order (R B G S N L P, black first)."""
    if hand == "-":
        return "-"
    counts = {}
    n = ""
    for c in hand:
        if c.isdigit():
            n += c
        else:
            counts[c] = counts.get(c, 0) + (int(n) if n else 1)
            n = ""
    out = ""
    for letters in (HAND_ORDER, HAND_ORDER.lower()):
        for c in letters:
            k = counts.get(c, 0)
            if k:
                out += (str(k) if k > 1 else "") + c
    return out or "-"


def board_cells(board):
    """The 81 cells of an SFEN board, rank a first, file 9 first ('' = empty)."""
    cells = []
    for row in board.split("/"):
        promo = ""
        for c in row:
            if c.isdigit():
                cells.extend([""] * int(c))
            elif c == "+":
                promo = "+"
            else:
                cells.append(promo + c)
                promo = ""
    assert len(cells) == 81, board
    return cells


def cells_board(cells):
    rows = []
    for r in range(9):
        s, empty = "", 0
        for c in cells[r * 9:(r + 1) * 9]:
            if not c:
                empty += 1
                continue
            if empty:
                s += str(empty)
                empty = 0
            s += c
        if empty:
            s += str(empty)
        rows.append(s)
    return "/".join(rows)


def flip_sfen(sfen):
    """The colour-flipped twin: board turned 180 degrees, colours of pieces, hands
    and side to move swapped; the ply is kept."""
    board, side, hand, ply = split_sfen(sfen)
    cells = [c.swapcase() for c in reversed(board_cells(board))]
    hand = canonical_hand(hand.swapcase()) if hand != "-" else "-"
    return f"{cells_board(cells)} {'w' if side == 'b' else 'b'} {hand} {ply}"


def key_of(sfen):
    """An entry's identity: the SFEN without ply, hands canonical."""
    board, side, hand, _ = split_sfen(sfen)
    return f"{board} {side} {canonical_hand(hand)}"


def flip_square(sq):
    return str(10 - int(sq[0])) + RANKS[8 - RANKS.index(sq[1])]


def flip_usi(usi):
    """A move of a position as the move of its colour-flipped twin."""
    if usi[1] == "*":
        return usi[:2] + flip_square(usi[2:4])
    return flip_square(usi[0:2]) + flip_square(usi[2:4]) + usi[4:]


def make_sfen(pieces, side, hand="-", ply=1):
    """An SFEN from {square: piece}, e.g. {'5i': 'K', '5a': 'k', '3b': '+R'}."""
    cells = [""] * 81
    for sq, p in pieces.items():
        f, r = int(sq[0]), RANKS.index(sq[1])
        cells[r * 9 + (9 - f)] = p
    return f"{cells_board(cells)} {side} {canonical_hand(hand)} {ply}"


def board_of(sfen):
    return cshogi.Board(sfen)


def usi_moves(board):
    return [cshogi.move_to_usi(m) for m in board.legal_moves]


def child_sfen(board, usi, ply):
    board.push_usi(usi)
    s = board.sfen()
    board.pop()
    b, side, hand, _ = split_sfen(s)
    return f"{b} {side} {hand} {ply}"


def king_square(board, colour):
    sfen = board.sfen()
    cells = board_cells(split_sfen(sfen)[0])
    k = "K" if colour == "b" else "k"
    i = cells.index(k)
    return str(9 - i % 9) + RANKS[i // 9]


# ---------------------------------------------------------------- books


class Book:
    """Entries keyed by SFEN without ply: (SFEN with ply, [(move, value, depth)])."""

    def __init__(self, name):
        self.name = name
        self.entries = {}

    def __contains__(self, sfen):
        return key_of(sfen) in self.entries

    def has_twin(self, sfen):
        return key_of(flip_sfen(sfen)) in self.entries

    def add(self, sfen, value_of, depth_of=lambda usi: 0):
        """Adds the position with every legal move valued by value_of(usi)."""
        k = key_of(sfen)
        assert k not in self.entries, sfen
        assert key_of(flip_sfen(sfen)) not in self.entries, ("twin present", sfen)
        board = board_of(sfen)
        moves = usi_moves(board)
        assert moves, ("no legal move", sfen)
        self.entries[k] = (sfen, [(m, value_of(m), depth_of(m)) for m in moves])

    def write(self, outdir):
        path = os.path.join(outdir, self.name + ".raw.db")
        lines = ["#YANEURAOU-DB2016 1.00", f"# NOE:{len(self.entries)}"]
        for _, (sfen, moves) in sorted(self.entries.items(), key=lambda kv: kv[1][0]):
            lines.append("sfen " + sfen)
            for usi, value, depth in moves:
                lines.append(f"{usi} none {value} {depth} 1")
        with open(path, "w", newline="\r\n") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def edges(self):
        """(moves into an entry, moves into the twin of an absent position)."""
        direct = twin = 0
        for sfen, moves in self.entries.values():
            board = board_of(sfen)
            for usi, _, _ in moves:
                c = child_sfen(board, usi, 1)
                if c in self:
                    direct += 1
                elif self.has_twin(c):
                    twin += 1
        return direct, twin


def closure(root, may_enter, max_ply):
    """Every position reachable from root by moves for which may_enter(board,
    usi, child) holds, within max_ply plies, with its first ply; positions
    without legal moves are left out (they stay leaf moves)."""
    seen = {key_of(root): root}
    queue = deque([root])
    while queue:
        sfen = queue.popleft()
        _, _, _, ply = split_sfen(sfen)
        if ply - split_sfen(root)[3] >= max_ply:
            continue
        board = board_of(sfen)
        for usi in usi_moves(board):
            child = child_sfen(board, usi, ply + 1)
            if may_enter(board, usi, child):
                take(seen, queue, child)
    return list(seen.values())


def take(seen, queue, child, skip_twins=False):
    """Adds child to the walk's positions (seen, by key) and its queue unless it
    is there already (or, with skip_twins, its colour-flipped twin is) or it has
    no legal move (such positions stay leaf moves)."""
    k = key_of(child)
    if k in seen or (skip_twins and key_of(flip_sfen(child)) in seen):
        return
    if not usi_moves(board_of(child)):
        return
    seen[k] = child
    queue.append(child)


def in_box(sfen, black_box, white_box):
    board = board_of(sfen)
    return king_square(board, "b") in black_box and king_square(board, "w") in white_box


# ---- a. hand-made repetition cycles

BLACK_BOX = {"4h", "5h", "6h", "4i", "5i", "6i"}
WHITE_BOX = {"4a", "5a", "6a", "4b", "5b", "6b"}
CYCLE_ROOT = make_sfen({"5i": "K", "5a": "k", "9i": "G"}, "b")


def cycle_positions():
    """Kings in two 3x2 boxes (black gold on 9i, so no position is its own twin's
    board): 72 entries, every king move inside the boxes is an edge."""

    def may_enter(board, usi, child):
        return usi[0:2] not in ("9i",) and in_box(child, BLACK_BOX, WHITE_BOX)

    return closure(CYCLE_ROOT, may_enter, 40)


def cycle_draw():
    """Every exit loses: the loops are the best lines (value 0, depth 9999)."""
    book = Book("cycle_draw")
    positions = cycle_positions()
    keys = {key_of(s) for s in positions}
    for sfen in positions:
        board = board_of(sfen)
        def value(usi, board=board):
            if key_of(child_sfen(board, usi, 1)) in keys:
                return 7  # overwritten by the child's value
            return -100 - 10 * (sum(map(ord, usi)) % 5)
        book.add(sfen, value, lambda usi: 12)
    return book


def cycle_mixed():
    """Exits that win from some squares: black's gold exit 9i8h wins (+60) unless
    the white king stands on 5a, white's king exit to rank c wins (+40) when the
    black king stands on 6h; other exits lose. White on 5a must step off (there is
    no pass), so wins reach into the loops with finite depths, while lines where
    white keeps escaping stay drawn."""
    book = Book("cycle_mixed")
    positions = cycle_positions()
    keys = {key_of(s) for s in positions}
    for sfen in positions:
        board = board_of(sfen)
        bk, wk = king_square(board, "b"), king_square(board, "w")
        def value(usi, board=board, bk=bk, wk=wk):
            if key_of(child_sfen(board, usi, 1)) in keys:
                return -3  # overwritten by the child's value
            if usi == "9i8h":
                return 60 if wk != "5a" else -60
            if usi[1] == "*" or usi[0:2] == "9i":
                return -70
            if board.turn == cshogi.WHITE and usi[3] == "c":
                return 40 if bk == "6h" else -80
            return -100
        book.add(sfen, value, lambda usi: 3)
    return book


def cycle_tiny():
    """One loop A -5i5h-> B -5a5b-> C -5h5i-> D -5b5a-> A and nothing else: the
    loop's only value comes from white's exit at B (+5 for white)."""
    book = Book("cycle_tiny")
    loop = ["5i5h", "5a5b", "5h5i", "5b5a"]
    exits = {0: -10, 1: 5, 2: -30, 3: -20}
    sfen = CYCLE_ROOT
    for i, mv in enumerate(loop):
        board = board_of(sfen)
        book.add(sfen, lambda usi, i=i, mv=mv: 0 if usi == mv else exits[i] - (usi > mv))
        sfen = child_sfen(board, mv, i + 2)
    return book


# ---- b. perpetual check

PERPETUAL_ROOT = make_sfen({"9i": "K", "1a": "k", "1c": "p", "3b": "+R"}, "b")


def perpetual_positions():
    """The dragon checks (3b3a, 3a3b, 3b4a, 4a3b, ...), the white king steps
    between 1a, 1b and 2b: every position reachable by checks of the dragon on
    its four squares and by the replies, within 8 plies."""

    def may_enter(board, usi, child):
        if board.turn == cshogi.BLACK:
            b = board_of(child)
            return b.is_check() and usi[2:4] in ("3a", "3b", "4a", "4b")
        return True

    return closure(PERPETUAL_ROOT, may_enter, 8)


def perpetual(name, positions, exit_value, flip=False):
    """Black's best move off the checks is worth exit_value (king 9i9h; its other
    moves off the checks lose 200 more, or are worth exit_value too when that is a
    mate score); white's moves out of the book lose 150. exit_value is a number
    or a function of the position."""
    book = Book(name)
    keys = {key_of(s) for s in positions}
    for sfen in positions:
        board = board_of(sfen)
        black = board.turn == cshogi.BLACK
        best = exit_value(board) if callable(exit_value) else exit_value
        def value(usi, board=board, black=black, best=best):
            child = child_sfen(board, usi, 1)
            if key_of(child) in keys:
                return 11  # overwritten by the child's value
            if not black:
                return -150
            if usi == "9i9h":
                return best
            if abs(best) >= 31000:
                return best
            return best - 200
        if flip:
            fl = flip_sfen(sfen)
            book.add(fl, lambda usi, value=value: value(flip_usi(usi)))
        else:
            book.add(sfen, value)
    return book


def split_exit(board):
    """perpetual_split's value of black's best move off the checks."""
    king = king_square(board, "w")
    cells = board_cells(split_sfen(board.sfen())[0])
    dragon_4b = cells[1 * 9 + (9 - 4)] == "+R"
    if king[0] == "1" or king == "2d" or (king == "2c" and dragon_4b):
        return 0
    return -40


def perpetual_books():
    positions = perpetual_positions()
    return [
        perpetual("perpetual_exit0", positions, 0),
        perpetual("perpetual_exitneg", positions, -300),
        perpetual("perpetual_exitmate", positions, -32000),
        perpetual("perpetual_exitpos", positions, 80),
        perpetual("perpetual_white", positions, -300, flip=True),
        # The checker's exits are worth 0 with the white king on file 1, on 2d,
        # or on 2c facing the dragon on 4b, and -40 elsewhere: the checked
        # side's escapes from the check loop 4a4b 2b2a 4b4a 2a2b tie with a
        # draw, and the loop (which the checker must leave at -40) is its better
        # line.
        perpetual("perpetual_split", positions, split_exit),
    ]


# ---- c. random books


RANDOM_ROOTS = [
    make_sfen({"9i": "K", "1a": "k", "1c": "p", "3b": "+R"}, "b"),
    make_sfen({"5i": "K", "5a": "k", "2h": "R", "6a": "g", "5g": "P", "5c": "p"}, "b"),
    make_sfen({"5i": "K", "1a": "k", "5e": "b", "2i": "R", "2a": "s"}, "b"),
    make_sfen({"5i": "K", "5a": "k", "4h": "G", "6b": "s", "2c": "+R"}, "w"),
]


def random_value(rng):
    r = rng.random()
    if r < 0.06:
        return 0
    if r < 0.09:
        return rng.choice([31990, -31990])
    if r < 0.10:
        return rng.choice([32000, -32000])
    return rng.randint(-400, 400)


def gives_check(board, usi):
    board.push_usi(usi)
    check = board.is_check()
    board.pop()
    return check


def king_box(rng, board, colour):
    """The king's square and one of its neighbours, at random."""
    sq = king_square(board, colour)
    f, r = int(sq[0]), RANKS.index(sq[1])
    around = [f"{f + df}{RANKS[r + dr]}" for df in (-1, 0, 1) for dr in (-1, 0, 1)
              if (df or dr) and 1 <= f + df <= 9 and 0 <= r + dr <= 8]
    return {sq, rng.choice(sorted(around))}


def random_bfs(rng, root, entries):
    """A random part of the neighbourhood of root, breadth first: every king move
    between the king's square at the root and a neighbour chosen at random is
    taken, a check with probability 0.3, any other move with 0.05, until
    `entries` positions. The kings stepping back and forth in their boxes close
    repetition loops in every layer of other moves, and the checks make check
    loops. A position whose twin is already taken, or without legal moves, is
    left out (its move stays a leaf)."""
    root_board = board_of(root)
    boxes = {"b": king_box(rng, root_board, "b"), "w": king_box(rng, root_board, "w")}
    seen = {key_of(root): root}
    queue = deque([root])
    for _ in range(50 * entries):  # expansions; ends early when full
        if len(seen) >= entries:
            break
        if not queue:
            # Every position expanded and still too few: draw again from them all.
            queue.extend(seen.values())
        sfen = queue.popleft()
        board = board_of(sfen)
        ply = split_sfen(sfen)[3]
        side = "b" if board.turn == cshogi.BLACK else "w"
        king = king_square(board, side)
        for usi in usi_moves(board):
            if usi[0:2] == king:
                p = 1.0 if usi[2:4] in boxes[side] else 0.05
            else:
                p = 0.3 if gives_check(board, usi) else 0.05
            if rng.random() >= p or len(seen) >= entries:
                continue
            take(seen, queue, child_sfen(board, usi, ply + 1), skip_twins=True)
    return list(seen.values())


def random_book(name, seed, root, entries, flip_share=0.0):
    rng = random.Random(seed)
    positions = random_bfs(rng, root, entries)
    book = Book(name)
    for sfen in positions:
        values = {}
        def value(usi, values=values):
            return values.setdefault(usi, random_value(rng))
        def depth(usi):
            return rng.randint(0, 30)
        if flip_share and rng.random() < flip_share:
            fl = flip_sfen(sfen)
            book.add(fl, lambda usi: value(flip_usi(usi)), depth)
        else:
            book.add(sfen, value, depth)
    return book


def random_books(seed):
    """Two books (two seeds) per root."""
    books = []
    for i, root in enumerate(RANDOM_ROOTS):
        for j in range(2):
            books.append(random_book(f"random_{i}_{j}", seed * 1000 + i * 10 + j, root, 50))
    return books


def random_perpetual_books(seed):
    """The positions of the perpetual_* books with random values (four seeds); in
    the odd ones every move of the checker (black) is worth 0 or less, so that
    the checks are its best lines unless perpetual check counts."""
    books = []
    positions = perpetual_positions()
    for j in range(4):
        rng = random.Random(seed * 1000 + 700 + j)
        book = Book(f"random_perpetual_{j}")
        for sfen in positions:
            losing = j % 2 == 1 and board_of(sfen).turn == cshogi.BLACK
            def value(usi, losing=losing):
                v = random_value(rng)
                return -abs(v) if losing else v
            book.add(sfen, value, lambda usi: rng.randint(0, 30))
        books.append(book)
    return books


def twin_books(seed):
    books = []
    for i, root in enumerate(RANDOM_ROOTS[:3]):
        s = seed * 1000 + 500 + i
        books.append(random_book(f"twins_{i}", s, root, 50, flip_share=0.35))
    return books


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    books = [cycle_draw(), cycle_mixed(), cycle_tiny()]
    books += perpetual_books()
    books += random_books(args.seed)
    books += random_perpetual_books(args.seed)
    books += twin_books(args.seed)
    for book in books:
        path = book.write(args.outdir)
        direct, twin = book.edges()
        print(f"{os.path.basename(path)}: {len(book.entries)} entries, "
              f"{direct} edges, {twin} twin edges")


if __name__ == "__main__":
    main()
