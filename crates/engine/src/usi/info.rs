//! Parsing the engine's `info` lines.
//!
//! Only what the evaluator needs is kept: depth, MultiPV index, score and whether it
//! is a bound, nodes, time and the first move of the principal variation.

use super::score::RawScore;

/// One `info` line, reduced to the fields the evaluator uses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Info {
    /// `depth d`.
    pub depth: Option<u32>,
    /// `multipv k` (1-based); engines without MultiPV omit it.
    pub multipv: Option<u32>,
    /// `score cp X`, `score mate N` or `score winrate P`.
    pub score: Option<RawScore>,
    /// `lowerbound` or `upperbound` was present: the score is only a bound, from an
    /// aspiration window that failed, and says little about the move.
    pub bound: bool,
    /// `nodes n`.
    pub nodes: Option<u64>,
    /// `time ms`.
    pub time_ms: Option<u64>,
    /// The first move after `pv`, as text (it may be `resign`, `win` or `pass`).
    pub first_pv_move: Option<String>,
}

impl Info {
    /// Parses a line that starts with `info`; `None` for any other line.
    ///
    /// Unknown tokens are skipped and malformed numbers are ignored rather than
    /// rejected: an engine's extra output must not cost a whole search.
    ///
    /// ```
    /// use stera_engine::usi::{Info, RawScore};
    /// let info = Info::parse("info depth 3 multipv 2 score cp -41 nodes 439 time 3 pv 7i7h 8b7b").unwrap();
    /// assert_eq!(info.multipv, Some(2));
    /// assert_eq!(info.score, Some(RawScore::Centipawns(-41)));
    /// assert_eq!(info.first_pv_move.as_deref(), Some("7i7h"));
    /// assert!(info.is_complete());
    /// assert!(Info::parse("bestmove 7g7f").is_none());
    /// ```
    #[must_use]
    pub fn parse(line: &str) -> Option<Self> {
        let mut tokens = line.split_ascii_whitespace();
        if tokens.next()? != "info" {
            return None;
        }
        let mut info = Self::default();
        while let Some(token) = tokens.next() {
            match token {
                "depth" => info.depth = tokens.next().and_then(|t| t.parse().ok()),
                "multipv" => info.multipv = tokens.next().and_then(|t| t.parse().ok()),
                "nodes" => info.nodes = tokens.next().and_then(|t| t.parse().ok()),
                "time" => info.time_ms = tokens.next().and_then(|t| t.parse().ok()),
                "score" => info.score = parse_score(&mut tokens),
                "lowerbound" | "upperbound" => info.bound = true,
                "pv" => {
                    info.first_pv_move = tokens.next().map(str::to_owned);
                    // The rest of the line is the variation.
                    break;
                }
                // Free text to the end of the line, which may contain anything.
                "string" => break,
                _ => {}
            }
        }
        Some(info)
    }

    /// A score that is not a bound.
    #[must_use]
    pub fn exact_score(&self) -> Option<RawScore> {
        if self.bound { None } else { self.score }
    }

    /// An exact score for a named first move: what a MultiPV root search keeps.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.exact_score().is_some() && self.first_pv_move.is_some()
    }
}

fn parse_score<'a>(tokens: &mut impl Iterator<Item = &'a str>) -> Option<RawScore> {
    let kind = tokens.next()?;
    let number = tokens.next()?;
    match kind {
        "cp" => number.parse().ok().map(RawScore::Centipawns),
        "mate" => parse_mate(number),
        "winrate" => number
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite())
            .map(RawScore::WinRate),
        _ => None,
    }
}

/// `+5`, `5`, `-5`, `-0`, `+`, `-`: the sign says who mates; a bare sign means the
/// distance is unknown.
fn parse_mate(text: &str) -> Option<RawScore> {
    let (winning, digits) = match text.strip_prefix('-') {
        Some(rest) => (false, rest),
        None => (true, text.strip_prefix('+').unwrap_or(text)),
    };
    if digits.is_empty() {
        return Some(RawScore::Mate {
            winning,
            plies: None,
        });
    }
    let plies = digits.parse().ok()?;
    Some(RawScore::Mate {
        winning,
        plies: Some(plies),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Info {
        Info::parse(line).unwrap_or_else(|| panic!("not an info line: {line}"))
    }

    #[test]
    fn fairy_stockfish_multipv_line() {
        let i = parse(
            "info depth 4 seldepth 4 multipv 3 score cp 232 nodes 622 nps 155500 tbhits 0 time 4 pv 5g5f 3a3b 7g7f",
        );
        assert_eq!(i.depth, Some(4));
        assert_eq!(i.multipv, Some(3));
        assert_eq!(i.score, Some(RawScore::Centipawns(232)));
        assert_eq!(i.nodes, Some(622));
        assert_eq!(i.time_ms, Some(4));
        assert_eq!(i.first_pv_move.as_deref(), Some("5g5f"));
        assert!(i.is_complete());
    }

    #[test]
    fn gpsusi_line_without_multipv() {
        let i = parse(
            "info depth 6 seldepth 10 time 461 score cp 29 nodes 99262 nps 215041 pv 7g7f 3c3d 2g2f",
        );
        assert_eq!(i.multipv, None);
        assert!(i.is_complete());
        assert_eq!(i.time_ms, Some(461));
    }

    #[test]
    fn bounds_are_not_complete() {
        for line in [
            "info depth 9 score cp 50 lowerbound nodes 10 pv 7g7f",
            "info depth 9 score cp 50 upperbound pv 7g7f",
            "info depth 9 multipv 1 score mate 5 lowerbound pv 7g7f",
        ] {
            let i = parse(line);
            assert!(i.bound, "{line}");
            assert!(!i.is_complete(), "{line}");
            assert_eq!(i.exact_score(), None);
        }
    }

    #[test]
    fn lines_without_score_or_pv_are_not_complete() {
        assert!(!parse("info depth 6").is_complete());
        assert!(!parse("info currmove 7g7f").is_complete());
        assert!(!parse("info depth 3 score cp 10 nodes 5").is_complete());
        assert!(!parse("info string score cp 10 pv 7g7f").is_complete());
        assert!(!parse("info depth 3 score cp x pv 7g7f").is_complete());
    }

    #[test]
    fn mate_signs() {
        let mate = |line: &str| parse(line).score;
        let m = |winning, plies| Some(RawScore::Mate { winning, plies });
        assert_eq!(mate("info score mate 3 pv 1a1b"), m(true, Some(3)));
        assert_eq!(mate("info score mate +3 pv 1a1b"), m(true, Some(3)));
        assert_eq!(mate("info score mate -4 pv 1a1b"), m(false, Some(4)));
        assert_eq!(mate("info score mate -0 pv 1a1b"), m(false, Some(0)));
        assert_eq!(mate("info score mate - pv 1a1b"), m(false, None));
        assert_eq!(mate("info score mate + pv 1a1b"), m(true, None));
        assert_eq!(mate("info score mate x pv 1a1b"), None);
    }

    #[test]
    fn win_rate_scores() {
        assert_eq!(
            parse("info depth 2 score winrate 0.625 pv 7g7f").score,
            Some(RawScore::WinRate(0.625))
        );
        assert_eq!(parse("info score winrate nan pv 7g7f").score, None);
    }

    #[test]
    fn other_lines_are_not_info() {
        assert!(Info::parse("bestmove 7g7f ponder 3c3d").is_none());
        assert!(Info::parse("information").is_none());
        assert!(Info::parse("").is_none());
    }
}
