#!/usr/bin/env python3
"""Lines of Rust by crate, in src/ and in tests/ (benches and examples with src),
at each git revision given: the table BENCHMARKS records for issue 44.

    scripts/loc-by-crate.py REV [REV ...]
"""
import subprocess
import sys
from collections import defaultdict

CRATES = ["proto", "coordinator", "worker", "book-tools"]


def crate_of(path):
    parts = path.split("/")
    if parts[0] == "crates" and len(parts) > 2:
        return "crates/" + parts[1], parts[2:]
    if parts[0] in CRATES and len(parts) > 1:
        return parts[0], parts[1:]
    return None, None


def count(rev):
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev], check=True, capture_output=True, text=True
    ).stdout.split()
    totals = defaultdict(lambda: [0, 0])
    for path in files:
        if not path.endswith(".rs"):
            continue
        crate, rest = crate_of(path)
        if crate is None:
            continue
        text = subprocess.run(
            ["git", "show", f"{rev}:{path}"], check=True, capture_output=True
        ).stdout
        lines = text.count(b"\n")
        totals[crate][1 if rest[0] == "tests" else 0] += lines
    return totals


def main():
    revs = sys.argv[1:]
    if not revs:
        sys.exit(__doc__)
    tables = [count(r) for r in revs]
    crates = sorted(set().union(*[t.keys() for t in tables]))
    header = "| crate | " + " | ".join(f"{r} src | {r} tests" for r in revs) + " |"
    print(header)
    print("|---" * (1 + 2 * len(revs)) + "|")
    sums = [[0, 0] for _ in revs]
    for c in crates:
        cells = []
        for i, t in enumerate(tables):
            src, tests = t.get(c, [0, 0])
            sums[i][0] += src
            sums[i][1] += tests
            cells += [f"{src:,}", f"{tests:,}"]
        print(f"| {c} | " + " | ".join(cells) + " |")
    print("| all | " + " | ".join(f"{s:,} | {t:,}" for s, t in sums) + " |")


if __name__ == "__main__":
    main()
