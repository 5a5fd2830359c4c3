//! Match statistics: score, Elo difference with a 95 % interval, likelihood of
//! superiority.
//!
//! * Elo from a score `s` (draws count half): `-400 log10(1/s - 1)`, the logistic
//!   model (a 0.75 score is +190.8).
//! * The interval is the **normal approximation** of the mean score: `s ± z·σ/√n`
//!   with `z = 1.95996` and σ² the sample variance of the per-game (trinomial:
//!   1, ½, 0) or per-pair (pentanomial: 0, ¼, ½, ¾, 1 per game, for two games of
//!   one opening with colours swapped) scores; its ends are converted to Elo.
//!   The pentanomial form takes the pairing into account (an opening that favours
//!   one colour adds no spurious variance) and is the better one for paired
//!   matches; `book-tools match` prints the trinomial one while games are
//!   running and both at the end.
//! * LOS (likelihood of superiority) `= Φ((W - L) / √(W + L))`, draws ignored.

/// The two-sided 95 % quantile of the standard normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Wins, draws and losses from one side's point of view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
}

impl Tally {
    /// Games counted.
    #[must_use]
    pub fn games(&self) -> u64 {
        self.wins + self.draws + self.losses
    }

    /// Adds one game worth `points` (1, ½ or 0).
    pub fn add(&mut self, points: f64) {
        if points > 0.75 {
            self.wins += 1;
        } else if points < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    /// The mean score, `None` before the first game.
    #[must_use]
    pub fn score(&self) -> Option<f64> {
        let n = self.games();
        (n > 0).then(|| (self.wins as f64 + 0.5 * self.draws as f64) / n as f64)
    }
}

/// Games of complete pairs by the pair's total for one side: `counts[k]` pairs
/// scored `k / 2` points out of 2 (0, ½, 1, 1½, 2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pentanomial {
    pub counts: [u64; 5],
}

impl Pentanomial {
    /// Adds a pair whose two games gave `a` and `b` points (each 1, ½ or 0).
    pub fn add_pair(&mut self, a: f64, b: f64) {
        let halves = ((a + b) * 2.0).round().clamp(0.0, 4.0) as usize;
        self.counts[halves] += 1;
    }

    /// Pairs counted.
    #[must_use]
    pub fn pairs(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// A score with its 95 % interval, and the same in Elo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub score: f64,
    pub score_low: f64,
    pub score_high: f64,
    pub elo: f64,
    /// Elo of the interval's ends (`-inf`/`+inf` where the interval reaches 0 or 1).
    pub elo_low: f64,
    pub elo_high: f64,
}

/// The Elo difference of a score (`±inf` at 0 and 1).
///
/// ```
/// assert!((stera_games::stats::elo_from_score(0.75) - 190.85).abs() < 0.01);
/// ```
#[must_use]
pub fn elo_from_score(score: f64) -> f64 {
    if score <= 0.0 {
        f64::NEG_INFINITY
    } else if score >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / score - 1.0).log10()
    }
}

/// The estimate of weighted outcomes `(value, count)` (values as fractions of a
/// game's point: per game or per pair and game).
fn estimate(outcomes: &[(f64, u64)]) -> Option<Estimate> {
    let n: u64 = outcomes.iter().map(|&(_, k)| k).sum();
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let mean = outcomes.iter().map(|&(x, k)| x * k as f64).sum::<f64>() / n;
    let variance = outcomes
        .iter()
        .map(|&(x, k)| k as f64 * (x - mean).powi(2))
        .sum::<f64>()
        / n;
    let half = Z95 * (variance / n).sqrt();
    let (low, high) = ((mean - half).max(0.0), (mean + half).min(1.0));
    Some(Estimate {
        score: mean,
        score_low: low,
        score_high: high,
        elo: elo_from_score(mean),
        elo_low: elo_from_score(low),
        elo_high: elo_from_score(high),
    })
}

/// Score and interval from single games (trinomial normal approximation).
#[must_use]
pub fn trinomial(t: &Tally) -> Option<Estimate> {
    estimate(&[(1.0, t.wins), (0.5, t.draws), (0.0, t.losses)])
}

/// Score and interval from pairs of games (pentanomial normal approximation).
#[must_use]
pub fn pentanomial(p: &Pentanomial) -> Option<Estimate> {
    let outcomes: Vec<(f64, u64)> = p
        .counts
        .iter()
        .enumerate()
        .map(|(k, &c)| (k as f64 / 4.0, c))
        .collect();
    estimate(&outcomes)
}

/// The likelihood of superiority: the probability that the side is the
/// stronger, `Φ((W - L) / √(W + L))` (0.5 without decisive games).
///
/// ```
/// assert!((stera_games::stats::los(60, 40) - 0.9772).abs() < 1e-4);
/// ```
#[must_use]
pub fn los(wins: u64, losses: u64) -> f64 {
    let decisive = wins + losses;
    if decisive == 0 {
        return 0.5;
    }
    normal_cdf((wins as f64 - losses as f64) / (decisive as f64).sqrt())
}

/// The standard normal distribution function.
#[must_use]
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' `erfcc`, Chebyshev
/// fit with a fractional error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed independently (Python's `math.erf` and the
    /// formulas of the module documentation).
    fn close(a: f64, b: f64, tolerance: f64) {
        assert!((a - b).abs() <= tolerance, "{a} vs {b}");
    }

    #[test]
    fn elo_of_known_scores() {
        close(elo_from_score(0.75), 190.848_501_887_865, 1e-9);
        close(elo_from_score(0.6), 70.436_503_622_272_47, 1e-9);
        close(elo_from_score(0.25), -190.848_501_887_865, 1e-9);
        close(elo_from_score(0.5), 0.0, 1e-12);
        assert_eq!(elo_from_score(1.0), f64::INFINITY);
        assert_eq!(elo_from_score(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn likelihood_of_superiority() {
        close(los(60, 40), 0.977_249_868_051_820_8, 1e-6);
        close(los(3, 7), 0.102_951_605_366_034_15, 1e-6);
        close(los(10, 10), 0.5, 1e-6);
        close(los(0, 0), 0.5, 0.0);
        close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-6);
    }

    #[test]
    fn trinomial_interval() {
        let t = Tally {
            wins: 60,
            draws: 20,
            losses: 20,
        };
        let e = trinomial(&t).unwrap();
        close(e.score, 0.7, 1e-12);
        close(e.elo, 147.190_714_117_837_76, 1e-9);
        close(e.score_low, 0.621_601_440_618_397_8, 1e-9);
        close(e.score_high, 0.778_398_559_381_602_1, 1e-9);
        close(e.elo_low, 86.225_015_200_304_23, 1e-6);
        close(e.elo_high, 218.251_777_641_074_8, 1e-6);
        let even = trinomial(&Tally {
            wins: 30,
            draws: 40,
            losses: 30,
        })
        .unwrap();
        close(even.elo_low, -53.157_979_780_053_225, 1e-6);
        close(even.elo_high, 53.157_979_780_053_275, 1e-6);
        assert!(trinomial(&Tally::default()).is_none());
    }

    #[test]
    fn pentanomial_interval() {
        let p = Pentanomial {
            counts: [2, 10, 20, 12, 6],
        };
        let e = pentanomial(&p).unwrap();
        close(e.score, 0.55, 1e-12);
        close(e.elo, 34.860_070_287_560_08, 1e-9);
        close(e.score_low, 0.479_332_493_556_781_3, 1e-9);
        close(e.score_high, 0.620_667_506_443_218_8, 1e-9);
        close(e.elo_low, -14.369_441_932_969_69, 1e-6);
        close(e.elo_high, 85.535_585_459_326_9, 1e-6);
        let mut q = Pentanomial::default();
        q.add_pair(1.0, 0.5);
        q.add_pair(0.0, 0.0);
        q.add_pair(0.5, 0.5);
        assert_eq!(q.counts, [1, 0, 1, 1, 0]);
    }

    #[test]
    fn all_wins_reach_infinity_and_the_tally_classifies_points() {
        let mut t = Tally::default();
        for points in [1.0, 1.0, 0.5, 0.0] {
            t.add(points);
        }
        assert_eq!((t.wins, t.draws, t.losses), (2, 1, 1));
        let e = trinomial(&Tally {
            wins: 5,
            draws: 0,
            losses: 0,
        })
        .unwrap();
        assert_eq!(e.elo, f64::INFINITY);
        assert_eq!(e.score_low, 1.0);
    }
}
