//! From what an engine prints to the book's value scale.
//!
//! The book keeps centipawns from the mover's point of view and mate scores as
//! `MATE - plies` (see [`stera_rules::value`]). Engines print `score cp X`,
//! `score mate N` or, for engines that think in win rates, a probability; this module
//! turns each into one `i32` and moves values between a position and its parent.

use stera_rules::value::{MATE, is_mate};

/// A score exactly as an engine printed it, from the point of view of the side to
/// move in the searched position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RawScore {
    /// `score cp X`.
    Centipawns(i64),
    /// `score mate N`: `winning` is the sign (`mate -3`, `mate -0` and `mate -` are
    /// losing), `plies` the distance when printed (`mate +` / `mate -` give none).
    Mate { winning: bool, plies: Option<u32> },
    /// `score winrate P` with `P` the probability of winning in `0..=1`.
    WinRate(f64),
}

/// The largest magnitude a converted win rate takes strictly inside `0 < p < 1`,
/// so that converted values never look like mate scores.
pub const WIN_RATE_CLAMP: i32 = 29_900;
/// The value of a certain win (`p = 1`) or loss (`p = 0`) reported as a win rate.
pub const WIN_RATE_CERTAIN: i32 = 30_000;
/// The coefficient of the usual conversion `cp = -756 ln(1/p - 1)`.
pub const DEFAULT_WIN_RATE_COEFFICIENT: f64 = 756.0;

/// How the numbers after `score cp` are to be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreConversion {
    /// `Some(scale)`: the engine prints a win rate scaled by `scale` in the `cp` field
    /// (for example `10000` for an engine that prints `score cp 5234` for 52.34 %);
    /// it is converted like a `score winrate`. `None`: `cp` is centipawns.
    pub cp_is_win_rate: Option<f64>,
    /// `k` in `cp = -k ln(1/p - 1)` for every win rate, printed or scaled.
    pub win_rate_coefficient: f64,
}

impl Default for ScoreConversion {
    fn default() -> Self {
        Self {
            cp_is_win_rate: None,
            win_rate_coefficient: DEFAULT_WIN_RATE_COEFFICIENT,
        }
    }
}

impl ScoreConversion {
    /// The book value of a raw score, in the same point of view.
    ///
    /// ```
    /// use stera_engine::usi::{RawScore, ScoreConversion};
    /// let c = ScoreConversion::default();
    /// assert_eq!(c.to_value(RawScore::Centipawns(-35)), -35);
    /// assert_eq!(c.to_value(RawScore::Mate { winning: true, plies: Some(3) }), 31_997);
    /// assert_eq!(c.to_value(RawScore::Mate { winning: false, plies: Some(0) }), -32_000);
    /// assert_eq!(c.to_value(RawScore::WinRate(0.5)), 0);
    /// ```
    #[must_use]
    pub fn to_value(&self, raw: RawScore) -> i32 {
        match raw {
            RawScore::Centipawns(cp) => match self.cp_is_win_rate {
                Some(scale) if scale > 0.0 => {
                    win_rate_to_value(cp as f64 / scale, self.win_rate_coefficient)
                }
                _ => clamp_centipawns(cp),
            },
            RawScore::Mate { winning, plies } => mate_value(winning, plies),
            RawScore::WinRate(p) => win_rate_to_value(p, self.win_rate_coefficient),
        }
    }

    /// True for plain centipawns and the default coefficient: nothing about the
    /// conversion needs recording in the engine identity.
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Centipawns kept below the mate range, so that a huge evaluation is not mistaken
/// for a mate.
fn clamp_centipawns(cp: i64) -> i32 {
    let limit = i64::from(stera_rules::value::MATE_IN_MAX_PLY - 1);
    // The clamp makes the conversion lossless.
    i32::try_from(cp.clamp(-limit, limit)).unwrap_or(0)
}

/// `±(MATE - plies)` with the sign of the mate; an unknown distance counts as 0.
fn mate_value(winning: bool, plies: Option<u32>) -> i32 {
    let max_plies = u32::try_from(MATE - stera_rules::value::MATE_IN_MAX_PLY).unwrap_or(0);
    let plies = i32::try_from(plies.unwrap_or(0).min(max_plies)).unwrap_or(0);
    if winning {
        MATE - plies
    } else {
        -(MATE - plies)
    }
}

/// `cp = -k ln(1/p - 1)`, clamped to `±WIN_RATE_CLAMP`; `p <= 0` and `p >= 1` give
/// `∓WIN_RATE_CERTAIN`. A NaN is treated as an even position.
///
/// ```
/// use stera_engine::usi::win_rate_to_value;
/// assert_eq!(win_rate_to_value(0.5, 756.0), 0);
/// assert_eq!(win_rate_to_value(1.0, 756.0), 30_000);
/// assert_eq!(win_rate_to_value(0.0, 756.0), -30_000);
/// // ln(3) * 756 = 830.5...
/// assert_eq!(win_rate_to_value(0.75, 756.0), 831);
/// ```
#[must_use]
pub fn win_rate_to_value(p: f64, coefficient: f64) -> i32 {
    if p.is_nan() {
        return 0;
    }
    if p >= 1.0 {
        return WIN_RATE_CERTAIN;
    }
    if p <= 0.0 {
        return -WIN_RATE_CERTAIN;
    }
    let cp = -coefficient * (1.0 / p - 1.0).ln();
    let clamp = f64::from(WIN_RATE_CLAMP);
    // Clamped to ±29 900 first, so the cast cannot overflow.
    cp.clamp(-clamp, clamp).round() as i32
}

/// The value of the move that leads to a position, given that position's value for
/// its own side to move: negated, and a mate is one ply further away.
///
/// ```
/// use stera_engine::usi::value_for_parent;
/// assert_eq!(value_for_parent(120), -120);
/// // The child's side is mated in 2 plies: the move mates in 3.
/// assert_eq!(value_for_parent(-31_998), 31_997);
/// // The child's side mates in 1: the move is mated in 2.
/// assert_eq!(value_for_parent(31_999), -31_998);
/// ```
#[must_use]
pub fn value_for_parent(child_value: i32) -> i32 {
    if is_mate(child_value) {
        if child_value > 0 {
            -child_value + 1
        } else {
            -child_value - 1
        }
    } else {
        -child_value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn win_rate_conversion_is_monotonic_symmetric_and_clamped() {
        let k = DEFAULT_WIN_RATE_COEFFICIENT;
        let mut previous = i32::MIN;
        for i in 0..=1000 {
            let p = f64::from(i) / 1000.0;
            let v = win_rate_to_value(p, k);
            assert!(v >= previous, "not monotonic at p={p}");
            previous = v;
            assert_eq!(v, -win_rate_to_value(1.0 - p, k), "asymmetric at p={p}");
            if i != 0 && i != 1000 {
                assert!(v.abs() <= WIN_RATE_CLAMP);
            }
        }
        // Extreme but not certain probabilities hit the clamp, not the certain value.
        assert_eq!(win_rate_to_value(1e-30, k), -WIN_RATE_CLAMP);
        // Near 1, f64 cannot get close enough for the clamp; still a big, non-mate value.
        let near_one = win_rate_to_value(1.0 - 1e-15, k);
        assert!((25_000..=WIN_RATE_CLAMP).contains(&near_one), "{near_one}");
        // A smaller coefficient gives proportionally smaller values.
        let a = win_rate_to_value(0.9, 756.0);
        let b = win_rate_to_value(0.9, 378.0);
        assert!((a - 2 * b).abs() <= 1, "{a} vs {b}");
    }

    #[test]
    fn scaled_cp_is_read_as_win_rate() {
        let c = ScoreConversion {
            cp_is_win_rate: Some(10_000.0),
            win_rate_coefficient: 756.0,
        };
        assert_eq!(c.to_value(RawScore::Centipawns(5_000)), 0);
        assert_eq!(c.to_value(RawScore::Centipawns(10_000)), WIN_RATE_CERTAIN);
        assert_eq!(
            c.to_value(RawScore::Centipawns(7_500)),
            win_rate_to_value(0.75, 756.0)
        );
        assert!(!c.is_default());
    }

    #[test]
    fn mate_values_carry_the_sign_and_distance() {
        let c = ScoreConversion::default();
        let mate = |winning, plies| c.to_value(RawScore::Mate { winning, plies });
        assert_eq!(mate(true, Some(1)), 31_999);
        assert_eq!(mate(false, Some(4)), -31_996);
        assert_eq!(mate(false, None), -MATE);
        assert_eq!(mate(true, None), MATE);
        // Absurd distances stay inside the mate range.
        assert!(is_mate(mate(true, Some(u32::MAX))));
    }

    #[test]
    fn huge_centipawns_do_not_become_mates() {
        let c = ScoreConversion::default();
        assert!(!is_mate(c.to_value(RawScore::Centipawns(100_000))));
        assert!(!is_mate(c.to_value(RawScore::Centipawns(-100_000))));
    }

    #[test]
    fn parent_value_round_trips_mate_distances() {
        for plies in 0..50 {
            let child_mated = -(MATE - plies);
            assert_eq!(value_for_parent(child_mated), MATE - plies - 1);
            let child_mates = MATE - plies - 1;
            assert_eq!(value_for_parent(child_mates), -(MATE - plies - 2));
        }
        assert_eq!(value_for_parent(0), 0);
    }
}
