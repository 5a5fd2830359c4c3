//! The game threads of learning on the cluster: each plays the games
//! [`LearningRun`] plans, its sides' moves searched by the workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use stera_book::GameCounts;
use stera_engine::Limits;
use stera_games::learning_run::book_grew_enough;
use stera_games::results_book::SettledCount;
use stera_games::{
    AnalysedBook, Budget, GameRules, LearningPolicy, LearningRun, LearningSettings, OpponentSpec,
    ResultsBook, Route,
};
use stera_rules::{Key, Position};
use tokio::sync::oneshot;

use super::LearnArgs;
use crate::game_search::GameSearches;
use crate::handle::{DispatcherHandle, Event};
use crate::registry::Registry;

/// Everything the learning threads share.
struct Shared {
    /// The moves' searches, the dispatcher's handle, and the stop flag.
    searches: GameSearches,
    /// Where the run's target, pace and key positions are published for the
    /// status line, the status document, the dashboard and the metrics.
    registry: Arc<Registry>,
    /// What the run decides: openings, colours, seeds, opponents, settling.
    run: LearningRun,
    /// Who plays each opponent of the pool (by pool index).
    routes: Vec<Route>,
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
    grow_plies: u32,
    target: u64,
    started: AtomicU64,
    /// When the first game started, for the rate and the time left.
    began: std::time::Instant,
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
    /// learner weighing a move's value as `prior_games` games; how far they
    /// have come is published in `registry`.
    ///
    /// # Errors
    /// Bad flags or roots, or no book to learn on.
    pub async fn start(
        handle: DispatcherHandle,
        registry: Arc<Registry>,
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
            .send(Event::BookSnapshot {
                budgets: budgets.clone(),
                reply,
            })
            .map_err(|e| e.to_string())?;
        let (book, counts) = rx.await.map_err(|e| e.to_string())??;
        let snapshot_len = book.len() as u64;
        let openings = stera_games::learning_run::openings_of(
            args.learn_openings.as_deref(),
            roots,
            "the store's roots",
        )
        .map_err(|e| e.to_string())?;
        let routes = pool
            .members()
            .iter()
            .map(OpponentSpec::route)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let run = LearningRun::new(LearningSettings {
            openings,
            pool,
            seed: args.learn_seed,
            book_budget: Budget {
                limits: Limits {
                    nodes: Some(args.learn_nodes),
                    ..Limits::default()
                },
                node_jitter: args.learn_node_jitter,
            },
            rules: GameRules {
                ply_limit,
                adjudication: None,
            },
            stop_when_settled: args.learn_stop_when_settled,
        })
        .map_err(|e| e.to_string())?;
        let analysed = tokio::task::spawn_blocking(move || AnalysedBook::new(book))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot analyse the book: {e}"))?;
        let results = Arc::new(ResultsBook::new(Arc::new(analysed), counts));
        let policy = LearningPolicy::new(results, args.learn_window, prior_games);
        // Shown from the start: the target, and how many key positions there
        // are (and are settled already, by earlier runs' games).
        registry.learning.start(args.learn_games, run.settled_at());
        let at_start = run.settled(&policy);
        registry
            .learning
            .set_key_positions(at_start.settled, at_start.total);
        let threads = args
            .learn_concurrency
            .min(usize::try_from(args.learn_games).unwrap_or(usize::MAX));
        tracing::info!(
            games = args.learn_games,
            at_once = args.learn_concurrency,
            opponents = %run.pool().members().iter().zip(&routes).map(|(m, r)| format!("{} on {} (weight {})", m.budget(), r.describe(), m.weight)).collect::<Vec<_>>().join(", "),
            "learning games: {}",
            stera_games::BookPolicy::describe(&policy)
        );
        let shared = Arc::new(Shared {
            searches: GameSearches::new(
                handle,
                tokio::runtime::Handle::current(),
                "learning games",
            ),
            registry,
            run,
            routes,
            policy: std::sync::RwLock::new(Arc::new(policy)),
            budgets,
            snapshot_len: AtomicU64::new(snapshot_len),
            refreshing: AtomicBool::new(false),
            grow_plies: args.learn_grow_plies,
            target: args.learn_games,
            started: AtomicU64::new(0),
            began: std::time::Instant::now(),
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
            shared.searches.stop();
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
        let _ = shared.searches.handle().send(Event::LearnEnded);
    }
}

fn play_until_done(shared: &Shared) {
    let mut failures_in_a_row = 0u32;
    while !shared.searches.stopped() && !shared.settled.load(Ordering::Acquire) {
        let index = shared.started.fetch_add(1, Ordering::Relaxed);
        if index >= shared.target {
            return;
        }
        match play_one(shared, index) {
            Ok(()) => failures_in_a_row = 0,
            Err(e) => {
                // Settled meanwhile: a failed game is not played again.
                if shared.searches.stopped() || shared.settled.load(Ordering::Acquire) {
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

/// Game `index` as the run plans it: the book side's moves on the workers
/// that think for the book, the opponent's on the workers of its route.
fn play_one(shared: &Shared, index: u64) -> Result<(), String> {
    let plan = shared.run.plan(index);
    let spec = &shared.run.pool().members()[plan.opponent];
    let policy = shared.policy();
    let mut book_engine = shared.searches.player(Route::Thinkers);
    let mut opponent_engine = shared.searches.player(shared.routes[plan.opponent].clone());
    let game = shared
        .run
        .play(
            &plan,
            policy.as_ref(),
            &mut book_engine,
            &mut opponent_engine,
        )
        .map_err(|e| e.to_string())?;
    let engine = opponent_engine
        .single_engine()
        .map_err(|e| format!("the opponent: {e}; the game is not counted"))?;
    let Some(engine) = engine else {
        // The opponent never moved (the book side won inside its book): nobody
        // was played against, and there is nothing to learn about an opponent.
        let counted = count(shared, None, &[], None)?;
        report(shared, counted);
        return Ok(());
    };
    let counts = policy
        .results()
        .learning_counts(&game, plan.learner)
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

/// Takes the learner's snapshot again when the book has grown enough: the
/// book as it is now and the pool's counters as the store holds them, so the
/// positions thought since (where games left the book) are the learner's to
/// play and learn. Runs on the calling game thread; another thread's game goes
/// on with the policy it has.
fn refresh(shared: &Shared, book_len: u64) {
    if !book_grew_enough(shared.snapshot_len.load(Ordering::Relaxed), book_len)
        || shared.refreshing.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let rebuilt = (|| -> Result<LearningPolicy, String> {
        let (reply, rx) = oneshot::channel();
        shared
            .searches
            .handle()
            .send(Event::BookSnapshot {
                budgets: shared.budgets.clone(),
                reply,
            })
            .map_err(|e| e.to_string())?;
        let (book, counts) = shared.searches.block_on(rx).map_err(|e| e.to_string())??;
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
        .searches
        .handle()
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
    let (counted, positions) = shared.searches.block_on(rx).map_err(|e| e.to_string())??;
    refresh(shared, positions);
    Ok(counted)
}

/// After the `counted`-th game is counted (and added to the learner): the
/// stopping rule's check after each round of the openings, the progress line
/// every 100 games with how many key positions are settled, and the pace for
/// the status after every game.
fn report(shared: &Shared, counted: u64) {
    let secs = shared.began.elapsed().as_secs_f64().max(1e-3);
    let rate = counted as f64 / secs;
    // Rounded up: 0 only once the target is reached.
    let left = (shared.target.saturating_sub(counted) as f64 / rate.max(1e-9)).ceil() as u64;
    let check_due = shared.run.check_due(counted);
    let line_due = counted.is_multiple_of(100) || counted == shared.target;
    if check_due || line_due {
        check_and_log(shared, counted, check_due, line_due, (rate, left));
    }
    // The pace last: a status that shows this game's pace shows the key
    // positions counted after it too.
    if !shared.settled.load(Ordering::Acquire) {
        shared.registry.learning.set_pace(counted, rate, left);
    }
}

/// The key positions settled after `counted` games (counted again when the
/// stopping rule's check is due), the stop when all are, and the progress line.
fn check_and_log(
    shared: &Shared,
    counted: u64,
    check_due: bool,
    line_due: bool,
    (rate, left): (f64, u64),
) {
    let latest = *shared
        .last_settled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let settled = match latest {
        Some(count) if !check_due => count,
        _ => {
            let count = shared.run.settled(&shared.policy());
            *shared
                .last_settled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(count);
            shared
                .registry
                .learning
                .set_key_positions(count.settled, count.total);
            count
        }
    };
    if check_due && shared.run.stops(&settled) && !shared.settled.swap(true, Ordering::AcqRel) {
        shared.registry.learning.set_all_settled();
        tracing::info!(
            counted,
            target = shared.target,
            key_positions = settled.total,
            probability = shared.run.settled_at(),
            "every key position is settled (--learn-stop-when-settled): no new learning games start; the games in flight finish and are counted"
        );
    }
    if line_due {
        tracing::info!(
            counted,
            target = shared.target,
            key_positions_settled = settled.settled,
            key_positions = settled.total,
            games_per_sec = format!("{rate:.2}"),
            left_secs = left,
            "learning games counted"
        );
    }
}
