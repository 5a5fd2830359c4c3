//! The game threads of self-play: the book against itself, each engine move a
//! search job ([`crate::game_search`]), each finished game counted by the
//! dispatcher ([`crate::play::SelfPlayLedger`]).
//!
//! Game `i` of a run starts from root `i mod roots`, follows an opening drawn
//! from the book's exported values by softmax (the run's `--play-seed` and
//! `i` seed the draws: no clock), and the workers that think for the book
//! play on. As many games run at once as the dispatcher's [`PlayGate`] says
//! the slots want; the openings come from a snapshot of the book, read again
//! when the book has grown enough (the rule learning reads it by too).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_games::learning_run::book_grew_enough;
use stera_games::{AnalysedBook, PlayOptions, Route, SoftmaxPolicy};
use stera_rules::Position;
use tokio::sync::oneshot;

use crate::game_search::GameSearches;
use crate::handle::{DispatcherHandle, Event};
use crate::play::{PlayGate, PlaySettings};
use crate::registry::Registry;

struct Shared {
    searches: GameSearches,
    registry: Arc<Registry>,
    settings: PlaySettings,
    roots: Vec<Position>,
    /// The analysed book openings are drawn from.
    snapshot: RwLock<Arc<AnalysedBook>>,
    /// Positions of the book when the snapshot was taken.
    snapshot_len: AtomicU64,
    /// One refresh at a time.
    refreshing: AtomicBool,
    /// Game numbers handed out (a failed game's number is played again).
    started: AtomicU64,
    /// Game threads running.
    threads: AtomicUsize,
}

impl Shared {
    fn gate(&self) -> &PlayGate {
        &self.settings.gate
    }

    /// Whether every game of the target has started.
    fn all_started(&self) -> bool {
        self.settings
            .games
            .is_some_and(|target| self.started.load(Ordering::Relaxed) >= target)
    }
}

/// The self-play game threads; [`SelfPlayDriver::stop`] ends them.
pub struct SelfPlayDriver {
    shared: Option<Arc<Shared>>,
    supervisor: Option<JoinHandle<()>>,
}

impl SelfPlayDriver {
    /// A driver that plays nothing.
    #[must_use]
    pub fn none() -> Self {
        Self {
            shared: None,
            supervisor: None,
        }
    }

    /// Starts playing self-play games from `roots` (position commands) as
    /// `settings` ask, through `handle`.
    ///
    /// # Errors
    /// A root that is not a position, or a book that cannot be analysed.
    pub async fn start(
        handle: DispatcherHandle,
        registry: Arc<Registry>,
        settings: PlaySettings,
        roots: &[String],
    ) -> Result<Self, String> {
        if !settings.enabled() || roots.is_empty() {
            return Ok(Self::none());
        }
        let roots = roots
            .iter()
            .map(|r| Position::from_position_command(r).map_err(|e| format!("root `{r}`: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let searches =
            GameSearches::new(handle, tokio::runtime::Handle::current(), "self-play games");
        let book = book_snapshot(&searches).await?;
        let len = book.len() as u64;
        let analysed = tokio::task::spawn_blocking(move || AnalysedBook::new(book))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot analyse the book for the openings: {e}"))?;
        tracing::info!(
            share = settings.share,
            target = ?settings.games,
            roots = roots.len(),
            "self-play games: openings by softmax at {} cp from the book, the book's workers play on",
            settings.temperature
        );
        let shared = Arc::new(Shared {
            searches,
            registry,
            settings,
            roots,
            snapshot: RwLock::new(Arc::new(analysed)),
            snapshot_len: AtomicU64::new(len),
            refreshing: AtomicBool::new(false),
            started: AtomicU64::new(0),
            threads: AtomicUsize::new(0),
        });
        let supervisor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("self-play".into())
                .spawn(move || supervise(&shared))
                .map_err(|e| format!("cannot start the self-play thread: {e}"))?
        };
        Ok(Self {
            shared: Some(shared),
            supervisor: Some(supervisor),
        })
    }

    /// Stops the games (a game in progress is given up, not counted) and
    /// waits for their threads.
    pub async fn stop(self) {
        if let Some(shared) = &self.shared {
            shared.searches.stop();
        }
        if let Some(supervisor) = self.supervisor {
            let _ = tokio::task::spawn_blocking(move || supervisor.join()).await;
        }
    }
}

/// The book as the dispatcher holds it now.
async fn book_snapshot(searches: &GameSearches) -> Result<stera_book::Book, String> {
    let (reply, rx) = oneshot::channel();
    searches
        .handle()
        .send(Event::BookSnapshot {
            budgets: Vec::new(),
            reply,
        })
        .map_err(|e| e.to_string())?;
    let (book, _) = rx.await.map_err(|e| e.to_string())??;
    Ok(book)
}

/// Keeps as many game threads running as the gate wants, until stopped;
/// then waits for them.
fn supervise(shared: &Arc<Shared>) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !shared.searches.stopped() {
        while shared.threads.load(Ordering::Acquire) < shared.gate().wanted()
            && !shared.all_started()
            && !shared.searches.stopped()
        {
            shared.threads.fetch_add(1, Ordering::AcqRel);
            let for_thread = Arc::clone(shared);
            let spawned = std::thread::Builder::new()
                .name("self-play-game".into())
                .spawn(move || play_games(&for_thread));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    shared.threads.fetch_sub(1, Ordering::AcqRel);
                    tracing::error!(error = %e, "cannot start a self-play game thread");
                    break;
                }
            }
        }
        threads.retain(|t| !t.is_finished());
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in threads {
        let _ = t.join();
    }
}

/// One thread's games, until the slots want fewer games at once than threads
/// play them, every game of the target has started, or the driver stops.
fn play_games(shared: &Shared) {
    let mut failures_in_a_row = 0u32;
    loop {
        if leave_if_too_many(shared) {
            // No longer counted among the threads.
            return;
        }
        if shared.searches.stopped() {
            break;
        }
        let index = shared.started.fetch_add(1, Ordering::Relaxed);
        if shared.settings.games.is_some_and(|target| index >= target) {
            shared.started.fetch_sub(1, Ordering::Relaxed);
            shared.threads.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        shared.gate().started();
        let played = play_one(shared, index);
        shared.gate().ended();
        match played {
            Ok(()) => failures_in_a_row = 0,
            Err(e) => {
                // Played again under this number: the target counts games
                // counted, not games tried.
                shared.started.fetch_sub(1, Ordering::Relaxed);
                if shared.searches.stopped() {
                    break;
                }
                shared
                    .registry
                    .counters
                    .games_rejected
                    .fetch_add(1, Ordering::Relaxed);
                failures_in_a_row += 1;
                tracing::warn!(error = %e, "a self-play game failed; playing another");
                std::thread::sleep(Duration::from_millis(
                    200 * u64::from(failures_in_a_row.min(25)),
                ));
            }
        }
    }
    shared.threads.fetch_sub(1, Ordering::AcqRel);
}

/// Whether this thread is one too many for the games the slots want; if so,
/// it is no longer counted.
fn leave_if_too_many(shared: &Shared) -> bool {
    let wanted = shared.gate().wanted();
    let mut running = shared.threads.load(Ordering::Acquire);
    while running > wanted {
        match shared.threads.compare_exchange(
            running,
            running - 1,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return true,
            Err(now) => running = now,
        }
    }
    false
}

/// Game `index`: its root, its opening, the book's workers on both sides.
fn play_one(shared: &Shared, index: u64) -> Result<(), String> {
    let settings = &shared.settings;
    let roots = shared.roots.len() as u64;
    let root = &shared.roots[usize::try_from(index % roots).unwrap_or(0)];
    let seed = stera_games::schedule::game_seed(settings.seed, index);
    let snapshot = Arc::clone(
        &shared
            .snapshot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let policy = SoftmaxPolicy::new(snapshot, settings.temperature);
    // Leave the engines at least one move: an opening as long as the ply limit
    // would be a game the engines never touch.
    let max = (settings.rules.ply_limit as usize).saturating_sub(1);
    let mut draws = StdRng::seed_from_u64(seed);
    let opening = stera_games::book::follow(&policy, root, max, || draws.random::<f64>());
    let mut player = shared.searches.player(Route::Thinkers);
    let options = PlayOptions {
        rules: settings.rules,
        limits: settings.limits,
        seed,
        node_jitter: 0.0,
    };
    let game = stera_games::play::play_self_game(root, &opening, &mut player, &options)
        .map_err(|e| stera_service::error_text(&e))?;
    let (reply, rx) = oneshot::channel();
    shared
        .searches
        .handle()
        .send(Event::SelfPlayGame {
            game: Box::new(game),
            reply,
        })
        .map_err(|e| e.to_string())?;
    let (_, positions) = shared.searches.block_on(rx).map_err(|e| e.to_string())??;
    refresh(shared, positions);
    Ok(())
}

/// Takes the openings' snapshot again when the book has grown enough; runs
/// on the calling game thread, the other games go on with the one they have.
fn refresh(shared: &Shared, book_len: u64) {
    if !book_grew_enough(shared.snapshot_len.load(Ordering::Relaxed), book_len)
        || shared.refreshing.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let rebuilt = shared
        .searches
        .block_on(book_snapshot(&shared.searches))
        .and_then(|book| {
            let len = book.len() as u64;
            AnalysedBook::new(book)
                .map(|analysed| (len, analysed))
                .map_err(|e| format!("cannot analyse the book: {e}"))
        });
    match rebuilt {
        Ok((len, analysed)) => {
            *shared
                .snapshot
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(analysed);
            shared.snapshot_len.store(len, Ordering::Relaxed);
            tracing::info!(positions = len, "self-play openings: new book snapshot");
        }
        Err(e) => tracing::warn!(error = %e, "self-play openings keep their earlier snapshot"),
    }
    shared.refreshing.store(false, Ordering::Release);
}
