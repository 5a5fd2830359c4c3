//! The status page a person opens in a browser (`GET /`) and the JSON it polls
//! (`GET /api/status`), served next to `/metrics` on the `--metrics` address.
//!
//! `/api/status` is the status document (`stera_service::status`), the same as
//! `book-tools remote status --json` prints: both are made of the Status reply
//! that `crate::status` builds. Totals, workers, history and problems come from
//! the [`Registry`] without touching the dispatcher. Only the principal
//! variations need the selector, which
//! the dispatcher thread owns: they are asked for with [`DispatcherHandle::status`] and
//! cached for a few seconds, so any number of open pages costs selection at most one
//! status request per [`ROOTS_MAX_AGE`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use stera_proto::v1::RootLine;
use stera_service::status::StatusDocument;
use tokio::sync::Mutex;

use crate::handle::{DispatcherHandle, WeakDispatcherHandle};
use crate::registry::Registry;

/// The page, self-contained (no CDN: clusters often have no internet).
const PAGE: &str = include_str!("dashboard.html");

/// How long the principal variations are reused before the dispatcher is asked again.
pub const ROOTS_MAX_AGE: Duration = Duration::from_secs(3);

/// How long a request waits for the dispatcher (busy with an export, say) before
/// answering with the older lines.
const ROOTS_WAIT: Duration = Duration::from_secs(2);

struct RootsCache {
    at: Option<Instant>,
    roots: Vec<RootLine>,
}

/// Shared state of the dashboard routes.
#[derive(Clone)]
pub struct Dashboard {
    registry: Arc<Registry>,
    // Weak: the dispatcher ends when the last strong sender is gone, and the HTTP
    // server lives as long as the process, so it must not keep the dispatcher alive.
    dispatcher: WeakDispatcherHandle,
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

    /// The root lines, from the cache if fresh enough, and their age in
    /// milliseconds.
    async fn roots(&self) -> (Vec<RootLine>, u64) {
        let mut cache = self.roots.lock().await;
        let fresh = cache.at.is_some_and(|t| t.elapsed() < ROOTS_MAX_AGE);
        if !fresh
            && let Some(dispatcher) = self.dispatcher.upgrade()
            && let Ok(Ok(status)) = tokio::time::timeout(ROOTS_WAIT, dispatcher.status()).await
        {
            cache.roots = status.roots;
            // Before the first selection there are no lines yet; ask again next
            // time rather than showing "none" for the whole cache period.
            cache.at = (!cache.roots.is_empty()).then(Instant::now);
        }
        let age = cache.at.map_or(0, |t| {
            u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
        });
        (cache.roots.clone(), age)
    }

    /// The status document, as the Status RPC's reply makes it but with the
    /// cached root lines.
    pub async fn status(&self) -> StatusDocument {
        let (roots, roots_age_ms) = self.roots().await;
        StatusDocument::from_reply(crate::status::reply(
            &self.registry,
            env!("CARGO_PKG_VERSION"),
            roots,
            roots_age_ms,
        ))
    }
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
    use std::sync::atomic::Ordering;

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
            vec![stera_service::status::RootLine {
                root: "startpos".into(),
                pv: vec!["7g7f".into(), "3c3d".into()],
                value: 42
            }]
        );
        assert_eq!(first.roots, second.roots);
        drop(events);
    }
}
