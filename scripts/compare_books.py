"""Compare two YaneuraOu DB2016 text books entry by entry.

usage: compare_books.py A.db B.db [EXAMPLES]

An entry (a position, its ply ignored) counts as identical when every move has the same
value and depth in both books. Prints the counts and up to EXAMPLES differing entries.
Used by scripts/peta-shock-parity.sh; see BENCHMARKS.md ("Parity with YaneuraOu's
makebook peta_shock").
"""
import sys

import db2016


def load(path):
    """Position -> {move: (value, depth)}."""
    return {
        sfen: {mv: (value, depth) for mv, value, depth in moves}
        for sfen, moves in db2016.load(path).items()
    }

a, b = load(sys.argv[1]), load(sys.argv[2])
common = a.keys() & b.keys()
same = same_best = 0
diff_examples = []
for k in common:
    ma, mb = a[k], b[k]
    if ma == mb:
        same += 1
    elif len(diff_examples) < int(sys.argv[3] if len(sys.argv) > 3 else 3):
        d = {m: (ma.get(m), mb.get(m)) for m in ma.keys() | mb.keys() if ma.get(m) != mb.get(m)}
        diff_examples.append((k, dict(list(d.items())[:4])))
    if max(v for v, _ in ma.values()) == max(v for v, _ in mb.values()):
        same_best += 1
print(f"{sys.argv[1]}: {len(a)} entries; {sys.argv[2]}: {len(b)} entries; in both: {len(common)}")
print(f"identical entries (every move's value and depth): {same} ({100.0 * same / max(1, len(common)):.3f} %)")
print(f"same best value: {same_best} ({100.0 * same_best / max(1, len(common)):.3f} %)")
for k, d in diff_examples:
    print("  differs:", k, d)
