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

/// The expected score of a side `elo` points stronger (logistic model).
///
/// ```
/// assert!((stera_games::stats::score_from_elo(0.0) - 0.5).abs() < 1e-12);
/// ```
#[must_use]
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// A sequential probability ratio test over pairs (fishtest's GSPRT on the
/// pentanomial distribution, logistic Elo): H0 "the Elo difference is `elo0`"
/// against H1 "it is `elo1`", with error rates `alpha` (accepting H1 when H0
/// holds) and `beta` (the reverse).
///
/// The log-likelihood ratio is the normal approximation
/// `LLR = N (s1 - s0) (2 m - s0 - s1) / (2 v)` over `N` pairs with mean pair
/// score `m` and variance `v` (per pair, as a fraction of its two points), `s0`
/// and `s1` the scores of `elo0` and `elo1`. The test accepts H1 when the LLR
/// reaches `ln((1 - beta) / alpha)` and H0 when it falls to `ln(beta / (1 - alpha))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sprt {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
}

/// Where an SPRT stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SprtDecision {
    /// H1 accepted: the side is at least `elo1` better (within the error rates).
    AcceptH1,
    /// H0 accepted: it is not better than `elo0`.
    AcceptH0,
    /// Not decided yet.
    Continue,
}

impl SprtDecision {
    /// `H1 accepted`, `H0 accepted` or `undecided`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::AcceptH1 => "H1 accepted",
            Self::AcceptH0 => "H0 accepted",
            Self::Continue => "undecided",
        }
    }
}

/// Pseudo-pairs added to every pentanomial cell, so that the first pairs (often
/// all alike, with a variance near zero) cannot decide the test at once: a
/// quarter pair per cell weighs like 1.25 pairs of an even match, nothing after a
/// few hundred pairs. (fishtest adds 1e-3 and relies on its large batches.)
const PRIOR_PAIRS: f64 = 0.25;

impl Sprt {
    /// A test of `elo0` against `elo1` at error rates `alpha`, `beta`.
    ///
    /// # Errors
    /// `elo1 <= elo0`, or error rates outside `(0, 0.5)`.
    pub fn new(elo0: f64, elo1: f64, alpha: f64, beta: f64) -> Result<Self, String> {
        if !(elo0.is_finite() && elo1.is_finite() && elo1 > elo0) {
            return Err(format!("SPRT needs elo0 < elo1, not {elo0} and {elo1}"));
        }
        for (name, p) in [("alpha", alpha), ("beta", beta)] {
            if !(p > 0.0 && p < 0.5) {
                return Err(format!("SPRT {name} must lie in (0, 0.5), not {p}"));
            }
        }
        Ok(Self {
            elo0,
            elo1,
            alpha,
            beta,
        })
    }

    /// `(lower, upper)`: the LLR bounds at which H0 and H1 are accepted.
    #[must_use]
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The log-likelihood ratio of the pairs counted so far (0 without pairs).
    #[must_use]
    pub fn llr(&self, pairs: &Pentanomial) -> f64 {
        let n = pairs.pairs() as f64;
        if n == 0.0 {
            return 0.0;
        }
        let total = n + 5.0 * PRIOR_PAIRS;
        let weight = |k: usize| pairs.counts[k] as f64 + PRIOR_PAIRS;
        let mean = (0..5).map(|k| weight(k) * k as f64 / 4.0).sum::<f64>() / total;
        let variance = (0..5)
            .map(|k| weight(k) * (k as f64 / 4.0 - mean).powi(2))
            .sum::<f64>()
            / total;
        let (s0, s1) = (score_from_elo(self.elo0), score_from_elo(self.elo1));
        n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)
    }

    /// The decision the pairs counted so far give.
    #[must_use]
    pub fn decide(&self, pairs: &Pentanomial) -> SprtDecision {
        let llr = self.llr(pairs);
        let (lower, upper) = self.bounds();
        if llr >= upper {
            SprtDecision::AcceptH1
        } else if llr <= lower {
            SprtDecision::AcceptH0
        } else {
            SprtDecision::Continue
        }
    }
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

    /// Draws pairs from a pentanomial distribution whose mean score is that of
    /// `elo` (a fixed draw share; the rest split to reach the mean).
    fn synthetic_pairs(elo: f64, seed: u64) -> impl FnMut() -> (f64, f64) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let p = score_from_elo(elo);
        move || {
            // Each game independently: win with p - 0.15, draw 0.3, loss the rest.
            let mut game = || {
                let u: f64 = rng.random();
                if u < p - 0.15 {
                    1.0
                } else if u < p + 0.15 {
                    0.5
                } else {
                    0.0
                }
            };
            (game(), game())
        }
    }

    fn run_sprt(sprt: &Sprt, elo: f64, seed: u64, max_pairs: u64) -> (SprtDecision, u64) {
        let mut pairs = Pentanomial::default();
        let mut next = synthetic_pairs(elo, seed);
        while pairs.pairs() < max_pairs {
            let (a, b) = next();
            pairs.add_pair(a, b);
            let decision = sprt.decide(&pairs);
            if decision != SprtDecision::Continue {
                return (decision, pairs.pairs());
            }
        }
        (SprtDecision::Continue, pairs.pairs())
    }

    #[test]
    fn sprt_accepts_h1_for_a_stronger_side_and_h0_for_a_weaker_one() {
        let sprt = Sprt::new(0.0, 10.0, 0.05, 0.05).unwrap();
        let (lower, upper) = sprt.bounds();
        close(upper, (0.95f64 / 0.05).ln(), 1e-12);
        close(lower, -upper, 1e-12);
        // Many seeds: each must decide the right way well before the cap.
        for seed in 0..20 {
            let (strong, n) = run_sprt(&sprt, 40.0, seed, 20_000);
            assert_eq!(strong, SprtDecision::AcceptH1, "seed {seed}, {n} pairs");
            let (weak, n) = run_sprt(&sprt, -30.0, seed + 100, 20_000);
            assert_eq!(weak, SprtDecision::AcceptH0, "seed {seed}, {n} pairs");
        }
        assert!(Sprt::new(10.0, 0.0, 0.05, 0.05).is_err());
        assert!(Sprt::new(0.0, 10.0, 0.0, 0.05).is_err());
    }

    #[test]
    fn sprt_error_rate_between_the_hypotheses_is_near_alpha() {
        // At exactly elo0 the test must accept H1 in about alpha of the runs
        // (the GSPRT is approximate: allow up to twice alpha).
        let sprt = Sprt::new(0.0, 20.0, 0.05, 0.05).unwrap();
        let runs = 200;
        let false_h1 = (0..runs)
            .filter(|&seed| run_sprt(&sprt, 0.0, 1000 + seed, 50_000).0 == SprtDecision::AcceptH1)
            .count();
        assert!(false_h1 <= runs as usize / 10, "{false_h1} of {runs}");
    }

    #[test]
    fn llr_of_a_known_pentanomial() {
        // Independent computation of the formula (Python, same prior).
        let p = Pentanomial {
            counts: [10, 20, 40, 25, 15],
        };
        let sprt = Sprt::new(0.0, 10.0, 0.05, 0.05).unwrap();
        close(sprt.llr(&p), 0.513_419_432_5, 1e-8);
        assert_eq!(sprt.llr(&Pentanomial::default()), 0.0);
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
