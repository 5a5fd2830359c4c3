#!/usr/bin/env python3
"""How much of what the openings decide carries over from one opponent to another:
the ceiling of any book's gain against an opponent it never met.

    scripts/opening-transfer.py GAMES.csa GAMES.csa [GAMES.csa ...]

Each file is a `book-tools match --out-games` record of the same book side on the
same openings (`--openings FILE --repeat-openings`), each against another
opponent; the no-book rows of `scripts/book-quality.sh` are such files. A cell is
an opening with the colour the book side played it with; its score is the book
side's points there.

Per file: the spread of the cells' scores that is not game noise (the variance
of the cell means with the binomial part taken off): how much the opening decides
against that opponent. Two files against the same opponent on other seeds are the
control: their shared covariance is the part of that spread that reproduces. Per pair of files: the covariance of the
cell means, which game noise does not bias (the games are independent): the part
of that spread the two opponents share, the only part a book learned against one
of them can use against the other. Then the pairs' mean shared variance, its 95 %
upper bound (resampling the cells), and what a book gains at one decision at most if it knew the shared
part exactly and chose the best of three moves whose positions differ that much
(0.85 standard deviations, in Elo at a score of one half).

BENCHMARKS.md "What there is to learn held out". Needs cshogi (PyPI).
"""
import collections
import math
import os
import random
import sys

import cshogi
from match_games import games, results


def cells(path):
    """Cell (opening moves, the book side's colour) -> the book side's points per game."""
    out = collections.defaultdict(list)
    found = list(games(path, lambda sign: cshogi.BLACK if sign == "+" else cshogi.WHITE))
    ends = results(path)
    if len(found) != len(ends):
        raise SystemExit(f"{path}: {len(found)} games but {len(ends)} result lines")
    for (side, moves), end in zip(found, ends):
        if side is None:
            raise SystemExit(f"{path}: a game without a book side (no `N` line naming a book)")
        opening = tuple(csa for csa, comment in moves if comment == "opening")
        if "draw" in end:
            points = 0.5
        else:
            black_won = end.startswith("black")
            points = 1.0 if black_won == (side == cshogi.BLACK) else 0.0
        out[(opening, side)].append(points)
    return out


def spread(table):
    """(cells, games a cell, variance of the cell means, the noise part of it)."""
    means, noise = [], []
    for points in table.values():
        if len(points) < 2:
            continue
        m = sum(points) / len(points)
        means.append(m)
        noise.append(sum((p - m) ** 2 for p in points) / (len(points) - 1) / len(points))
    if len(means) < 3:
        raise SystemExit("fewer than three cells with two games or more")
    grand = sum(means) / len(means)
    variance = sum((m - grand) ** 2 for m in means) / (len(means) - 1)
    games_a_cell = sum(len(p) for p in table.values()) / len(table)
    return len(means), games_a_cell, variance, sum(noise) / len(noise)


def common_cells(tables):
    """The cells with two games or more in every one of `tables`."""
    return [k for k in tables[0] if all(k in t and len(t[k]) >= 2 for t in tables)]


def means_over(table, keys):
    """The cell means of `table` over `keys` (a list, repeats allowed)."""
    return [sum(table[k]) / len(table[k]) for k in keys]


def covariance(x, y):
    """The sample covariance of two lists of the same length."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    return sum((p - mx) * (q - my) for p, q in zip(x, y)) / (n - 1)


def shared(a, b):
    """(cells in both, covariance of their means, its standard error, and the
    variance of each's means over those cells)."""
    keys = common_cells([a, b])
    n = len(keys)
    if n < 3:
        raise SystemExit("fewer than three cells in common: the files are not of the same openings")
    xa, xb = means_over(a, keys), means_over(b, keys)
    va, vb, cov = covariance(xa, xa), covariance(xb, xb), covariance(xa, xb)
    # The sample covariance of two normal variables: variance (va vb + cov^2) / (n - 1).
    return n, cov, math.sqrt((va * vb + cov * cov) / (n - 1)), va, vb


def mean_shared(tables, keys):
    """The mean over pairs of tables of the covariance of their cell means over `keys`
    (a list, repeats allowed)."""
    means = [means_over(t, keys) for t in tables]
    covs = [
        covariance(means[i], means[j])
        for i in range(len(tables))
        for j in range(i + 1, len(tables))
    ]
    return sum(covs) / len(covs)


def bootstrap_upper(tables, rounds=2000, seed=1):
    """The 97.5th percentile of the mean shared covariance over cells drawn with
    replacement (seeded: the same files give the same bound)."""
    keys = common_cells(tables)
    rng = random.Random(seed)
    draws = sorted(
        mean_shared(tables, [rng.choice(keys) for _ in keys]) for _ in range(rounds)
    )
    return draws[int(0.975 * rounds)]


def elo_at_half(score_gain):
    """The Elo difference that scores `0.5 + score_gain`."""
    s = min(max(0.5 + score_gain, 1e-9), 1 - 1e-9)
    return -400 * math.log10(1 / s - 1)


def main():
    paths = sys.argv[1:]
    if len(paths) < 2:
        raise SystemExit(__doc__)
    tables = {p: cells(p) for p in paths}
    name = {p: os.path.basename(p) for p in paths}
    print("per opponent: cells, games a cell, sd of cell scores, noise part, variance beyond noise [95 %]")
    for p, t in tables.items():
        n, g, v, noise = spread(t)
        # The variance of n normal means is known to sqrt(2 / (n - 1)) of itself.
        half = 1.96 * v * math.sqrt(2 / (n - 1))
        print(f"  {name[p]}: {n} cells, {g:.1f} games, sd {math.sqrt(v):.3f}, noise sd "
              f"{math.sqrt(noise):.3f}, beyond noise {v - noise:+.4f} [{v - noise - half:+.4f}, "
              f"{v - noise + half:+.4f}] (sd {math.sqrt(max(0.0, v - noise)):.3f})")
    print("per pair: cells in both, shared covariance [95 %], correlation of the cell means")
    covs = []
    for i, p in enumerate(paths):
        for q in paths[i + 1:]:
            n, cov, se, va, vb = shared(tables[p], tables[q])
            covs.append(cov)
            print(f"  {name[p]} ~ {name[q]}: {n} cells, {cov:+.4f} [{cov - 1.96 * se:+.4f}, "
                  f"{cov + 1.96 * se:+.4f}], r {cov / math.sqrt(va * vb):+.3f}")
    mean = sum(covs) / len(covs)
    # The pairs share files, so their errors are not independent: the bound
    # comes from resampling the cells (the same cells for every file).
    upper = max(0.0, bootstrap_upper(list(tables.values())))
    best_of_three = 0.846 * math.sqrt(upper)
    print(f"shared variance, mean over pairs: {mean:+.4f}, 95 % upper bound {upper:.4f} "
          f"(sd {math.sqrt(upper):.3f})")
    print(f"ceiling of a book's gain held out, per decision (best of three at that spread): "
          f"{best_of_three:+.3f} score, {elo_at_half(best_of_three):+.1f} Elo")


if __name__ == "__main__":
    main()
