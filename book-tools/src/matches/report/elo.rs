//! Estimates as the report shows them ([`Shown`]): the rule of three's bound
//! where every sample scored alike, and Elo in words, never infinite.

use stera_games::stats::{Estimate, elo_from_score};

/// An estimate as the report shows it: the normal interval, or where every
/// sample scored the same (no variance: a zero-width interval that claims
/// certainty) the rule of three's bound, and Elo ends that are never infinite.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub(super) n: u64,
    pub(super) unit: &'static str,
    pub(super) score: f64,
    pub(super) score_low: f64,
    pub(super) score_high: f64,
    /// Why the interval is not the normal one, if it is not.
    pub(super) note: Option<String>,
}

impl Shown {
    /// `e` over `n` samples (`unit`: "pair" or "game").
    pub(super) fn of(e: &Estimate, n: u64, unit: &'static str) -> Self {
        let mut shown = Self {
            n,
            unit,
            score: e.score,
            score_low: e.score_low,
            score_high: e.score_high,
            note: None,
        };
        if e.score_low == e.score_high && n > 0 {
            // Every sample scored v: with 95 % confidence fewer than a share p
            // of samples score otherwise, P(all n alike) = (1 - p)^n = 2.5 %
            // at each end; the mean lies within p of v towards 0 and 1.
            let v = e.score;
            let p = 1.0 - 0.025f64.powf(1.0 / n as f64);
            shown.score_low = v * (1.0 - p);
            shown.score_high = v + p * (1.0 - v);
            let what = if v <= 0.0 {
                "lost".to_owned()
            } else if v >= 1.0 {
                "won".to_owned()
            } else if (v - 0.5).abs() < 1e-12 && unit == "game" {
                "drawn (no decisive games yet)".to_owned()
            } else if (v - 0.5).abs() < 1e-12 {
                "scored 1 of 2 (its colours' results cancel)".to_owned()
            } else {
                format!("scored {v:.2}")
            };
            shown.note = Some(format!(
                "every {unit} {what}: no variance to measure, the bounds are the rule of three's over {n} {unit}s"
            ));
        }
        shown
    }

    /// `E [L, H]`; a score of 0 or 1 (infinite Elo) as a bound instead.
    pub(super) fn elo_text(&self) -> String {
        let (low, high) = (
            elo_from_score(self.score_low),
            elo_from_score(self.score_high),
        );
        // A one-sided bound says something only once it lies beyond an even
        // score: after 0-3 "below +636" bounds nothing a reader cares about.
        if self.score <= 0.0 && high.is_finite() && high < 0.0 {
            format!("below {} (no game won or drawn yet)", point_elo_text(high))
        } else if self.score <= 0.0 {
            format!(
                "no bound yet: every {} lost, and {} {}s are too few to place the book below an even score ({} are needed)",
                self.unit, self.n, self.unit, SAMPLES_FOR_A_BOUND
            )
        } else if self.score >= 1.0 && low.is_finite() && low > 0.0 {
            format!("above {} (no game lost or drawn yet)", point_elo_text(low))
        } else if self.score >= 1.0 {
            format!(
                "no bound yet: every {} won, and {} {}s are too few to place the book above an even score ({} are needed)",
                self.unit, self.n, self.unit, SAMPLES_FOR_A_BOUND
            )
        } else {
            format!(
                "{} [{}, {}]",
                point_elo_text(elo_from_score(self.score)),
                end_text(low),
                end_text(high)
            )
        }
    }
}

/// Samples that all score alike before the rule of three's bound passes an
/// even score: (1 - p)^n = 2.5 % with p = 1/2 needs n > ln 0.025 / ln 0.5 = 5.3.
const SAMPLES_FOR_A_BOUND: u64 = 6;

/// An interval's end: a score interval that reaches 0 or 1 has no Elo bound.
fn end_text(elo: f64) -> String {
    if elo.is_finite() {
        point_elo_text(elo)
    } else {
        "unbounded".to_owned()
    }
}

/// Elo with one decimal and a sign; a score of 0 or 1 says so instead of an
/// infinite Elo.
pub(super) fn point_elo_text(elo: f64) -> String {
    if elo.is_infinite() {
        if elo > 0.0 {
            "none (every game won)"
        } else {
            "none (every game lost)"
        }
        .to_owned()
    } else {
        // `+ 0.0` turns -0.0 (an even score) into 0.0.
        format!("{:+.1}", elo + 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_games::stats::{Pentanomial, Tally, pentanomial, trinomial};

    #[test]
    fn an_interval_is_never_infinite_nor_of_zero_width() {
        let estimate = |counts: [u64; 5]| pentanomial(&Pentanomial { counts }).unwrap();
        // Every pair lost: a bound, the rule of three's over 10 pairs.
        let lost = Shown::of(&estimate([10, 0, 0, 0, 0]), 10, "pair");
        let p = 1.0 - 0.025f64.powf(0.1);
        assert!((lost.score_high - p).abs() < 1e-12 && lost.score_low == 0.0);
        let text = lost.elo_text();
        assert_eq!(
            text,
            format!("below {:+.1} (no game won or drawn yet)", elo_from_score(p))
        );
        assert!(lost.note.as_deref().unwrap().starts_with("every pair lost"));
        // Every pair won: over 3 pairs the bound is still below an even
        // score (0.025^(1/3) = 0.29), which bounds nothing: said so (issue 43,
        // "elo below +636.4" after 0-3); over 10 above it.
        let won = Shown::of(&estimate([0, 0, 0, 0, 3]), 3, "pair");
        assert!(
            won.elo_text()
                .starts_with("no bound yet: every pair won, and 3 pairs are too few"),
            "{}",
            won.elo_text()
        );
        let lost = Shown::of(&estimate([3, 0, 0, 0, 0]), 3, "pair");
        assert!(
            lost.elo_text().starts_with("no bound yet: every pair lost")
                && !lost.elo_text().contains('+'),
            "{}",
            lost.elo_text()
        );
        for n in [5, 6] {
            let lost = Shown::of(&estimate([n, 0, 0, 0, 0]), n, "pair");
            assert_eq!(
                lost.elo_text().starts_with("below -"),
                n >= SAMPLES_FOR_A_BOUND,
                "{n}: {}",
                lost.elo_text()
            );
        }
        let won = Shown::of(&estimate([0, 0, 0, 0, 10]), 10, "pair");
        assert!(won.elo_text().starts_with("above +"), "{}", won.elo_text());
        // Every pair 1 of 2: an interval around 0 that is not of zero width.
        let even = Shown::of(&estimate([0, 0, 5, 0, 0]), 5, "pair");
        assert!(even.score_low < 0.5 && even.score_high > 0.5);
        let text = even.elo_text();
        assert!(
            text.starts_with("+0.0 [-") && !text.contains("inf"),
            "{text}"
        );
        // All draws over games: no decisive games yet.
        let draws = trinomial(&Tally {
            wins: 0,
            draws: 4,
            losses: 0,
        })
        .unwrap();
        let shown = Shown::of(&draws, 4, "game");
        assert!(shown.note.unwrap().contains("no decisive games yet"));
        // A normal interval reaching a score of 0 is unbounded below, in words.
        let wide = Shown::of(&estimate([3, 1, 0, 0, 0]), 4, "pair");
        assert!(wide.note.is_none());
        assert!(
            wide.elo_text().contains("[unbounded, "),
            "{}",
            wide.elo_text()
        );
    }
}
