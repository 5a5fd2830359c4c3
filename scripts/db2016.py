"""Reads YaneuraOu DB2016 text books for the measurement scripts."""


def load(path):
    """Position (its SFEN without the ply) -> [(move, value, depth or None)], in
    the file's order (an export writes the best move first)."""
    book = {}
    moves = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("sfen "):
                moves = []
                book[line[5:].rsplit(" ", 1)[0]] = moves
            elif moves is not None:
                fields = line.split()
                moves.append((fields[0], int(fields[2]), int(fields[3]) if len(fields) > 3 else None))
    return book
