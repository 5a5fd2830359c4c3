//! The moves of the coordinator's own games (learning, self-play) as search
//! jobs: each engine move of a game waits for a worker of its side's route
//! and its answer, through the dispatcher's handle. A worker lost mid-game
//! costs one search; every move is checked legal when it comes back
//! (`search.rs`) and played under the coordinator's referee.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use stera_games::Route;
use stera_games::search_player::{MoveSearch, SearchAnswer, SearchPlayer, SearchQuery};

use crate::handle::DispatcherHandle;

/// What the game threads of one kind of game share to search their moves.
pub(crate) struct GameSearches {
    handle: DispatcherHandle,
    runtime: tokio::runtime::Handle,
    /// The games' name in messages ("learning games", "self-play games").
    games: &'static str,
    stop: AtomicBool,
    /// Routes whose searches were said to wait for a worker (once each).
    told_waiting: Mutex<Vec<Route>>,
}

/// A search unanswered this long is told about: a route without a worker
/// (an opponent's engine none of whose workers is connected) waits silently.
const WAIT_NOTE_AFTER: Duration = Duration::from_secs(10);

impl GameSearches {
    /// Searches through `handle`, waited for on `runtime` (the callers are
    /// game threads, not tasks).
    pub(crate) fn new(
        handle: DispatcherHandle,
        runtime: tokio::runtime::Handle,
        games: &'static str,
    ) -> Self {
        Self {
            handle,
            runtime,
            games,
            stop: AtomicBool::new(false),
            told_waiting: Mutex::new(Vec::new()),
        }
    }

    /// A player whose moves the workers of `route` search.
    pub(crate) fn player(&self, route: Route) -> SearchPlayer<DispatchSearch<'_>> {
        SearchPlayer::routed(DispatchSearch { searches: self }, route)
    }

    /// No search starts after this; the game waiting fails.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether [`Self::stop`] was called.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The dispatcher's handle (for the games' other requests).
    pub(crate) fn handle(&self) -> &DispatcherHandle {
        &self.handle
    }

    /// Waits for `future` from a game thread.
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Says once per route that its searches wait for a worker.
    fn waiting(&self, route: &Route) {
        let mut told = self
            .told_waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !told.contains(route) {
            told.push(route.clone());
            tracing::warn!(
                route = %route.describe(),
                secs = WAIT_NOTE_AFTER.as_secs(),
                "{} wait: no connected worker of this route answered a search; start one (a worker of that engine), or give the opponent another --engine-id",
                self.games
            );
        }
    }
}

/// The dispatcher's search jobs as a [`MoveSearch`]: each search waits for a
/// worker of its route and its answer.
pub(crate) struct DispatchSearch<'a> {
    searches: &'a GameSearches,
}

impl MoveSearch for DispatchSearch<'_> {
    fn search(&mut self, query: &SearchQuery<'_>) -> Result<SearchAnswer, String> {
        let searches = self.searches;
        if searches.stopped() {
            return Err("the coordinator is stopping".into());
        }
        let request = stera_service::convert::search_request(query);
        let reply = searches
            .block_on(async {
                let search = searches.handle.search(request);
                tokio::pin!(search);
                tokio::select! {
                    answer = &mut search => return answer,
                    () = tokio::time::sleep(WAIT_NOTE_AFTER) => searches.waiting(query.route),
                }
                search.await
            })
            .map_err(|s| {
                // Unavailable: the coordinator drains or is gone. No search
                // can be answered any more; the games end instead of being
                // tried again until the driver is stopped.
                if s.code() == tonic::Code::Unavailable {
                    searches.stop();
                }
                format!("search: {}", s.message())
            })?;
        Ok(stera_service::convert::search_answer(reply))
    }

    fn describe(&self) -> String {
        "the workers".to_owned()
    }
}
