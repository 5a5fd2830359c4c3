"""The games of a `book-tools match --out-games` CSA file, for the scripts beside
this one (`book-agreement.py`, `match-positions.py`, `opening-transfer.py`,
`exit-value.py`)."""


def games(path, book_side_of):
    """Per game: the side whose `N` line names a book (through `book_side_of`, which
    maps "+"/"-" to the caller's colour value; None without a book side), and the
    game's [CSA move, its comment or None] pairs."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for chunk in text.split("\n/\n"):
        side, moves = None, []
        for line in chunk.splitlines():
            if line[:2] in ("N+", "N-") and " book " in line:
                side = book_side_of(line[1])
            elif len(line) == 7 and line[0] in "+-" and line[1].isdigit():
                moves.append([line[1:], None])
            elif line.startswith("'") and moves and moves[-1][1] is None:
                moves[-1][1] = line[1:]
        if moves:
            yield side, moves


def results(path):
    """The `'result:` line of each game, in order (`black wins by mate`, `draw by
    repetition`, ...)."""
    with open(path, encoding="utf-8") as f:
        return [line[len("'result:"):].strip() for line in f if line.startswith("'result:")]
