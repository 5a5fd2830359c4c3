//! Self-play games: the book against itself, one opponent among the others
//! the coordinator plays (learning's engines), counted in the self-play
//! counters every book position keeps (the ones `--export-weights ndf` reads).
//!
//! A self-play game is a game job like a learning game: the coordinator plays
//! it on threads of its own ([`crate::self_play`]), each engine move one search
//! job answered by a worker that thinks for the book ([`crate::game_search`]),
//! under its own [`stera_games::Referee`]. The opening is sampled from the
//! book's exported values on both sides (softmax, as `book-tools match` does),
//! the engines play on from where it ends. Workers never see a whole game, so
//! the game counted is the one the coordinator refereed, not a worker's claim.
//!
//! This half lives with the dispatcher (the one owner of the store): how many
//! games the slots want ([`PlayGate`]), and counting a finished game durably
//! under a game id of its own ([`SelfPlayLedger::count`]).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use stera_book::{Book, GameCounts, NodeStore};
use stera_engine::Limits;
use stera_games::{Game, GameResult, GameRules, Outcome};
use stera_rules::Key;

use crate::registry::Registry;

/// The operator's settings for self-play games.
#[derive(Debug, Clone)]
pub struct PlaySettings {
    /// Fraction of the cluster's slots that play (0 = no games).
    pub share: f64,
    /// Stop starting games after this many counted games in this run.
    pub games: Option<u64>,
    /// The engines' budget per move (none: the think limits).
    pub limits: Limits,
    /// The game rules.
    pub rules: GameRules,
    /// Softmax temperature (centipawns) of the opening sampling.
    pub temperature: f64,
    /// Counted games are appended here (one USI line each), if set: opened at
    /// start (`--out-games`), so the file stays the one checked then.
    pub games_out: Option<Arc<stera_book::store_path::BoundOutput>>,
    /// Seed of the opening draws: game `i` of a run draws from the seed and `i`.
    pub seed: u64,
    /// Shared with the game threads.
    pub gate: Arc<PlayGate>,
}

impl Default for PlaySettings {
    fn default() -> Self {
        Self {
            share: 0.0,
            games: None,
            limits: Limits::default(),
            rules: GameRules::default(),
            temperature: stera_games::book::DEFAULT_TEMPERATURE,
            games_out: None,
            seed: stera_games::DEFAULT_PLAY_SEED,
            gate: Arc::default(),
        }
    }
}

impl PlaySettings {
    /// Whether the run plays self-play games at all.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.share > 0.0
    }
}

/// How many self-play games the slots want at once (the dispatcher's word)
/// and how many are being played (the game threads').
///
/// Each game holds at most one search, one slot, at a time, so games at once
/// are slots: `--play-share` of the slots, or every slot while thinking
/// cannot use them and a games target is set.
#[derive(Debug, Default)]
pub struct PlayGate {
    wanted: AtomicUsize,
    playing: AtomicUsize,
}

impl PlayGate {
    /// Games the slots want at once now.
    #[must_use]
    pub fn wanted(&self) -> usize {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Games being played now.
    #[must_use]
    pub fn playing(&self) -> usize {
        self.playing.load(Ordering::Acquire)
    }

    /// A game starts; [`Self::ended`] when it is counted or given up.
    pub fn started(&self) {
        self.playing.fetch_add(1, Ordering::AcqRel);
    }

    /// A game ended (counted, failed or given up).
    pub fn ended(&self) {
        let _ = self
            .playing
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}

/// The players' name in a CSA games file: both sides are the book and the
/// workers' engines.
const SELF_PLAY: &str = "stera self-play";

/// Games of this run by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GameTally {
    pub black: u64,
    pub white: u64,
    pub draws: u64,
}

impl GameTally {
    /// Games counted.
    #[must_use]
    pub fn counted(&self) -> u64 {
        self.black + self.white + self.draws
    }

    fn add(&mut self, result: &GameResult) {
        match result.outcome {
            Outcome::BlackWins => self.black += 1,
            Outcome::WhiteWins => self.white += 1,
            Outcome::Draw => self.draws += 1,
        }
    }
}

/// The dispatcher's half of self-play: the games wanted, and counting.
pub struct SelfPlayLedger {
    settings: PlaySettings,
    tally: GameTally,
    /// Set at the first write to `--out-games` that failed: the file holds the
    /// games before it, whole, and no later game is written to it.
    games_out_stopped: bool,
}

impl SelfPlayLedger {
    /// # Errors
    /// Game rules that make no sense.
    pub fn new(settings: PlaySettings) -> Result<Self, String> {
        settings.rules.check().map_err(|e| e.to_string())?;
        Ok(Self {
            settings,
            tally: GameTally::default(),
            games_out_stopped: false,
        })
    }

    /// Games of this run.
    #[must_use]
    pub fn tally(&self) -> GameTally {
        self.tally
    }

    /// Games being played.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.settings.gate.playing()
    }

    /// Tells the game threads how many games to play at once, with
    /// `capacity` slots in all (held and free): `--play-share` of them (at
    /// least one), or all of them while `thinking_idle` (thinking could not
    /// use the slots it had: its limit reached, nothing to select) and a games
    /// target is set, so that a run that ends at its target gets there.
    pub fn set_wanted(&self, capacity: usize, thinking_idle: bool) {
        let wanted = if !self.settings.enabled() || capacity == 0 || self.target_reached() {
            0
        } else if thinking_idle && self.settings.games.is_some() {
            capacity
        } else {
            ((self.settings.share * capacity as f64).ceil() as usize).max(1)
        };
        self.settings.gate.wanted.store(wanted, Ordering::Relaxed);
    }

    fn target_reached(&self) -> bool {
        self.settings
            .games
            .is_some_and(|target| self.tally.counted() >= target)
    }

    /// Whether the games target is met (true when there is none, or no play:
    /// then the think limit alone ends the run).
    #[must_use]
    pub fn target_done(&self) -> bool {
        !self.settings.enabled() || self.settings.games.is_none() || self.target_reached()
    }

    /// The book positions `game` passed through in `book` (once each), with
    /// its result from the side to move's view there.
    ///
    /// # Errors
    /// The game breaks the rules (a game the coordinator refereed never does).
    pub fn counts(&self, game: &Game, book: &Book) -> Result<Vec<(Key, GameCounts)>, String> {
        let verified = stera_games::verify(
            &game.start_sfen,
            &game.moves,
            &game.result,
            &self.settings.rules,
        )
        .map_err(|e| e.to_string())?;
        let mut seen = HashSet::new();
        Ok(verified
            .positions
            .iter()
            .filter_map(|v| {
                // A position the book holds as its colour-flipped twin counts for
                // the twin: the same situation, so the same side-to-move result.
                let (_, twin) = book.get_or_twin(v.key, v.flipped_key)?;
                let key = if twin { v.flipped_key } else { v.key };
                seen.insert(key.0).then_some((key, v.side_to_move))
            })
            .map(|(key, color)| (key, game.result.outcome.counts_for(color)))
            .collect())
    }

    /// Counts a finished game durably under `game_id` (the store's ids, shared
    /// with learning games) with its `counts` ([`Self::counts`]), appends it to
    /// `--out-games`, and returns the games counted in this run.
    ///
    /// # Errors
    /// The store write failed: nothing of the game is counted.
    pub fn count<S: NodeStore>(
        &mut self,
        store: &mut S,
        game_id: u64,
        game: &Game,
        counts: &[(Key, GameCounts)],
        registry: &Registry,
    ) -> Result<u64, String> {
        let line = match &self.settings.games_out {
            Some(out) => stera_games::games_file::GamesFormat::of(out.path())
                .entry(game, SELF_PLAY, SELF_PLAY)
                .map_err(|e| e.to_string())?,
            None => String::new(),
        };
        let new = store.record_game(game_id, counts).map_err(|e| {
            crate::observe::game_store_failed(&e);
            format!("the coordinator could not store the game: {e}")
        })?;
        if new {
            self.tally.add(&game.result);
            crate::observe::game_counted(
                registry,
                game_id,
                &game.result,
                game.moves.len(),
                counts.len(),
            );
            self.write_out(&line, registry);
        }
        Ok(self.tally.counted())
    }

    /// Appends a counted game to `--out-games`. After the first write that
    /// fails (a full disk), the file is left as it was before that game (whole
    /// games only) and no later game is written: one error says so, and the
    /// games counted but not written are counted (`games_unwritten`).
    fn write_out(&mut self, line: &str, registry: &Registry) {
        let Some(out) = &self.settings.games_out else {
            return;
        };
        if self.games_out_stopped {
            crate::observe::game_unwritten(registry);
            return;
        }
        let format = stera_games::games_file::GamesFormat::of(out.path());
        if let Err(e) = out.append_entry(line, format.separator()) {
            self.games_out_stopped = true;
            crate::observe::games_file_failed(registry, out.path(), &e, self.tally.counted());
        }
    }
}

/// The operator's flags for games (flattened into the coordinator's command line).
#[derive(Debug, Clone, clap::Args)]
pub struct PlayArgs {
    /// Fraction of the workers' job slots that play self-play games (0 to 1;
    /// 0: no games; a worker's job slots are its engines plus its prefetch):
    /// that many games at once, each holding one slot while its move is
    /// searched. Games start from the roots, follow the book on both sides and
    /// let the workers' engines play on from where the book ends, one search
    /// job a move; every book position a game passed through gets its result.
    #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
    pub play_share: f64,
    /// Stop starting self-play games after this many counted games in this run
    /// (the run also ends only when this is reached; while thinking cannot use
    /// the slots, every slot plays). Default: no target. Formerly
    /// `--games` (the learning games' target is `--learn-games`).
    #[arg(long = "play-games", alias = "games", value_name = "GAMES")]
    pub games: Option<u64>,
    /// Node budget per move in games (0: none).
    #[arg(long, value_name = "NODES", default_value_t = 0)]
    pub play_nodes: u64,
    /// Depth limit per move in games (0: none).
    #[arg(long, value_name = "DEPTH", default_value_t = 0)]
    pub play_depth: u32,
    /// Time per move in games, in milliseconds (0: none). With no limit at all
    /// the think limits apply (--nodes/--depth/--time-ms).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub play_time_ms: u32,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = stera_games::DEFAULT_PLY_LIMIT)]
    pub ply_limit: u32,
    /// Adjudicate a game when both sides' scores agree beyond this many
    /// centipawns for --adjudicate-plies moves (0: never), as `book-tools match`'s.
    #[arg(long, value_name = "CP", default_value_t = 0)]
    pub adjudicate_cp: u32,
    /// Consecutive moves the scores must agree for adjudication (at least 2).
    #[arg(long, value_name = "PLIES", default_value_t = stera_games::DEFAULT_ADJUDICATE_PLIES)]
    pub adjudicate_plies: u32,
    /// Softmax temperature (centipawns) with which openings are sampled from the
    /// book's exported values (0: always the best line).
    #[arg(long, value_name = "CP", default_value_t = stera_games::book::DEFAULT_TEMPERATURE,
          value_parser = parse_temperature)]
    pub play_temperature: f64,
    /// Append every counted game to this file; its extension chooses the format,
    /// as for `book-tools match`: `.csa` CSA (games separated by `/` lines),
    /// anything else one line per game, `sfen START moves ...`, a tab, and the
    /// result. When a write fails (a full disk), the file keeps the games
    /// before it, whole, and is not written again in this run: one error
    /// names the file, the run goes on counting games into the book, and
    /// those not written are counted (`stera_coordinator_games_unwritten_total`,
    /// a "games file" problem on the dashboard). Default: games are counted,
    /// not written. Formerly `--games-out`.
    #[arg(long, value_name = "FILE", alias = "games-out")]
    pub out_games: Option<PathBuf>,
    /// Seed of the opening draws (the same seed gives the same openings from
    /// the same book), as `book-tools match --play-seed`.
    #[arg(long, value_name = "SEED", default_value_t = stera_games::DEFAULT_PLAY_SEED)]
    pub play_seed: u64,
}

/// A temperature: a finite number of centipawns, 0 or more.
fn parse_temperature(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!(
            "`{text}` is not a temperature: a number of centipawns, 0 or more"
        )),
    }
}

fn parse_share(text: &str) -> Result<f64, String> {
    let share: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if (0.0..=1.0).contains(&share) {
        Ok(share)
    } else {
        Err(format!("{share} is not between 0 and 1"))
    }
}

impl PlayArgs {
    /// The settings these flags give.
    ///
    /// # Errors
    /// Rules that make no sense (a zero ply limit, adjudication over one ply).
    pub fn settings(&self) -> Result<PlaySettings, String> {
        let rules = stera_service::convert::game_rules(
            self.ply_limit,
            self.adjudicate_cp,
            self.adjudicate_plies,
        );
        rules.check().map_err(|e| e.to_string())?;
        Ok(PlaySettings {
            share: self.play_share,
            games: self.games,
            limits: Limits {
                nodes: (self.play_nodes > 0).then_some(self.play_nodes),
                depth: (self.play_depth > 0).then_some(self.play_depth),
                time: (self.play_time_ms > 0)
                    .then(|| std::time::Duration::from_millis(u64::from(self.play_time_ms))),
            },
            rules,
            temperature: self.play_temperature,
            // Bound at start, once the store directory exists (`lib.rs`).
            games_out: None,
            seed: self.play_seed,
            gate: Arc::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_games::{GameMove, MoveSource, Termination};

    fn ledger(share: f64, games: Option<u64>) -> SelfPlayLedger {
        SelfPlayLedger::new(PlaySettings {
            share,
            games,
            ..PlaySettings::default()
        })
        .unwrap()
    }

    fn game(moves: &[&str]) -> Game {
        Game {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            moves: moves
                .iter()
                .map(|m| GameMove::new(m.parse().unwrap(), MoveSource::Engine))
                .collect(),
            result: GameResult {
                outcome: Outcome::BlackWins,
                termination: Termination::Resignation,
            },
        }
    }

    #[test]
    fn games_at_once_are_the_share_of_the_slots() {
        let l = ledger(0.25, None);
        l.set_wanted(10, false);
        assert_eq!(l.settings.gate.wanted(), 3);
        // At least one game while there is any slot.
        l.set_wanted(1, false);
        assert_eq!(l.settings.gate.wanted(), 1);
        l.set_wanted(0, false);
        assert_eq!(l.settings.gate.wanted(), 0);
        // Idle thinking gives every slot to games only towards a target.
        l.set_wanted(10, true);
        assert_eq!(l.settings.gate.wanted(), 3);
        let target = ledger(0.25, Some(5));
        target.set_wanted(10, true);
        assert_eq!(target.settings.gate.wanted(), 10);
        let off = ledger(0.0, Some(5));
        off.set_wanted(10, true);
        assert_eq!(off.settings.gate.wanted(), 0);
        assert!(off.target_done());
    }

    #[test]
    fn a_counted_game_is_tallied_and_stops_at_the_target() {
        let mut l = ledger(1.0, Some(1));
        let mut store = stera_book::MemoryStore::new();
        let registry = Registry::default();
        assert!(!l.target_done());
        let won = game(&["7g7f", "3c3d", "2g2f"]);
        let counts = l.counts(&won, &Book::new()).unwrap();
        let counted = l.count(&mut store, 7, &won, &counts, &registry).unwrap();
        assert_eq!(counted, 1);
        assert_eq!(l.tally().black, 1);
        assert!(l.target_done());
        l.set_wanted(10, false);
        assert_eq!(l.settings.gate.wanted(), 0);
        // A game the rules refuse has no counts.
        let err = l
            .counts(&game(&["7g7f", "7g7f"]), &Book::new())
            .unwrap_err();
        assert!(err.contains("7g7f"), "{err}");
    }

    #[test]
    fn a_position_the_book_holds_as_its_flipped_twin_counts_for_the_twin() {
        // The book holds the start and the twin of the position after 7g7f 3c3d
        // (white to move on the mirrored board), not that position itself.
        let start = stera_rules::Position::startpos();
        let played =
            stera_rules::Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
        let twin = stera_rules::Position::from_sfen(&played.flipped().to_sfen()).unwrap();
        let mut book = Book::new();
        for pos in [&start, &twin] {
            book.insert(&stera_book::ThoughtNode {
                key: pos.key(),
                origin: stera_book::Origin::Sfen(pos.to_sfen_without_ply()),
                ply: 1,
                values: vec![0; pos.legal_move_count()],
                depths: None,
                evaluator: 0,
                timestamp: 0,
            })
            .unwrap();
        }
        // Black wins: the start (black to move) and the twin's situation (black
        // to move in the game, so the twin's side to move) are wins.
        let mut counts = ledger(1.0, None)
            .counts(&game(&["7g7f", "3c3d", "2g2f"]), &book)
            .unwrap();
        counts.sort_by_key(|(k, _)| k.0);
        let mut expected = vec![
            (start.key(), GameCounts::WIN),
            (twin.key(), GameCounts::WIN),
        ];
        expected.sort_by_key(|(k, _)| k.0);
        assert_eq!(counts, expected);
    }
}
