//! The result of a match as JSON (`--json`): the same figures as the text,
//! with estimates `null` where they are withheld and infinite Elo as `null`.

use serde_json::{Value, json};
use stera_games::stats::{Estimate, elo_from_score, los, pentanomial, trinomial};

use super::Report;
use super::elo::Shown;
use crate::matches::coverage::{EXIT_NAMES, PLY_NAMES, RANK_NAMES};

impl Report {
    pub(super) fn json(&self) -> Value {
        let t = &self.tally;
        let s = &self.settings;
        let estimate = |e: Option<Estimate>, n: u64, unit: &'static str| -> Value {
            match e {
                Some(e) if self.independent() => {
                    let shown = Shown::of(&e, n, unit);
                    json!({
                        "score": e.score,
                        "score_low": shown.score_low,
                        "score_high": shown.score_high,
                        "elo": finite(e.elo),
                        "elo_low": finite(elo_from_score(shown.score_low)),
                        "elo_high": finite(elo_from_score(shown.score_high)),
                        "bound": shown.note,
                    })
                }
                _ => Value::Null,
            }
        };
        let sprt = self.sprt.map(|sprt| {
            let (lower, upper) = sprt.bounds();
            json!({
                "elo0": sprt.elo0,
                "elo1": sprt.elo1,
                "alpha": sprt.alpha,
                "beta": sprt.beta,
                "llr": sprt.llr(&self.pairs),
                "lower": lower,
                "upper": upper,
                "decision": self.decision.name(),
                "decided_at_pairs": self.decided_at,
            })
        });
        let cov = &self.coverage;
        let buckets = |names: &[&str; 5], counts: &[u64; 5]| -> Value {
            names
                .iter()
                .zip(counts)
                .map(|(n, c)| ((*n).to_owned(), json!(c)))
                .collect::<serde_json::Map<String, Value>>()
                .into()
        };
        let mut value = json!({
            "book": s.own,
            "book_policy": s.own_policy,
            "against": s.against,
            "against_policy": s.against_policy,
            "engine": s.engine,
            "limits": s.limits,
            "node_jitter": s.node_jitter,
            "suite": s.suite,
            "openings": s.openings,
            "seed": s.seed,
            "games_planned": self.total,
            "games": t.games(),
            "pairs": self.pairs.pairs(),
            "distinct_games": self.distinct_games.len(),
            "distinct_pairs": self.distinct_pairs.len(),
            "mirrored_pairs": self.mirrored_pairs,
            "distinct_once": self.distinct_once().map(|(black, white, elo)| json!({
                "black": black,
                "black_games": self.distinct_points[0].games(),
                "white": white,
                "white_games": self.distinct_points[1].games(),
                "elo": elo,
            })),
            "repeat_share": self.repeat_share(),
            "training_score": s.training,
            "independent": self.independent(),
            "wins": t.wins,
            "draws": t.draws,
            "losses": t.losses,
            "pentanomial_counts": self.pairs.counts,
            "pentanomial": estimate(pentanomial(&self.pairs), self.pairs.pairs(), "pair"),
            "trinomial": estimate(trinomial(t), t.games(), "game"),
            "los": self.independent().then(|| los(t.wins, t.losses)),
            "sprt": sprt,
            "coverage": {
                "own_book_moves_per_game": cov.own_mean(),
                "other_book_moves_per_game": cov.other_mean(),
                "games_without_own_book_move": cov.own_none,
                "with_own_book_move": {
                    "wins": self.with_book.wins,
                    "draws": self.with_book.draws,
                    "losses": self.with_book.losses,
                },
                "without_own_book_move": {
                    "wins": self.without_book.wins,
                    "draws": self.without_book.draws,
                    "losses": self.without_book.losses,
                },
                "exits": buckets(&EXIT_NAMES, &cov.exits),
                "reply_exit_ranks": buckets(&RANK_NAMES, &cov.reply_ranks),
                "exit_plies": buckets(&PLY_NAMES, &cov.exit_plies),
            },
            "seconds": self.started.elapsed().as_secs_f64(),
        });
        // Beside the rest (one `json!` of them all is past its macro's depth).
        for (key, v) in [
            ("opponent_engine", json!(s.opponent_engine)),
            ("opponent_limits", json!(s.opponent_limits)),
            ("opponent_node_jitter", json!(s.opponent_node_jitter)),
            ("repeated_game_share", json!(self.repeated_game_share())),
            ("book_never_used", json!(self.book_never_used())),
            (
                "withheld",
                json!((!self.independent()).then(|| self.withheld_reason())),
            ),
        ] {
            value[key] = v;
        }
        value
    }
}

/// JSON has no infinity: `null` stands for ±inf.
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}
