//! The running and final result of a match: tallies, independence (distinct
//! games and pairs), pentanomial Elo, SPRT, coverage; as a progress line while
//! games run, then as text and JSON.
//!
//! The report says what the games can and cannot show: the interval is withheld
//! (and the match exits with an error) when more than `--max-repeats` of the
//! games or of the pairs repeat, or when the book under test played no move in
//! any game (every game is then its engine's, and a pair of them the same game
//! twice); an Elo is never printed as infinite: where every pair (or game) ends
//! alike the interval is the rule of three's bound ([`Shown`]). Each game is counted and written when it
//! ends and then dropped: memory stays flat however many games are played (a
//! hash of 8 bytes per game and per pair is kept to count repeats).
//!
//! Here the tallies and what they allow; beside them: `text` (the summary
//! printed at the end), `json` (the same as JSON), `elo` ([`Shown`]: intervals
//! and Elo as words), `budget` ([`budget_text`]) and `games_file`
//! ([`GamesFile`], the games written as they end).

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use stera_games::stats::{Pentanomial, Sprt, SprtDecision, Tally, elo_from_score, pentanomial};
use stera_games::{Game, MoveSource};
use stera_rules::Color;

use super::Finished;
use super::coverage::CoverageTally;

mod budget;
mod elo;
mod games_file;
mod json;
mod text;

pub use budget::budget_text;
use elo::Shown;
pub use games_file::GamesFile;

/// What was matched, for the reports.
#[derive(Debug, Clone)]
pub struct Settings {
    pub own: String,
    pub own_policy: String,
    pub against: String,
    pub against_policy: Option<String>,
    /// The side under test's engine, its limits as text and their jitter.
    pub engine: String,
    pub limits: String,
    pub node_jitter: f64,
    /// The opponent's engine, limits and jitter (the same as the side under
    /// test's unless `--opponent-*` flags say otherwise).
    pub opponent_engine: String,
    pub opponent_limits: String,
    pub opponent_node_jitter: f64,
    pub openings: usize,
    pub suite: String,
    pub seed: u64,
    pub max_repeats: f64,
    /// `--book-max-ply 0`: the engine alone on the side under test, the
    /// no-book baseline (its games never use a book, by request).
    pub baseline: bool,
    /// Said when the opponent is one the store learned against: the score is
    /// a training score (with how to get the no-book baseline).
    pub training: Option<String>,
}

/// A hash of a game's start and moves: equal games, equal hashes.
fn game_hash(game: &Game) -> u64 {
    let mut h = DefaultHasher::new();
    game.start_sfen.hash(&mut h);
    for m in &game.moves {
        m.mv.hash(&mut h);
    }
    h.finish()
}

/// The running result of a match.
pub struct Report {
    total: usize,
    sprt: Option<Sprt>,
    settings: Settings,
    games_out: Option<GamesFile>,
    tally: Tally,
    /// The same split by whether the book under test played a book move in
    /// the game: where its effect can show, and where it cannot.
    with_book: Tally,
    without_book: Tally,
    pairs: Pentanomial,
    /// The first finished game of each pair still waiting for the other: its
    /// points and hash (at most one per game in flight).
    half_pairs: HashMap<usize, (f64, u64)>,
    distinct_games: HashSet<u64>,
    distinct_pairs: HashSet<u64>,
    /// The book under test's points in each distinct game, counted once, by its
    /// colour (Black, White): see [`Report::distinct_once`].
    distinct_by_colour: HashSet<(u64, Color)>,
    distinct_points: [Tally; 2],
    /// Pairs whose two games are the same moves (neither book made a
    /// difference: the colours' results cancel).
    mirrored_pairs: u64,
    coverage: CoverageTally,
    terminations: HashMap<&'static str, u64>,
    plies: u64,
    decision: SprtDecision,
    /// Pairs counted when the SPRT decided.
    decided_at: Option<u64>,
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
}

impl Report {
    pub fn new(
        total: usize,
        sprt: Option<Sprt>,
        settings: Settings,
        games_out: Option<GamesFile>,
    ) -> Self {
        let bar = crate::game_threads::games_bar(total);
        Self {
            total,
            sprt,
            settings,
            games_out,
            tally: Tally::default(),
            with_book: Tally::default(),
            without_book: Tally::default(),
            pairs: Pentanomial::default(),
            half_pairs: HashMap::new(),
            distinct_games: HashSet::new(),
            distinct_pairs: HashSet::new(),
            distinct_by_colour: HashSet::new(),
            distinct_points: [Tally::default(), Tally::default()],
            mirrored_pairs: 0,
            coverage: CoverageTally::default(),
            terminations: HashMap::new(),
            plies: 0,
            decision: SprtDecision::Continue,
            decided_at: None,
            bar,
            started: Instant::now(),
        }
    }

    /// Counts a finished game (and writes it), then drops it.
    ///
    /// # Errors
    /// The games file cannot be written.
    pub fn add(&mut self, finished: Finished) -> Result<()> {
        if let Some(out) = &mut self.games_out {
            out.write(&finished)?;
        }
        let points = finished.game.result.outcome.points_for(finished.own_color);
        self.tally.add(points);
        if finished.coverage.own_book_plies > 0 {
            self.with_book.add(points);
        } else {
            self.without_book.add(points);
        }
        let hash = game_hash(&finished.game);
        self.distinct_games.insert(hash);
        if self.distinct_by_colour.insert((hash, finished.own_color)) {
            self.distinct_points[usize::from(finished.own_color == Color::White)].add(points);
        }
        let pair = finished.index / 2;
        if let Some((first, first_hash)) = self.half_pairs.remove(&pair) {
            self.pairs.add_pair(first, points);
            if first_hash == hash {
                self.mirrored_pairs += 1;
            }
            let mut h = DefaultHasher::new();
            // The pair's games in game order, whichever ended first.
            if finished.index % 2 == 1 {
                (first_hash, hash).hash(&mut h);
            } else {
                (hash, first_hash).hash(&mut h);
            }
            self.distinct_pairs.insert(h.finish());
        } else {
            self.half_pairs.insert(pair, (points, hash));
        }
        self.coverage.add(&finished.coverage);
        *self
            .terminations
            .entry(finished.game.result.termination.name())
            .or_insert(0) += 1;
        self.plies += finished
            .game
            .moves
            .iter()
            .filter(|m| m.source != MoveSource::Opening)
            .count() as u64;
        if let Some(sprt) = &self.sprt
            && self.decided_at.is_none()
        {
            self.decision = sprt.decide(&self.pairs);
            if self.decision != SprtDecision::Continue {
                self.decided_at = Some(self.pairs.pairs());
            }
        }
        self.progress(&finished);
        Ok(())
    }

    /// True once the SPRT has decided.
    pub fn decided(&self) -> bool {
        self.decided_at.is_some()
    }

    fn games(&self) -> u64 {
        self.tally.games()
    }

    /// The share of pairs that repeat an earlier pair: the interval is over
    /// pairs, so a repeated pair is a sample counted twice. (The two games of
    /// one pair may be the same moves: that pair is still one sample.)
    fn repeat_share(&self) -> f64 {
        let n = self.pairs.pairs();
        if n == 0 {
            0.0
        } else {
            (n - self.distinct_pairs.len() as u64) as f64 / n as f64
        }
    }

    /// The score of the book under test counting each distinct game once: the
    /// mean of its scores as Black and as White over their distinct games, with
    /// the Elo of that mean; `None` until both colours have a game. A second
    /// reading beside the interval over pairs when the games from few openings
    /// repeat: a game that comes back under other jitter draws is a real draw of
    /// the same game, but a handful of lines can then weigh as much as the rest.
    fn distinct_once(&self) -> Option<(f64, f64, f64)> {
        let black = self.distinct_points[0].score()?;
        let white = self.distinct_points[1].score()?;
        let mean = (black + white) / 2.0;
        Some((black, white, elo_from_score(mean)))
    }

    /// The share of games that repeat an earlier game with the book under test
    /// on the same side: a repeated game is a sample counted twice, whether or
    /// not its pair repeats too. (The two games of one pair may be the same
    /// moves, the book under test on either side: two samples.)
    fn repeated_game_share(&self) -> f64 {
        let n = self.games();
        if n == 0 {
            0.0
        } else {
            (n - self.distinct_by_colour.len() as u64) as f64 / n as f64
        }
    }

    /// True once a game was played in which the book under test played none
    /// of its moves in any game so far: the match then measures its engine.
    fn book_never_used(&self) -> bool {
        !self.settings.baseline && self.games() > 0 && self.with_book.games() == 0
    }

    /// True when the games are independent enough for an interval and the book
    /// under test took part in them.
    fn independent(&self) -> bool {
        !self.book_never_used()
            && self.repeat_share() <= self.settings.max_repeats
            && self.repeated_game_share() <= self.settings.max_repeats
    }

    fn progress(&self, finished: &Finished) {
        let n = self.games() as usize;
        let step = (self.total / 50).max(1);
        let due = n.is_multiple_of(step) || n == self.total || self.decided();
        // The rate and the time left first: a narrow terminal cuts the end.
        let speed = crate::game_threads::speed_text(self.started, n as u64, self.total as u64);
        let line = format!("{speed}; {}", self.line());
        crate::game_threads::show_progress(self.bar.as_ref(), line, due, |line| {
            crate::tell!(
                "game {n}/{} ({:.0} s; last: game {} {}, {}): {line}",
                self.total,
                self.started.elapsed().as_secs_f64(),
                finished.index + 1,
                if finished.own_color == Color::Black {
                    "black"
                } else {
                    "white"
                },
                finished.game.result,
            );
        });
    }

    /// `+W =D -L, P pairs elo E [lo, hi], distinct D/N, llr X`.
    fn line(&self) -> String {
        let t = &self.tally;
        let mut line = format!("+{} ={} -{}", t.wins, t.draws, t.losses);
        if let Some(e) = pentanomial(&self.pairs) {
            let n = self.pairs.pairs();
            line.push_str(&format!(
                ", {n} pairs elo {}",
                Shown::of(&e, n, "pair").elo_text()
            ));
        }
        line.push_str(&format!(
            ", distinct {}/{}",
            self.distinct_games.len(),
            self.games()
        ));
        if let Some(sprt) = &self.sprt {
            line.push_str(&format!(", llr {:.2}", sprt.llr(&self.pairs)));
            if self.decided() {
                line.push_str(&format!(" ({})", self.decision.name()));
            }
        }
        line
    }

    /// Ends the progress display after a failure.
    pub fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.abandon();
        }
    }

    /// Prints the result (text on stdout, unless the JSON goes there) and writes
    /// the JSON.
    ///
    /// # Errors
    /// The JSON file cannot be written, or the games are not independent enough
    /// for an interval (the counts are printed first).
    pub fn finish(
        mut self,
        json_out: Option<&Path>,
        bound: Option<stera_book::store_path::BoundOutput>,
    ) -> Result<()> {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        // Every game is in: the games file goes in place under its name.
        if let Some(games) = self.games_out.take() {
            games.commit()?;
        }
        let json = self.json();
        match json_out {
            Some(path) if path == Path::new("-") => {
                crate::say!("{}", serde_json::to_string_pretty(&json)?);
            }
            Some(path) => {
                self.print_text();
                let text = serde_json::to_string_pretty(&json)?;
                let text = text + "\n";
                match bound {
                    Some(out) => out.replace(text.as_bytes()).and_then(|()| out.commit()),
                    None => std::fs::write(path, text),
                }
                .with_context(|| format!("cannot write `{}`", path.display()))?;
            }
            None => self.print_text(),
        }
        if !self.independent() {
            bail!("{}", self.withheld_reason());
        }
        Ok(())
    }

    fn withheld_reason(&self) -> String {
        if self.book_never_used() {
            return format!(
                "interval withheld: the book under test played no move in any of the {} games (its openings start where it has no moves, or --book-max-ply ends it before them), so every game is its engine's and the match says nothing about the book{}; take openings from the book (--suite-plies, the default) or fewer --random-plies",
                self.games(),
                if self.mirrored_pairs > 0 {
                    format!(
                        " ({} of {} pairs are the same game twice, colours swapped)",
                        self.mirrored_pairs,
                        self.pairs.pairs()
                    )
                } else {
                    String::new()
                },
            );
        }
        let hint = "play fewer --games, give more openings (--suite-plies, --openings, --random-plies) or raise --node-jitter (with --nodes)";
        if self.repeat_share() > self.settings.max_repeats {
            return format!(
                "interval withheld: only {} of {} pairs of games are distinct ({:.1} % repeat, above --max-repeats {:.1} %): repeated games are not independent, so an interval over them would be too narrow; {hint}",
                self.distinct_pairs.len(),
                self.pairs.pairs(),
                100.0 * self.repeat_share(),
                100.0 * self.settings.max_repeats,
            );
        }
        format!(
            "interval withheld: only {} of {} games are distinct with the book under test on the same side ({:.1} % repeat an earlier game, above --max-repeats {:.1} %): repeated games are not independent, so an interval over them would be too narrow; {hint}",
            self.distinct_by_colour.len(),
            self.games(),
            100.0 * self.repeated_game_share(),
            100.0 * self.settings.max_repeats,
        )
    }
}

#[cfg(test)]
mod tests;
