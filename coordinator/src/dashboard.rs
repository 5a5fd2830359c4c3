//! The status page a person opens in a browser (`GET /`) and the JSON it polls
//! (`GET /api/status`), served next to `/metrics` on the `--metrics` address.
//!
//! Totals, workers, history and problems come from the [`Registry`] without
//! touching the dispatcher. Only the principal variations need the selector, which
//! the dispatcher thread owns: they are asked for with [`DispatcherHandle::status`] and
//! cached for a few seconds, so any number of open pages costs selection at most one
//! status request per [`ROOTS_MAX_AGE`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde::Serialize;
use tokio::sync::Mutex;

use crate::handle::{DispatcherHandle, WeakDispatcherHandle};
use crate::registry::{HistorySample, Problem, Registry, unix_ms_now};

/// The page, self-contained (no CDN: clusters often have no internet).
const PAGE: &str = include_str!("dashboard.html");

/// How long the principal variations are reused before the dispatcher is asked again.
pub const ROOTS_MAX_AGE: Duration = Duration::from_secs(3);

/// How long a request waits for the dispatcher (busy with an export, say) before
/// answering with the older lines.
const ROOTS_WAIT: Duration = Duration::from_secs(2);

/// Most history points sent to the page (the ring buffer holds a day).
const HISTORY_POINTS: usize = 720;

/// The principal variation from one root.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RootJson {
    pub root: String,
    pub pv: Vec<String>,
    /// Centipawns from the root mover's view.
    pub value: i32,
}

/// One connected worker.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkerJson {
    pub id: String,
    pub engine: String,
    pub slots: u32,
    pub in_flight: u32,
    pub completed: u64,
    pub per_second: f64,
}

/// What `/api/status` returns.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApiStatus {
    pub version: &'static str,
    pub started_unix_ms: u64,
    pub now_unix_ms: u64,
    pub nodes: u64,
    pub leaf_edges: u64,
    pub store_bytes: u64,
    pub thought: u64,
    pub thought_per_second: f64,
    pub selections: u64,
    pub mean_selection_ms: f64,
    pub in_flight: u64,
    pub workers_connected: u64,
    pub worker_slots: u64,
    pub rejected: u64,
    pub expired: u64,
    pub requeued: u64,
    pub quarantined: u64,
    pub duplicates: u64,
    pub exports_ok: u64,
    pub exports_failed: u64,
    pub last_export_ms: u64,
    /// Backups of this process by outcome; the last successful one: when (Unix
    /// seconds, 0: none yet), its size on disk and how long it took.
    pub backups_ok: u64,
    pub backups_failed: u64,
    pub backups_refused: u64,
    pub last_backup_unix: u64,
    pub last_backup_bytes: u64,
    pub last_backup_ms: u64,
    /// Games counted by this run, by outcome; play leases in flight; games in
    /// the book's store (all runs).
    pub games_black: u64,
    pub games_white: u64,
    pub games_draw: u64,
    pub games_in_flight: u64,
    pub games_stored: u64,
    pub roots: Vec<RootJson>,
    /// Age of `roots` in milliseconds (they are cached).
    pub roots_age_ms: u64,
    pub workers: Vec<WorkerJson>,
    pub history: Vec<HistorySample>,
    pub problems: Vec<Problem>,
}

struct RootsCache {
    at: Option<Instant>,
    roots: Vec<RootJson>,
}

/// Shared state of the dashboard routes.
#[derive(Clone)]
pub struct Dashboard {
    registry: Arc<Registry>,
    // Weak: the dispatcher ends when the last strong sender is gone, and the HTTP
    // server lives as long as the process, so it must not keep the dispatcher alive.
    dispatcher: WeakDispatcherHandle,
    started_unix_ms: u64,
    // A tokio mutex held across the dispatcher round trip: concurrent pollers wait
    // for one request instead of each sending their own.
    roots: Arc<Mutex<RootsCache>>,
}

impl Dashboard {
    /// A dashboard over `registry`, asking the dispatcher on `events` for root lines.
    pub fn new(registry: Arc<Registry>, dispatcher: &DispatcherHandle) -> Self {
        Self {
            registry,
            dispatcher: dispatcher.downgrade(),
            started_unix_ms: unix_ms_now(),
            roots: Arc::new(Mutex::new(RootsCache {
                at: None,
                roots: Vec::new(),
            })),
        }
    }

    /// `GET /` and `GET /api/status`.
    pub fn router(self) -> Router {
        Router::new()
            .route("/", get(page))
            .route("/api/status", get(api_status))
            .with_state(self)
    }

    /// The root lines, from the cache if fresh enough.
    async fn roots(&self) -> (Vec<RootJson>, u64) {
        let mut cache = self.roots.lock().await;
        let fresh = cache.at.is_some_and(|t| t.elapsed() < ROOTS_MAX_AGE);
        if !fresh
            && let Some(dispatcher) = self.dispatcher.upgrade()
            && let Ok(Ok(status)) = tokio::time::timeout(ROOTS_WAIT, dispatcher.status()).await
        {
            cache.roots = status
                .roots
                .into_iter()
                .map(|r| RootJson {
                    root: r.root,
                    pv: r.pv,
                    value: r.value,
                })
                .collect();
            // Before the first selection there are no lines yet; ask again next
            // time rather than showing "none" for the whole cache period.
            cache.at = (!cache.roots.is_empty()).then(Instant::now);
        }
        let age = cache.at.map_or(0, |t| {
            u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
        });
        (cache.roots.clone(), age)
    }

    /// The whole status as the page shows it.
    pub async fn status(&self) -> ApiStatus {
        let (roots, roots_age_ms) = self.roots().await;
        let r = &self.registry;
        let c = &r.counters;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let selections = load(&c.selections);
        ApiStatus {
            version: env!("CARGO_PKG_VERSION"),
            started_unix_ms: self.started_unix_ms,
            now_unix_ms: unix_ms_now(),
            nodes: load(&c.book_nodes),
            leaf_edges: load(&c.leaf_edges),
            store_bytes: load(&c.store_bytes),
            thought: load(&c.thought),
            thought_per_second: r.thought_rate(),
            selections,
            mean_selection_ms: if selections == 0 {
                0.0
            } else {
                load(&c.selection_micros) as f64 / selections as f64 / 1000.0
            },
            in_flight: load(&c.in_flight),
            workers_connected: r.workers.len() as u64,
            worker_slots: r.worker_slots(),
            rejected: load(&c.rejected),
            expired: load(&c.expired),
            requeued: load(&c.requeued),
            quarantined: load(&c.quarantined),
            duplicates: load(&c.duplicates),
            exports_ok: load(&c.exports_ok),
            exports_failed: load(&c.exports_failed),
            last_export_ms: load(&c.last_export_ms),
            backups_ok: load(&c.backups_ok),
            backups_failed: load(&c.backups_failed),
            backups_refused: load(&c.backups_refused),
            last_backup_unix: load(&c.last_backup_success_unix),
            last_backup_bytes: load(&c.last_backup_bytes),
            last_backup_ms: load(&c.last_backup_ms),
            games_black: load(&c.games_black),
            games_white: load(&c.games_white),
            games_draw: load(&c.games_draw),
            games_in_flight: load(&c.play_in_flight),
            games_stored: load(&c.games_stored),
            roots,
            roots_age_ms,
            workers: r
                .worker_status()
                .into_iter()
                .map(|w| WorkerJson {
                    id: w.worker_id,
                    engine: w.engine,
                    slots: w.slots,
                    in_flight: w.in_flight,
                    completed: w.completed,
                    per_second: w.results_per_second,
                })
                .collect(),
            history: thin(&r.history(), HISTORY_POINTS),
            problems: r.problems(),
        }
    }
}

/// At most `max` samples, evenly spread, always keeping the newest.
fn thin(samples: &[HistorySample], max: usize) -> Vec<HistorySample> {
    if samples.len() <= max || max < 2 {
        return samples.to_vec();
    }
    let step = samples.len().div_ceil(max);
    // Counting from the newest end keeps the current state on the chart.
    let mut out: Vec<HistorySample> = samples.iter().rev().step_by(step).copied().collect();
    out.reverse();
    out
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE))
}

async fn api_status(State(d): State<Dashboard>) -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(d.status().await),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatcher::Event;

    fn sample(i: u64) -> HistorySample {
        HistorySample {
            unix_ms: i * 10_000,
            nodes: i,
            thought: i,
            in_flight: 0,
            workers: 1,
        }
    }

    #[test]
    fn thinning_keeps_the_newest_and_the_order() {
        let samples: Vec<_> = (0..8640).map(sample).collect();
        let thinned = thin(&samples, 720);
        assert!(thinned.len() <= 720, "{}", thinned.len());
        assert!(thinned.len() >= 700, "{}", thinned.len());
        assert_eq!(thinned.last(), samples.last());
        assert!(thinned.windows(2).all(|w| w[0].unix_ms < w[1].unix_ms));
        let few: Vec<_> = (0..5).map(sample).collect();
        assert_eq!(thin(&few, 720), few);
    }

    #[tokio::test]
    async fn roots_are_cached_between_requests() {
        let registry = Arc::new(Registry::default());
        let (events, mut rx) = crate::handle::DispatcherHandle::channel();
        // The dashboard holds only a weak handle; this one stands for the service's.
        let dashboard = Dashboard::new(registry, &events);
        // A stand-in dispatcher that counts status requests.
        let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = answered.clone();
        tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                if let Event::Status { reply } = ev {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let _ = reply.send(stera_proto::v1::StatusReply {
                        roots: vec![stera_proto::v1::RootLine {
                            root: "startpos".into(),
                            pv: vec!["7g7f".into(), "3c3d".into()],
                            value: 42,
                        }],
                        ..Default::default()
                    });
                }
            }
        });
        let first = dashboard.status().await;
        let second = dashboard.status().await;
        assert_eq!(answered.load(Ordering::SeqCst), 1);
        assert_eq!(
            first.roots,
            vec![RootJson {
                root: "startpos".into(),
                pv: vec!["7g7f".into(), "3c3d".into()],
                value: 42
            }]
        );
        assert_eq!(first.roots, second.roots);
        drop(events);
    }
}
