//! The summary printed when a match ends: what was matched (when the header
//! did not go to the same terminal), the counts, the estimates or why they are
//! withheld, and the book's coverage.

use stera_games::stats::{los, pentanomial, trinomial};

use super::Report;
use super::elo::{Shown, point_elo_text};
use crate::matches::coverage::{EXIT_NAMES, PLY_NAMES, RANK_NAMES};

impl Report {
    pub(super) fn print_text(&self) {
        let t = &self.tally;
        let s = &self.settings;
        // On one terminal the header told these at the start; the summary
        // repeats them only where it goes elsewhere (a file keeps them all).
        let header_on_screen = std::io::IsTerminal::is_terminal(&std::io::stdout())
            && std::io::IsTerminal::is_terminal(&std::io::stderr());
        if !header_on_screen {
            crate::say!("book: {} ({})", s.own, s.own_policy);
            match &s.against_policy {
                Some(policy) => crate::say!("against: {} ({policy})", s.against),
                None => crate::say!("against: {}", s.against),
            }
            crate::say!("engine: {}, {}", s.engine, s.limits);
            crate::say!(
                "opponent's engine: {}, {}",
                s.opponent_engine,
                s.opponent_limits
            );
            crate::say!("openings: {} ({})", s.openings, s.suite);
        }
        crate::say!("games: {} of {}", t.games(), self.total);
        crate::say!(
            "distinct games: {} of {} ({:.1} %)",
            self.distinct_games.len(),
            t.games(),
            100.0 * self.distinct_games.len() as f64 / t.games().max(1) as f64
        );
        crate::say!(
            "distinct pairs: {} of {} ({:.1} %)",
            self.distinct_pairs.len(),
            self.pairs.pairs(),
            100.0 * (1.0 - self.repeat_share())
        );
        crate::say!(
            "pairs whose two games are the same moves: {}",
            self.mirrored_pairs
        );
        crate::say!(
            "repeated games (the same moves, the book under test on the same side): {} of {} ({:.1} %)",
            t.games() - self.distinct_by_colour.len() as u64,
            t.games(),
            100.0 * self.repeated_game_share()
        );
        if let Some((black, white, elo)) = self.distinct_once() {
            crate::say!(
                "each distinct game once: {black:.3} as black ({} games), {white:.3} as white ({} games), elo {}",
                self.distinct_points[0].games(),
                self.distinct_points[1].games(),
                point_elo_text(elo)
            );
        }
        crate::say!("wins: {}", t.wins);
        crate::say!("draws: {}", t.draws);
        crate::say!("losses: {}", t.losses);
        let c = &self.pairs.counts;
        crate::say!(
            "pentanomial (pairs scoring 0, 1/2, 1, 3/2, 2): {} {} {} {} {}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4]
        );
        if self.independent() {
            if let Some(e) = pentanomial(&self.pairs) {
                print_estimate("pentanomial", &Shown::of(&e, self.pairs.pairs(), "pair"));
            }
            if let Some(e) = trinomial(t) {
                print_estimate("trinomial", &Shown::of(&e, t.games(), "game"));
            }
            crate::say!("los: {:.4}", los(t.wins, t.losses));
            if let Some(sprt) = &self.sprt {
                let (lower, upper) = sprt.bounds();
                crate::say!(
                    "sprt: {} (llr {:.3}, bounds [{lower:.3}, {upper:.3}], elo0 {} elo1 {}{})",
                    self.decision.name(),
                    sprt.llr(&self.pairs),
                    sprt.elo0,
                    sprt.elo1,
                    self.decided_at
                        .map_or_else(String::new, |n| format!(", decided at {n} pairs")),
                );
            }
        } else {
            crate::say!("{}", self.withheld_reason());
        }
        let cov = &self.coverage;
        crate::say!(
            "book moves per game: {:.2} (book under test), {:.2} (other side); {} games without a book move",
            cov.own_mean(),
            cov.other_mean(),
            cov.own_none
        );
        for (name, t) in [
            ("with a book move", &self.with_book),
            ("without a book move", &self.without_book),
        ] {
            crate::say!(
                "games {name} of the book under test: +{} ={} -{}{}",
                t.wins,
                t.draws,
                t.losses,
                t.score()
                    .map_or_else(String::new, |s| format!(", score {s:.4}"))
            );
        }
        crate::say!("book exits: {}", named(&EXIT_NAMES, &cov.exits));
        crate::say!(
            "reply exits by the reply's rank in the book: {}",
            named(&RANK_NAMES, &cov.reply_ranks)
        );
        crate::say!(
            "book exits by plies after the opening: {}",
            named(&PLY_NAMES, &cov.exit_plies)
        );
        let mut terminations: Vec<_> = self.terminations.iter().collect();
        terminations.sort();
        let terminations: Vec<String> = terminations
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        crate::say!("terminations: {}", terminations.join(", "));
        crate::say!(
            "mean plies after the opening: {:.1}",
            self.plies as f64 / t.games().max(1) as f64
        );
        if let Some(note) = &s.training {
            crate::say!("training score: {note}");
        }
    }
}

fn named(names: &[&str; 5], counts: &[u64; 5]) -> String {
    names
        .iter()
        .zip(counts)
        .map(|(n, c)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_estimate(kind: &str, shown: &Shown) {
    crate::say!(
        "score ({kind}, {} {}s): {:.4} [{:.4}, {:.4}]",
        shown.n,
        shown.unit,
        shown.score,
        shown.score_low,
        shown.score_high
    );
    crate::say!("elo ({kind}, 95 %): {}", shown.elo_text());
    if let Some(note) = &shown.note {
        crate::say!("interval ({kind}): {note}");
    }
}
