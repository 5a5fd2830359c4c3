//! What a play job is: a game from a root of the book. The coordinator samples the
//! opening from the book (both sides follow it, by the softmax of the exported
//! minimax values, as `book-tools match` does), the worker plays the rest with its
//! engine on both sides and reports the whole game, and the coordinator checks the
//! game with the same rules ([`stera_games::verify`]) before every book position it
//! passed through gets the result, durably, in the store.
//!
//! Openings come from an analysed snapshot of the book ([`AnalysedBook`]: the same
//! values the export writes), rebuilt on a thread of its own when the live book has
//! grown enough ([`stera_games::learning_run::book_grew_enough`], the rule
//! learning reads a growing book by too), so the dispatcher never waits for an
//! analysis. Results count against the live book.
//!
//! Like [`crate::think`], this module never sees a stream or a lease table.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_book::{Book, BookError, GameCounts, NodeStore};
use stera_games::{AnalysedBook, GameResult, GameRules, Outcome, SoftmaxPolicy};
use stera_proto::v1::{Job, Limits, PlayJob, PlayResult, job};
use stera_rules::{Key, Move, Position};

use crate::leases::LeaseId;
use crate::registry::Registry;

/// The operator's settings for games.
#[derive(Debug, Clone)]
pub struct PlaySettings {
    /// Fraction of the cluster's slots that play (0 = no games).
    pub share: f64,
    /// Stop handing out play jobs after this many counted games in this run.
    pub games: Option<u64>,
    /// The engines' budget per move.
    pub limits: Limits,
    /// The game rules, the same for the worker and the check here.
    pub rules: GameRules,
    /// Softmax temperature (centipawns) of the opening sampling.
    pub temperature: f64,
    /// Counted games are appended here (one USI line each), if set: opened at
    /// start (`--out-games`), so the file stays the one checked then.
    pub games_out: Option<std::sync::Arc<stera_book::store_path::BoundOutput>>,
    /// Seed of the opening draws.
    pub seed: u64,
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
        }
    }
}

/// A play job's payload under its lease: where the game starts and the opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameTicket {
    pub start_sfen: String,
    pub opening: Vec<Move>,
}

/// A checked game, ready to count.
#[derive(Debug, Clone)]
pub struct CountedGame {
    pub result: GameResult,
    pub plies: usize,
    /// Each book position the game passed through (once), with its result from
    /// the side to move's view there.
    pub counts: Vec<(Key, GameCounts)>,
    /// The game as `--out-games` writes it (its extension chooses the format,
    /// [`stera_games::games_file`]); empty without `--out-games`.
    pub line: String,
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
    pub rejected: u64,
}

impl GameTally {
    /// Games counted.
    #[must_use]
    pub fn counted(&self) -> u64 {
        self.black + self.white + self.draws
    }
}

/// The play jobs of a run.
pub struct PlayJobs {
    settings: PlaySettings,
    roots: Vec<Position>,
    next_root: usize,
    rng: StdRng,
    /// The analysed snapshot openings are sampled from.
    snapshot: Option<Arc<AnalysedBook>>,
    /// Book size when the snapshot (or the one being built) was taken.
    snapshot_len: Option<usize>,
    building: Option<Receiver<Result<AnalysedBook, String>>>,
    in_flight: usize,
    tally: GameTally,
    /// Slot-seconds of play owed (positive) or overdrawn (negative): see [`Self::wanted`].
    credit: f64,
    /// When the credit was last brought up to date, and the capacity then.
    accrued_at: Option<Instant>,
    capacity: usize,
    /// Set at the first write to `--out-games` that failed: the file holds the
    /// games before it, whole, and no later game is written to it.
    games_out_stopped: bool,
}

impl PlayJobs {
    /// Play jobs from `roots` (position commands, as the run configuration holds them).
    ///
    /// # Errors
    /// A root that is not a position.
    pub fn new(settings: PlaySettings, roots: &[String]) -> Result<Self, String> {
        let roots = roots
            .iter()
            .map(|r| Position::from_position_command(r).map_err(|e| format!("root `{r}`: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        settings.rules.check().map_err(|e| e.to_string())?;
        Ok(Self {
            rng: StdRng::seed_from_u64(settings.seed),
            settings,
            roots,
            next_root: 0,
            snapshot: None,
            snapshot_len: None,
            building: None,
            in_flight: 0,
            tally: GameTally::default(),
            credit: 0.0,
            accrued_at: None,
            capacity: 0,
            games_out_stopped: false,
        })
    }

    /// Whether this run plays at all.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.settings.share > 0.0 && !self.roots.is_empty()
    }

    /// Games of this run.
    #[must_use]
    pub fn tally(&self) -> GameTally {
        self.tally
    }

    /// Play leases outstanding.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether a games target was set (then slots that thinking leaves idle play).
    #[must_use]
    pub fn has_target(&self) -> bool {
        self.settings.games.is_some()
    }

    /// How many games to start now, with `capacity` slots in all (held and free).
    ///
    /// Games take far longer than evaluations, so a share of the *jobs* would not
    /// be a share of the *slots*; and with fewer slots than `1 / share`, a share of
    /// the slots in flight rounds to nothing or everything. A leaky bucket of slot
    /// time settles both: it fills at `share × capacity` slot-seconds per second,
    /// drains at one per game in flight, and a game may start while it is not
    /// overdrawn. In the long run games hold `share` of the slot time.
    pub fn wanted(&mut self, capacity: usize, now: Instant) -> usize {
        self.accrue(now);
        self.capacity = capacity;
        if !self.enabled() || capacity == 0 || self.credit < 0.0 {
            return 0;
        }
        let target = self.settings.share * capacity as f64;
        let room = (target.ceil() as usize).saturating_sub(self.in_flight);
        room.max(usize::from(self.in_flight == 0)).min(self.room())
    }

    /// Brings the credit up to `now` with the games in flight since the last time
    /// (called whenever that number changes, so the integral is exact).
    fn accrue(&mut self, now: Instant) {
        let dt = self
            .accrued_at
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        self.accrued_at = Some(now);
        let capacity = self.capacity as f64;
        let target = self.settings.share * capacity;
        // Bounded both ways: idle hours must not buy a burst of games, and a long
        // game must not block play for days after it.
        self.credit = (self.credit + dt * (target - self.in_flight as f64))
            .clamp(-600.0 * capacity.max(1.0), capacity.max(1.0));
    }

    /// How many more games may go out (the target counts games in flight).
    #[must_use]
    pub fn room(&self) -> usize {
        if !self.enabled() || self.snapshot.is_none() {
            return 0;
        }
        self.settings.games.map_or(usize::MAX, |target| {
            let left = target.saturating_sub(self.tally.counted() + self.in_flight as u64);
            usize::try_from(left).unwrap_or(usize::MAX)
        })
    }

    /// Whether the games target is met (true when there is none, or no play: then
    /// the think limit alone ends the run).
    #[must_use]
    pub fn target_done(&self) -> bool {
        !self.enabled()
            || self
                .settings
                .games
                .is_none_or(|target| self.tally.counted() >= target)
    }

    /// Takes a finished snapshot and starts a new one when the book has grown
    /// enough. Cheap when nothing is due; the copy of the book tables is the only
    /// work done on the caller's thread.
    pub fn refresh(&mut self, book: &Book) {
        if !self.enabled() {
            return;
        }
        if let Some(rx) = &self.building {
            match rx.try_recv() {
                Ok(Ok(analysed)) => {
                    tracing::info!(
                        positions = analysed.len(),
                        "game openings: new book snapshot"
                    );
                    self.snapshot = Some(Arc::new(analysed));
                    self.building = None;
                }
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "game openings: the book snapshot failed");
                    self.building = None;
                }
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => self.building = None,
            }
        }
        let due = self.snapshot_len.is_none_or(|len| {
            stera_games::learning_run::book_grew_enough(len as u64, book.len() as u64)
        });
        if !due || self.building.is_some() {
            return;
        }
        self.snapshot_len = Some(book.len());
        let copy = book.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("game-openings".into())
            .spawn(move || {
                let _ = tx.send(AnalysedBook::new(copy).map_err(|e| e.to_string()));
            });
        match spawned {
            Ok(_) => self.building = Some(rx),
            Err(e) => tracing::error!(error = %e, "game openings: cannot start the analysis"),
        }
    }

    /// The next game: a root in turn, and an opening sampled from the snapshot.
    /// `None` before the first snapshot exists.
    pub fn ticket(&mut self, now: Instant) -> Option<GameTicket> {
        let snapshot = self.snapshot.clone()?;
        let root = self.roots.get(self.next_root)?.clone();
        self.next_root = (self.next_root + 1) % self.roots.len();
        let policy = SoftmaxPolicy::new(snapshot, self.settings.temperature);
        // Leave the engines at least one move: an opening as long as the ply limit
        // would be a game the engines never touch.
        let max = (self.settings.rules.ply_limit as usize).saturating_sub(1);
        let rng = &mut self.rng;
        let opening = stera_games::book::follow(&policy, &root, max, || rng.random::<f64>());
        self.accrue(now);
        self.in_flight += 1;
        Some(GameTicket {
            start_sfen: root.to_sfen(),
            opening,
        })
    }

    /// The job message for a ticket under lease `lease_id`.
    #[must_use]
    pub fn job(&self, lease_id: LeaseId, ticket: &GameTicket, deadline_unix_ms: u64) -> Job {
        let (adjudicate_cp, adjudicate_plies) = self
            .settings
            .rules
            .adjudication
            .map_or((0, 0), |a| (a.threshold.unsigned_abs(), a.plies));
        Job {
            lease_id,
            deadline_unix_ms,
            kind: Some(job::Kind::Play(PlayJob {
                start_sfen: ticket.start_sfen.clone(),
                opening: ticket.opening.iter().map(ToString::to_string).collect(),
                limits: Some(self.settings.limits),
                ply_limit: self.settings.rules.ply_limit,
                adjudicate_cp,
                adjudicate_plies,
            })),
        }
    }

    /// A play lease ended (counted, rejected, expired, given back).
    pub fn put_back(&mut self, now: Instant) {
        self.accrue(now);
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Checks a reported game against its ticket and the rules, and finds the book
    /// positions it passed through in `book`. The lease stays counted in flight
    /// until [`Self::put_back`].
    ///
    /// # Errors
    /// What is wrong with the game, for the worker and the metrics.
    pub fn check(
        &self,
        ticket: &GameTicket,
        result: &PlayResult,
        book: &Book,
    ) -> Result<CountedGame, String> {
        let claimed = stera_service::convert::result_from_proto(result)?;
        let moves =
            stera_service::convert::game_moves_from_proto(&result.moves, ticket.opening.len())?;
        if moves.len() < ticket.opening.len()
            || moves.iter().zip(&ticket.opening).any(|(m, o)| m.mv != *o)
        {
            return Err(format!(
                "the game does not begin with the {} opening moves it was given",
                ticket.opening.len()
            ));
        }
        let verified =
            stera_games::verify(&ticket.start_sfen, &moves, &claimed, &self.settings.rules)
                .map_err(|e| e.to_string())?;
        let mut seen = HashSet::new();
        let counts = verified
            .positions
            .iter()
            .filter_map(|v| {
                // A position the book holds as its colour-flipped twin counts for
                // the twin: the same situation, so the same side-to-move result.
                let (_, twin) = book.get_or_twin(v.key, v.flipped_key)?;
                let key = if twin { v.flipped_key } else { v.key };
                seen.insert(key.0).then_some((key, v.side_to_move))
            })
            .map(|(key, color)| (key, claimed.outcome.counts_for(color)))
            .collect();
        let line = match &self.settings.games_out {
            Some(out) => {
                let game = stera_games::Game {
                    start_sfen: ticket.start_sfen.clone(),
                    moves,
                    result: claimed,
                };
                stera_games::games_file::GamesFormat::of(out.path())
                    .entry(&game, SELF_PLAY, SELF_PLAY)
                    .map_err(|e| e.to_string())?
            }
            None => String::new(),
        };
        Ok(CountedGame {
            result: claimed,
            plies: verified.plies,
            counts,
            line,
        })
    }

    /// Counts a checked game durably (idempotent by `game_id`, the lease id);
    /// returns whether it was new.
    ///
    /// # Errors
    /// The store write failed: nothing of the game is counted.
    pub fn count<S: NodeStore>(
        &mut self,
        store: &mut S,
        game_id: LeaseId,
        game: &CountedGame,
    ) -> Result<bool, BookError> {
        let new = store.record_game(game_id, &game.counts)?;
        if new {
            match game.result.outcome {
                Outcome::BlackWins => self.tally.black += 1,
                Outcome::WhiteWins => self.tally.white += 1,
                Outcome::Draw => self.tally.draws += 1,
            }
        }
        Ok(new)
    }

    /// A reported game under its lease: the lease ends (a voided one was put
    /// back when it was voided; a late game still counts), and the game is
    /// checked against its ticket and the rules.
    ///
    /// # Errors
    /// What is wrong with the game (counted as rejected).
    pub(crate) fn receive(
        &mut self,
        ticket: &GameTicket,
        result: &PlayResult,
        book: &Book,
        held: bool,
    ) -> Result<CountedGame, String> {
        if held {
            self.put_back(Instant::now());
        }
        self.check(ticket, result, book).inspect_err(|_| {
            self.tally.rejected += 1;
        })
    }

    /// Counts a received game into the book (one durable store write; see
    /// [`Self::count`]) and tells it.
    ///
    /// # Errors
    /// The store write failed: the reason for the worker.
    pub(crate) fn commit<S: NodeStore>(
        &mut self,
        store: &mut S,
        lease: LeaseId,
        game: &CountedGame,
        registry: &Registry,
    ) -> Result<(), String> {
        match self.count(store, lease, game) {
            Ok(new) => {
                if new {
                    crate::observe::game_counted(
                        registry,
                        lease,
                        &game.result,
                        game.plies,
                        game.counts.len(),
                    );
                    self.write_out(&game.line, registry);
                }
                Ok(())
            }
            Err(e) => {
                crate::observe::game_store_failed(&e);
                Err(format!("the coordinator could not store the game: {e}"))
            }
        }
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
    /// Fraction of the workers' job slot time that plays games (0 to 1; 0: no
    /// games; a worker's job slots are its engines plus its prefetch). Play
    /// jobs start from the roots, follow the book on both sides and let the
    /// worker's engine play on from where the book ends; every book position a
    /// game passed through gets its result.
    #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
    pub play_share: f64,
    /// Stop handing out play jobs after this many counted games in this run (the
    /// run also ends only when this is reached). Default: no target. Formerly
    /// `--games` (the learning games' target is `--learn-games`).
    #[arg(long = "play-games", alias = "games", value_name = "GAMES")]
    pub games: Option<u64>,
    /// Node budget per move in games (0: none).
    #[arg(long, value_name = "NODES", default_value_t = 0)]
    pub play_nodes: u64,
    /// Depth limit per move in games (0: none).
    #[arg(long, value_name = "DEPTH", default_value_t = 0)]
    pub play_depth: u32,
    /// Time per move in games, in milliseconds (0: none). With no limit at all the
    /// worker's default budget applies (its --nodes/--depth/--time-ms, else the
    /// built-in engine's 300,000 nodes).
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
                nodes: self.play_nodes,
                depth: self.play_depth,
                time_ms: self.play_time_ms,
            },
            rules,
            temperature: self.play_temperature,
            // Bound at start, once the store directory exists (`lib.rs`).
            games_out: None,
            seed: self.play_seed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_proto::v1::{self, PlayedMove};

    fn jobs() -> PlayJobs {
        let settings = PlaySettings {
            share: 1.0,
            ..PlaySettings::default()
        };
        PlayJobs::new(settings, &["startpos".to_owned()]).unwrap()
    }

    fn game(moves: &[&str]) -> PlayResult {
        PlayResult {
            moves: moves
                .iter()
                .map(|m| PlayedMove {
                    usi: (*m).to_owned(),
                    ..PlayedMove::default()
                })
                .collect(),
            outcome: v1::Outcome::BlackWins.into(),
            termination: v1::Termination::Resignation.into(),
        }
    }

    #[test]
    fn a_game_must_begin_with_its_opening() {
        let ticket = GameTicket {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            opening: vec!["7g7f".parse().unwrap(), "3c3d".parse().unwrap()],
        };
        let book = Book::new();
        // White resigns after the opening and one more move each way.
        let ok = jobs().check(&ticket, &game(&["7g7f", "3c3d", "2g2f"]), &book);
        assert_eq!(ok.unwrap().plies, 3);
        for moves in [&["2g2f", "3c3d", "7g7f"][..], &["7g7f"][..]] {
            let err = jobs().check(&ticket, &game(moves), &book).unwrap_err();
            assert!(
                err.contains("does not begin with the 2 opening moves"),
                "{err}"
            );
        }
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
        let ticket = GameTicket {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            opening: Vec::new(),
        };
        // Black wins: the start (black to move) and the twin's situation (black
        // to move in the game, so the twin's side to move) are wins.
        let counted = jobs()
            .check(&ticket, &game(&["7g7f", "3c3d", "2g2f"]), &book)
            .unwrap();
        let mut counts = counted.counts;
        counts.sort_by_key(|(k, _)| k.0);
        let mut expected = vec![
            (start.key(), GameCounts::WIN),
            (twin.key(), GameCounts::WIN),
        ];
        expected.sort_by_key(|(k, _)| k.0);
        assert_eq!(counts, expected);
    }

    #[test]
    fn the_bucket_keeps_games_at_their_share_of_slot_time() {
        let mut p = PlayJobs::new(
            PlaySettings {
                share: 0.25,
                ..PlaySettings::default()
            },
            &["startpos".to_owned()],
        )
        .unwrap();
        p.snapshot = Some(Arc::new(AnalysedBook::new(Book::new()).unwrap()));
        // One slot, games 3 s long: simulate a second at a time.
        let start = Instant::now();
        let (mut playing, mut game_left) = (0u32, 0u32);
        for s in 0..4000u64 {
            let now = start + std::time::Duration::from_secs(s);
            if game_left == 0 && p.in_flight() == 1 {
                p.put_back(now);
            }
            if p.in_flight() == 0 && p.wanted(1, now) == 1 {
                assert!(p.ticket(now).is_some());
                game_left = 3;
            }
            if p.in_flight() == 1 {
                playing += 1;
                game_left -= 1;
            }
        }
        let share = f64::from(playing) / 4000.0;
        assert!((share - 0.25).abs() < 0.02, "{share}");
    }
}
