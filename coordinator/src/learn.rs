//! Learning games on the cluster: the book side played by the learner
//! ([`LearningPolicy`], the same one `book-tools learn` plays), the opponents by
//! the workers' engines at the budgets of a pool, every finished game counted
//! in the store against its opponent.
//!
//! The game stays in the coordinator, as a client's game does in `book-tools
//! match --coordinator`: each engine move, the opponent's and the book side's
//! out of book, is one search job (the position with every move so far) served
//! by any worker, so a worker lost mid-game costs one search, and every move is
//! checked legal when it comes back (`search.rs`) and played under the
//! coordinator's own [`stera_games::Referee`]: the game counted is the one the
//! coordinator saw, not a worker's claim. `--learn-concurrency` games run at
//! once, each holding at most one search: that is the share of the workers'
//! slots learning takes (searches go before think and play jobs).
//!
//! Two halves, as everywhere in the coordinator: [`LearnLedger`] lives with the
//! dispatcher (the one owner of the store) and counts a finished game durably
//! ([`stera_book::NodeStore::record_learning_game`], one game id each, so a game
//! is counted at most once and a restarted coordinator goes on from the ids
//! stored); [`LearnDriver`] plays the games on threads of its own and talks to
//! the dispatcher through its handle only.
//!
//! How far learning has come is the count of settled key positions
//! ([`KeyPositions`], the same as `book-tools learn` reports): in the progress
//! lines, and with `--learn-stop-when-settled P` the rule that ends learning
//! early. Once a check (after each round of the openings) finds every key
//! position settled, no new game starts, the games in flight are counted, and
//! the last thread to end tells the ledger that what it counted is the run's
//! target ([`LearnLedger::end`]).
//!
//! An opponent is the workers' engine (its identity as the search replies name
//! it) at a budget of the pool: a game whose opponent moves came from two
//! engines is not counted (its opponent is no one), so a mixed cluster never
//! mixes engines in one ledger.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stera_book::{Book, GameCounts, NodeStore};
use stera_engine::{EvalError, Limits, Player, PlayerMove};
use stera_games::Budget;
use stera_games::opponent::Pool;
use stera_games::results_book::{
    DEFAULT_LEARNING_WINDOW, DEFAULT_SETTLED, KeyPositions, SettledCount, check_settled_threshold,
};
use stera_games::{
    AnalysedBook, GameRules, LearningPolicy, OpponentSpec, PlayOptions, ResultsBook, Side,
};
use stera_proto::v1::SearchRequest;
use stera_rules::{Color, Key, Position};
use tokio::sync::oneshot;

use crate::handle::{DispatcherHandle, Event};

/// The flags of learning games.
#[derive(Debug, Clone, clap::Args)]
pub struct LearnArgs {
    /// Learning games to play in this run (the run ends only when they are
    /// counted): the book side follows the learner (Thompson sampling over the
    /// book's moves by their learning results, as `book-tools learn`), the
    /// opponents are the workers' engines at the budgets of --learn-opponent.
    /// Default 0: no learning games.
    #[arg(long, value_name = "GAMES", default_value_t = 0)]
    pub learn_games: u64,
    /// Learning games played at once, 1 to 256 (as `book-tools learn
    /// --learn-concurrency`). Each holds one search job at a time, and
    /// searches go before think and play jobs: this is the number of the
    /// workers' job slots learning takes.
    #[arg(long, value_name = "N", default_value_t = stera_games::DEFAULT_LEARN_CONCURRENCY,
          value_parser = parse_learn_concurrency)]
    pub learn_concurrency: usize,
    /// An opponent of the pool (repeatable): a budget (`--nodes N`, `--depth D`
    /// or `--time-ms MS`) with `--weight W` (its share of the games, default 1)
    /// and `--node-jitter S` (default 0.5), quoted as one argument, e.g.
    /// `--learn-opponent "--nodes 500" --learn-opponent "--nodes 4000 --weight 2"`.
    /// The engine is the workers' own (an engine flag here, `--engine-cmd`
    /// included, is refused); its games are counted under the engine's
    /// identity and the budget. Default: one opponent at --learn-nodes.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub learn_opponent: Vec<String>,
    /// Node budget per move of the book side's engine (once its line leaves
    /// the book): the budget the book is made for, jittered by
    /// --learn-node-jitter (`book-tools learn --nodes`, whose default is the
    /// same).
    #[arg(long, value_name = "NODES", default_value_t = stera_games::DEFAULT_LEARN_NODES)]
    pub learn_nodes: u64,
    /// Jitter each book-side engine move's node limit by up to this share (0.5 =
    /// ±50 %), drawn from --learn-seed, so that a deterministic engine does not
    /// replay the same game (0: every move at --learn-nodes); `book-tools learn
    /// --node-jitter` with a node limit, and an opponent's `--node-jitter`, have
    /// the same default.
    #[arg(long, value_name = "SHARE", default_value_t = stera_games::play::DEFAULT_NODE_JITTER)]
    pub learn_node_jitter: f64,
    /// Openings of the learning games, one per line (`startpos`, an SFEN, or a
    /// position command with moves; `#` starts a comment), used in turn, each
    /// with the learner as Black and as White: the same reader as `book-tools
    /// match` and `learn`. Default: the store's roots.
    #[arg(long, value_name = "FILE")]
    pub learn_openings: Option<std::path::PathBuf>,
    /// Seed of the learner's draws, the node jitter and the opponents' turns.
    #[arg(long, value_name = "SEED", default_value_t = stera_games::DEFAULT_PLAY_SEED)]
    pub learn_seed: u64,
    /// Grow where the games go: where a learning game left the book (an
    /// opponent's reply the book lacks, or a move the learner tried that nobody
    /// thought) before this game ply, that position is queued for thinking (0:
    /// off). Early exits are what the book's users meet in every game; deeper
    /// ones are left to the selection.
    #[arg(long, value_name = "PLY", default_value_t = 16)]
    pub learn_grow_plies: u32,
    /// Share of the think jobs given to the positions queued by
    /// --learn-grow-plies while any are queued (0 to 1; the rest follow the
    /// Super Tera-Shock selection).
    #[arg(long, value_name = "SHARE", default_value_t = 0.5)]
    pub learn_grow_share: f64,
    /// Start no new learning game once every key position (each learning
    /// opening's position, and the one after the opponents' most played reply
    /// there) is settled: the move the results rule plays there is the best
    /// with at least this posterior probability, in (0.5, 1); checked after
    /// each round of the openings (every opening played as Black and as
    /// White). Games in flight finish and are counted; the run then goes on as
    /// when --learn-games is reached. Default: play all --learn-games.
    #[arg(long, value_name = "PROBABILITY")]
    pub learn_stop_when_settled: Option<f64>,
    /// Try only the book moves at most CP below the position's best value: the
    /// window the learner samples from, as `book-tools learn --learn-window`.
    /// The weight of a move's value against its games is --prior-games, the
    /// same the exports by results use.
    #[arg(long, value_name = "CP", default_value_t = DEFAULT_LEARNING_WINDOW)]
    pub learn_window: i32,
}

/// `--learn-concurrency`: 1 to 256 games at once, as `book-tools learn`'s.
fn parse_learn_concurrency(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not 1 to 256 games at once")),
    }
}

impl LearnArgs {
    /// Checks the learning flags alone, before anything starts.
    ///
    /// # Errors
    /// What [`LearnArgs::pool`] refuses, a negative window, a stopping
    /// probability outside (0.5, 1), or one given without learning games.
    pub fn check(&self) -> Result<(), String> {
        if self.learn_window < 0 {
            return Err(format!(
                "--learn-window must be at least 0, not {}",
                self.learn_window
            ));
        }
        if let Some(p) = self.learn_stop_when_settled {
            check_settled_threshold(p).map_err(|e| format!("--learn-stop-when-settled {e}"))?;
            if self.learn_games == 0 {
                return Err(
                    "--learn-stop-when-settled stops learning games: give --learn-games too".into(),
                );
            }
        }
        self.pool().map(drop)
    }

    /// The pool these flags name.
    ///
    /// # Errors
    /// An opponent that cannot be read, or one that names an engine (the
    /// workers' engines play on the cluster).
    pub fn pool(&self) -> Result<Pool, String> {
        if self.learn_nodes == 0 {
            return Err("--learn-nodes must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.learn_node_jitter) {
            return Err(format!(
                "--learn-node-jitter must lie in [0, 1), not {}",
                self.learn_node_jitter
            ));
        }
        if !(0.0..=1.0).contains(&self.learn_grow_share) {
            return Err(format!(
                "--learn-grow-share must lie in [0, 1], not {}",
                self.learn_grow_share
            ));
        }
        let members = if self.learn_opponent.is_empty() {
            vec![
                OpponentSpec::parse(&format!("--nodes {}", self.learn_nodes))
                    .map_err(|e| e.to_string())?,
            ]
        } else {
            self.learn_opponent
                .iter()
                .map(|text| {
                    let spec = OpponentSpec::parse(text).map_err(|e| e.to_string())?;
                    if spec.names_engine() {
                        let given = if spec.engine_flags().is_empty() {
                            "an engine".to_owned()
                        } else {
                            spec.engine_flags().join(", ")
                        };
                        return Err(format!(
                            "--learn-opponent `{}` gives {given}: on the cluster the workers' engines play (each worker's own engine flags choose it), so an opponent is a budget (--nodes, --depth or --time-ms) with --weight and --node-jitter only",
                            stera_rules::excerpt(text)
                        ));
                    }
                    Ok(spec)
                })
                .collect::<Result<_, _>>()?
        };
        Pool::new(members).map_err(|e| e.to_string())
    }
}

/// The dispatcher's half: counts finished learning games in the store.
pub(crate) struct LearnLedger {
    /// Games this run plays (0: none).
    target: u64,
    /// Games counted in this run (recorded or without a book move to teach).
    counted: u64,
    /// The next game id: above every id of the store and the clock floor.
    next_id: u64,
    /// Where games left the book early, to be thought: the position before the
    /// opponent's reply and the reply (claimed when handed out).
    exits: std::collections::VecDeque<(Position, stera_rules::Move)>,
    /// Share of the think jobs the exits get while any are queued.
    grow_share: f64,
}

/// Exits kept waiting at most (the oldest are dropped beyond): a cluster that
/// plays far more games than it thinks positions would otherwise queue without
/// end.
const MAX_QUEUED_EXITS: usize = 10_000;

impl LearnLedger {
    pub(crate) fn new(target: u64, grow_share: f64) -> Self {
        Self {
            target,
            counted: 0,
            next_id: 0,
            exits: std::collections::VecDeque::new(),
            grow_share,
        }
    }

    /// Queues where a game left the book (see [`LearnArgs::learn_grow_plies`]).
    pub(crate) fn queue_exit(&mut self, exit: Option<Box<(Position, stera_rules::Move)>>) {
        if let Some(exit) = exit {
            tracing::debug!(sfen = %exit.0.to_sfen(), mv = %exit.1, "a learning game left the book");
            if self.exits.len() >= MAX_QUEUED_EXITS {
                self.exits.pop_front();
            }
            self.exits.push_back(*exit);
        }
    }

    /// Up to the exits' share of `think` leaves: queued exits still outside the
    /// book, claimed in `live` (marked in flight).
    pub(crate) fn exit_leaves<S: NodeStore>(
        &mut self,
        live: &mut stera_book::LiveBook<S>,
        think: usize,
    ) -> Vec<stera_book::Leaf> {
        if self.exits.is_empty() || think == 0 || self.grow_share <= 0.0 {
            return Vec::new();
        }
        let wanted = ((think as f64 * self.grow_share).ceil() as usize).min(think);
        let mut leaves = Vec::new();
        while leaves.len() < wanted {
            let Some((parent, mv)) = self.exits.pop_front() else {
                break;
            };
            if let Some(leaf) = live.claim_child(&parent, mv) {
                tracing::debug!(sfen = %leaf.sfen(), "thinking where a learning game left the book");
                leaves.push(leaf);
            }
        }
        leaves
    }

    /// True when the run's learning games are all counted (or none were asked for).
    pub(crate) fn done(&self) -> bool {
        self.counted >= self.target
    }

    /// Learning games counted in this run.
    pub(crate) fn counted(&self) -> u64 {
        self.counted
    }

    /// No more learning games come (every key position settled, see
    /// [`LearnArgs::learn_stop_when_settled`]): the games counted are the
    /// run's target, and the run goes on as when `--learn-games` is reached.
    pub(crate) fn end(&mut self) {
        if self.counted < self.target {
            tracing::debug!(
                counted = self.counted,
                target = self.target,
                "learning games end before the target"
            );
            self.target = self.counted;
        }
    }

    /// The book now and the learning counters of the opponents whose identity
    /// ends with one of `budgets` (the pool's ledgers of earlier runs).
    pub(crate) fn snapshot<S: NodeStore>(
        store: &S,
        book: &Book,
        budgets: &[String],
    ) -> Result<(Book, HashMap<Key, GameCounts>), String> {
        let opponents = store.opponents().map_err(|e| e.to_string())?;
        let ids: Vec<_> = opponents
            .iter()
            .filter(|o| {
                budgets
                    .iter()
                    .any(|b| stera_games::opponent::plays_at(&o.identity, b))
            })
            .map(|o| o.id)
            .collect();
        let counts = stera_book::learning_counts(store, &ids).map_err(|e| e.to_string())?;
        Ok((book.clone(), counts))
    }

    /// Counts one finished game against `identity`: its counters (empty when
    /// the learner played no book move) under a new game id, durably. Returns
    /// the games counted in this run.
    pub(crate) fn count<S: NodeStore>(
        &mut self,
        store: &mut S,
        identity: &str,
        counts: &[(Key, GameCounts)],
    ) -> Result<u64, String> {
        if !counts.is_empty() {
            if self.next_id == 0 {
                let clock_floor = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
                    u64::try_from(d.as_millis()).unwrap_or(u64::MAX) << 16
                });
                let stored = store
                    .max_game_id()
                    .map_err(|e| e.to_string())?
                    .map_or(0, |m| m.saturating_add(1));
                self.next_id = stored.max(clock_floor);
            }
            let opponent = store.intern_opponent(identity).map_err(|e| e.to_string())?;
            store
                .record_learning_game(opponent, self.next_id, counts)
                .map_err(|e| e.to_string())?;
            tracing::debug!(id = self.next_id, %opponent, "learning game recorded");
            self.next_id += 1;
        }
        self.counted += 1;
        Ok(self.counted)
    }
}

/// Everything the learning threads share.
struct Shared {
    handle: DispatcherHandle,
    runtime: tokio::runtime::Handle,
    pool: Pool,
    /// The learner over the book as of its last snapshot: replaced while
    /// the run grows the book ([`refresh`]), so that positions thought where
    /// games went are played and learned in the same run. A game keeps the
    /// policy it started with.
    policy: std::sync::RwLock<Arc<LearningPolicy>>,
    /// The pool's budgets, whose ledgers a snapshot reads.
    budgets: Vec<String>,
    /// Positions of the book when the learner's snapshot was taken.
    snapshot_len: AtomicU64,
    /// One refresh at a time.
    refreshing: AtomicBool,
    openings: Vec<stera_games::Opening>,
    rules: GameRules,
    book_limits: Limits,
    book_node_jitter: f64,
    grow_plies: u32,
    seed: u64,
    target: u64,
    started: AtomicU64,
    stop: AtomicBool,
    /// When the first game started, for the rate and the time left.
    began: std::time::Instant,
    /// The positions the settled count is taken over.
    key_positions: KeyPositions,
    /// The probability at which a key position counts as settled.
    settled_at: f64,
    /// `--learn-stop-when-settled` was given.
    stop_when_settled: bool,
    /// `--learn-window`.
    window: i32,
    /// `--prior-games`.
    prior_games: f64,
    /// Every key position was settled at a check: no new game starts, the
    /// games in flight finish and are counted.
    settled: AtomicBool,
    /// The latest settled count, for the progress lines between checks.
    last_settled: std::sync::Mutex<Option<SettledCount>>,
    /// Game threads still running; the last one to end after the key
    /// positions settled tells the dispatcher that no more games come.
    running: std::sync::atomic::AtomicUsize,
}

/// The threads that play learning games; [`LearnDriver::stop`] ends them.
pub struct LearnDriver {
    shared: Option<Arc<Shared>>,
    threads: Vec<JoinHandle<()>>,
}

impl LearnDriver {
    /// A driver that plays nothing (no learning games asked for).
    #[must_use]
    pub fn none() -> Self {
        Self {
            shared: None,
            threads: Vec::new(),
        }
    }

    /// Starts `args.learn_concurrency` threads that play `args.learn_games`
    /// games from `roots` (each a position command) through `handle`, the
    /// learner weighing a move's value as `prior_games` games.
    ///
    /// # Errors
    /// Bad flags or roots, or no book to learn on.
    pub async fn start(
        handle: DispatcherHandle,
        args: &LearnArgs,
        roots: &[String],
        ply_limit: u32,
        prior_games: f64,
    ) -> Result<Self, String> {
        if args.learn_games == 0 {
            return Ok(Self::none());
        }
        let pool = args.pool()?;
        let budgets: Vec<String> = pool.members().iter().map(OpponentSpec::budget).collect();
        let (reply, rx) = oneshot::channel();
        handle
            .send(Event::LearnSnapshot {
                budgets: budgets.clone(),
                reply,
            })
            .map_err(|e| e.to_string())?;
        let (book, counts) = rx.await.map_err(|e| e.to_string())??;
        let snapshot_len = book.len() as u64;
        let openings: Vec<stera_games::Opening> = match &args.learn_openings {
            Some(file) => stera_games::openings::read_file(file),
            None => stera_games::openings::parse_lines(
                roots.iter().map(String::as_str),
                "the store's roots",
            ),
        }
        .map_err(|e| e.to_string())?;
        let analysed = tokio::task::spawn_blocking(move || AnalysedBook::new(book))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot analyse the book: {e}"))?;
        let results = Arc::new(ResultsBook::new(Arc::new(analysed), counts));
        let policy = LearningPolicy::new(results, args.learn_window, prior_games);
        let key_positions = KeyPositions::of_openings(&openings);
        let threads = args
            .learn_concurrency
            .min(usize::try_from(args.learn_games).unwrap_or(usize::MAX));
        tracing::info!(
            games = args.learn_games,
            at_once = args.learn_concurrency,
            opponents = %pool.members().iter().map(|m| format!("{} (weight {})", m.budget(), m.weight)).collect::<Vec<_>>().join(", "),
            "learning games: {}",
            stera_games::BookPolicy::describe(&policy)
        );
        let shared = Arc::new(Shared {
            handle,
            runtime: tokio::runtime::Handle::current(),
            pool,
            policy: std::sync::RwLock::new(Arc::new(policy)),
            budgets,
            snapshot_len: AtomicU64::new(snapshot_len),
            refreshing: AtomicBool::new(false),
            openings,
            rules: GameRules {
                ply_limit,
                adjudication: None,
            },
            book_limits: Limits {
                nodes: Some(args.learn_nodes),
                ..Limits::default()
            },
            book_node_jitter: args.learn_node_jitter,
            grow_plies: args.learn_grow_plies,
            seed: args.learn_seed,
            target: args.learn_games,
            started: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            began: std::time::Instant::now(),
            key_positions,
            settled_at: args.learn_stop_when_settled.unwrap_or(DEFAULT_SETTLED),
            stop_when_settled: args.learn_stop_when_settled.is_some(),
            window: args.learn_window,
            prior_games,
            settled: AtomicBool::new(false),
            last_settled: std::sync::Mutex::new(None),
            running: std::sync::atomic::AtomicUsize::new(threads),
        });
        let threads = (0..threads)
            .map(|i| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("learn-{i}"))
                    .spawn(move || play_games(&shared))
                    .map_err(|e| format!("cannot start a learning thread: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            shared: Some(shared),
            threads,
        })
    }

    /// Stops the threads (a game in progress is given up, not counted) and
    /// waits for them.
    pub async fn stop(self) {
        if let Some(shared) = &self.shared {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let threads = self.threads;
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
    }
}

/// One thread's games, until the target is started, every key position is
/// settled (with `--learn-stop-when-settled`) or the driver stops.
fn play_games(shared: &Shared) {
    play_until_done(shared);
    if shared.running.fetch_sub(1, Ordering::AcqRel) == 1 && shared.settled.load(Ordering::Acquire)
    {
        // Every thread has counted its last game: what is counted now is all
        // this run's learning.
        let _ = shared.handle.send(Event::LearnEnded);
    }
}

fn play_until_done(shared: &Shared) {
    let mut failures_in_a_row = 0u32;
    while !shared.stop.load(Ordering::Relaxed) && !shared.settled.load(Ordering::Acquire) {
        let index = shared.started.fetch_add(1, Ordering::Relaxed);
        if index >= shared.target {
            return;
        }
        match play_one(shared, index) {
            Ok(()) => failures_in_a_row = 0,
            Err(e) => {
                // Settled meanwhile: a failed game is not played again.
                if shared.stop.load(Ordering::Relaxed) || shared.settled.load(Ordering::Acquire) {
                    return;
                }
                // The game is played again under another index: the target
                // counts games counted, not games tried.
                shared.started.fetch_sub(1, Ordering::Relaxed);
                failures_in_a_row += 1;
                tracing::warn!(error = %e, "a learning game failed; playing another");
                std::thread::sleep(Duration::from_millis(
                    200 * u64::from(failures_in_a_row.min(25)),
                ));
            }
        }
    }
}

/// Game `index`: the opening goes round, the learner's colour alternates, the
/// opponent is drawn by weight.
fn play_one(shared: &Shared, index: u64) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    let slot = usize::try_from(index / 2).unwrap_or(0) % shared.openings.len().max(1);
    let opening = shared
        .openings
        .get(slot)
        .ok_or_else(|| "no opening to play from".to_owned())?;
    let (start, moves) = (&opening.start, &opening.moves);
    let learner = if index.is_multiple_of(2) {
        Color::Black
    } else {
        Color::White
    };
    let seed = shared
        .seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index)
        ^ SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
    let draw = rand::rngs::StdRng::seed_from_u64(seed ^ 0x0990_5E1E_C7ED).random::<f64>();
    let spec = &shared.pool.members()[shared.pool.pick(draw)];
    let policy = shared.policy();
    let mut book_engine = DispatchPlayer::new(shared);
    let mut opponent_engine = DispatchPlayer::new(shared);
    let game = {
        let learning = Side {
            player: &mut book_engine,
            book: Some(policy.as_ref()),
        };
        let opponent = Side {
            player: &mut opponent_engine,
            book: None,
        };
        let book_budget = Budget {
            limits: shared.book_limits,
            node_jitter: shared.book_node_jitter,
        };
        let (black, white, budgets) = match learner {
            Color::Black => (learning, opponent, [book_budget, spec.budget_per_move()]),
            Color::White => (opponent, learning, [spec.budget_per_move(), book_budget]),
        };
        let options = PlayOptions {
            rules: shared.rules,
            limits: shared.book_limits,
            seed,
            node_jitter: shared.book_node_jitter,
        };
        stera_games::play_game_with_budgets(start, moves, black, white, &options, budgets)
            .map_err(|e| e.to_string())?
    };
    let Some(engine) = opponent_engine.single_engine()? else {
        // The opponent never moved (the book side won inside its book): nobody
        // was played against, and there is nothing to learn about an opponent.
        let counted = count(shared, None, &[], None)?;
        report(shared, counted);
        return Ok(());
    };
    let counts = policy
        .results()
        .learning_counts(&game, learner)
        .map_err(|e| e.to_string())?;
    let identity = spec.identity(&engine);
    let exit = exit_of(shared, &policy, &game);
    let counted = count(shared, Some(&identity), &counts, exit)?;
    // Into the policy in use now (a refresh may have replaced this game's).
    shared.policy().results().add(&counts);
    report(shared, counted);
    Ok(())
}

impl Shared {
    /// The learner as of the latest snapshot.
    fn policy(&self) -> Arc<LearningPolicy> {
        Arc::clone(
            &self
                .policy
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// Positions the book must have gained since the learner's snapshot before it
/// is taken again: a share of the book, so that a 15M-node book is not cloned
/// and analysed again for every few hundred positions.
fn refresh_due(snapshot_len: u64, book_len: u64) -> bool {
    let grown = book_len.saturating_sub(snapshot_len);
    grown >= REFRESH_MIN_GROWTH.max(snapshot_len / REFRESH_SHARE)
}

/// New positions that make a snapshot worth taking again, at least.
const REFRESH_MIN_GROWTH: u64 = 16;
/// ... and at least this share (1/N) of the book.
const REFRESH_SHARE: u64 = 20;

/// Takes the learner's snapshot again when the book has grown enough: the
/// book as it is now and the pool's counters as the store holds them, so the
/// positions thought since (where games left the book) are the learner's to
/// play and learn. Runs on the calling game thread; another thread's game goes
/// on with the policy it has.
fn refresh(shared: &Shared, book_len: u64) {
    if !refresh_due(shared.snapshot_len.load(Ordering::Relaxed), book_len)
        || shared.refreshing.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let rebuilt = (|| -> Result<LearningPolicy, String> {
        let (reply, rx) = oneshot::channel();
        shared
            .handle
            .send(Event::LearnSnapshot {
                budgets: shared.budgets.clone(),
                reply,
            })
            .map_err(|e| e.to_string())?;
        let (book, counts) = shared.runtime.block_on(rx).map_err(|e| e.to_string())??;
        let len = book.len() as u64;
        let analysed =
            AnalysedBook::new(book).map_err(|e| format!("cannot analyse the book: {e}"))?;
        shared.snapshot_len.store(len, Ordering::Relaxed);
        let results = Arc::new(ResultsBook::new(Arc::new(analysed), counts));
        Ok(LearningPolicy::new(
            results,
            shared.window,
            shared.prior_games,
        ))
    })();
    match rebuilt {
        Ok(policy) => {
            let positions = shared.snapshot_len.load(Ordering::Relaxed);
            *shared
                .policy
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(policy);
            tracing::info!(positions, "the learner sees the grown book");
        }
        Err(e) => tracing::warn!(error = %e, "the learner keeps its earlier view of the book"),
    }
    shared.refreshing.store(false, Ordering::Release);
}

/// Where `game` left the book: the first move, at a game ply below
/// `grow_plies`, from a position the book holds into one it does not (as the
/// learner's snapshot of the book sees it; the dispatcher checks again). An
/// opponent's reply the book lacks, or the learner's own try of a move nobody
/// thought: either way, where games go and the book has nothing.
fn exit_of(
    shared: &Shared,
    policy: &LearningPolicy,
    game: &stera_games::Game,
) -> Option<(Position, stera_rules::Move)> {
    use stera_games::BookSource;
    if shared.grow_plies == 0 {
        return None;
    }
    let analysed = policy.results().analysed();
    let held = |p: &Position| analysed.candidates(p).is_some();
    let mut position = Position::from_sfen(&game.start_sfen).ok()?;
    for m in &game.moves {
        if position.ply() >= shared.grow_plies {
            return None;
        }
        let mut after = position.clone();
        after.do_move(m.mv);
        if held(&position) && !held(&after) {
            return Some((position, m.mv));
        }
        position = after;
    }
    None
}

/// Counts a game in the dispatcher's ledger and waits until it is durable;
/// the games counted in this run.
fn count(
    shared: &Shared,
    identity: Option<&str>,
    counts: &[(Key, GameCounts)],
    exit: Option<(Position, stera_rules::Move)>,
) -> Result<u64, String> {
    let (reply, rx) = oneshot::channel();
    shared
        .handle
        .send(Event::LearnGame {
            identity: identity.unwrap_or("").to_owned(),
            counts: if identity.is_some() {
                counts.to_vec()
            } else {
                Vec::new()
            },
            exit: exit.map(Box::new),
            reply,
        })
        .map_err(|e| e.to_string())?;
    let (counted, positions) = shared.runtime.block_on(rx).map_err(|e| e.to_string())??;
    refresh(shared, positions);
    Ok(counted)
}

/// After the `counted`-th game is counted (and added to the learner): the
/// stopping rule's check after each round of the openings, and the progress
/// line every 100 games with how many key positions are settled.
fn report(shared: &Shared, counted: u64) {
    let check_due = counted.is_multiple_of(shared.key_positions.check_every());
    let line_due = counted.is_multiple_of(100) || counted == shared.target;
    if !check_due && !line_due {
        return;
    }
    let latest = *shared
        .last_settled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let settled = match latest {
        Some(count) if !check_due => count,
        _ => {
            let count = shared
                .key_positions
                .settled(&shared.policy(), shared.settled_at);
            *shared
                .last_settled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(count);
            count
        }
    };
    if check_due
        && shared.stop_when_settled
        && settled.all()
        && !shared.settled.swap(true, Ordering::AcqRel)
    {
        tracing::info!(
            counted,
            target = shared.target,
            key_positions = settled.total,
            probability = shared.settled_at,
            "every key position is settled (--learn-stop-when-settled): no new learning games start; the games in flight finish and are counted"
        );
    }
    if line_due {
        let secs = shared.began.elapsed().as_secs_f64().max(1e-3);
        let rate = counted as f64 / secs;
        let left = shared.target.saturating_sub(counted) as f64 / rate.max(1e-9);
        tracing::info!(
            counted,
            target = shared.target,
            key_positions_settled = settled.settled,
            key_positions = settled.total,
            games_per_sec = format!("{rate:.2}"),
            left_secs = left.round() as u64,
            "learning games counted"
        );
    }
}

/// A [`Player`] whose moves the workers search (the dispatcher's search jobs).
struct DispatchPlayer<'a> {
    shared: &'a Shared,
    /// The engines that answered this game's searches.
    engines: Vec<String>,
}

impl<'a> DispatchPlayer<'a> {
    fn new(shared: &'a Shared) -> Self {
        Self {
            shared,
            engines: Vec::new(),
        }
    }

    /// The one engine that played this side's moves; `None` when it never
    /// moved; an error when two engines did (the game has no one opponent).
    fn single_engine(&self) -> Result<Option<String>, String> {
        match self.engines.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            more => Err(format!(
                "the opponent's moves came from {} engines ({}): the game is not counted",
                more.len(),
                more.join(", ")
            )),
        }
    }

    fn failure(reason: String) -> EvalError {
        EvalError::Engine {
            engine: "the workers".into(),
            reason,
        }
    }
}

impl Player for DispatchPlayer<'_> {
    fn new_game(&mut self) -> Result<(), EvalError> {
        Ok(())
    }

    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(Self::failure("the coordinator is stopping".into()));
        }
        let (start, moves) = stera_engine::player::history(position);
        let request = SearchRequest {
            start_sfen: start.to_sfen(),
            moves: moves.iter().map(ToString::to_string).collect(),
            limits: Some(stera_service::convert::limits_to_proto(limits)),
        };
        let reply = self
            .shared
            .runtime
            .block_on(self.shared.handle.search(request))
            .map_err(|s| Self::failure(format!("search: {}", s.message())))?;
        if !self.engines.contains(&reply.engine) {
            self.engines.push(reply.engine.clone());
        }
        match reply.usi.as_str() {
            "resign" => Ok(PlayerMove::Resign),
            "win" => Ok(PlayerMove::Win),
            usi => {
                let mv = position.parse_move(usi).map_err(|e| {
                    Self::failure(format!("the workers answered `{usi}`, not legal here: {e}"))
                })?;
                Ok(PlayerMove::Move {
                    mv,
                    score: reply.has_score.then_some(reply.score),
                })
            }
        }
    }

    fn identity(&self) -> String {
        self.engines
            .first()
            .cloned()
            .unwrap_or_else(|| "the workers".into())
    }
}

#[cfg(test)]
mod tests {
    use super::refresh_due;

    #[test]
    fn the_snapshot_is_taken_again_after_a_share_of_the_book_is_added() {
        assert!(!refresh_due(300, 315));
        assert!(refresh_due(300, 316));
        // A big book waits for 5 % more positions, not 16.
        assert!(!refresh_due(1_000_000, 1_040_000));
        assert!(refresh_due(1_000_000, 1_050_000));
        // A book that did not grow (or was read smaller) is not taken again.
        assert!(!refresh_due(500, 400));
    }
}
