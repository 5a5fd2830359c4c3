//! Prometheus exposition shared by the coordinator and the worker: installs the
//! global [`metrics`] recorder, publishes `stera_build_info`, and serves `GET /metrics`
//! with axum on the `--metrics` address.
//!
//! Metric values are recorded through the `metrics` macros where things happen;
//! values that already live in atomics (counters of the worker's `Stats`,
//! the coordinator's registry) are copied in by a refresh callback just before each
//! scrape, so a scrape always sees the current state and nothing is counted twice.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use thiserror::Error;

/// The build-information gauge every stera process exposes (value 1).
pub const BUILD_INFO: &str = "stera_build_info";

/// The content type of the Prometheus text exposition format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Why metrics could not be set up.
#[derive(Debug, Error)]
pub enum TelemetryError {
    #[error("cannot install the metrics recorder: {0}")]
    Recorder(String),
    #[error("cannot listen for metrics on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Histogram bucket boundaries for one metric (a metric without an entry is
/// exported as a summary, so every histogram must be listed).
pub struct Buckets {
    pub metric: &'static str,
    pub bounds: &'static [f64],
}

/// Installs the process-wide Prometheus recorder and sets
/// `stera_build_info{version, component} 1`.
///
/// # Errors
/// A recorder is already installed (only one per process), or bad buckets.
pub fn install_recorder(
    component: &'static str,
    buckets: &[Buckets],
) -> Result<PrometheusHandle, TelemetryError> {
    let mut builder = PrometheusBuilder::new();
    for b in buckets {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(b.metric.to_owned()), b.bounds)
            .map_err(|e| TelemetryError::Recorder(e.to_string()))?;
    }
    let handle = builder
        .install_recorder()
        .map_err(|e| TelemetryError::Recorder(e.to_string()))?;
    metrics::describe_gauge!(
        BUILD_INFO,
        "Always 1; the labels say which version of which stera component runs."
    );
    // Every package of the workspace shares one version, so this crate's is the
    // component's.
    metrics::gauge!(
        BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "component" => component
    )
    .set(1.0);
    Ok(handle)
}

/// What `/metrics` needs: the recorder handle and a callback that copies current
/// values (gauges, mirrored counters) into the recorder before rendering.
#[derive(Clone)]
pub struct Exposition {
    handle: PrometheusHandle,
    refresh: Arc<dyn Fn() + Send + Sync>,
}

impl Exposition {
    /// An exposition over `handle` that calls `refresh` before every render.
    pub fn new(handle: PrometheusHandle, refresh: impl Fn() + Send + Sync + 'static) -> Self {
        Self {
            handle,
            refresh: Arc::new(refresh),
        }
    }

    /// The current Prometheus text.
    #[must_use]
    pub fn render(&self) -> String {
        (self.refresh)();
        // Upkeep drains histogram buffers; without an exporter task of its own the
        // recorder relies on us to do it, and a scrape is the natural moment.
        self.handle.run_upkeep();
        self.handle.render()
    }

    /// A router with `GET /metrics`; other routes can be merged into it.
    pub fn router(&self) -> Router {
        let this = self.clone();
        Router::new().route(
            "/metrics",
            get(move || {
                let this = this.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)],
                        this.render(),
                    )
                        .into_response()
                }
            }),
        )
    }
}

/// Binds `addr` now (so a bad address fails at start-up, not later) and serves
/// `router` on it in a background task for the life of the process.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(addr: SocketAddr, router: Router) -> Result<SocketAddr, TelemetryError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| TelemetryError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| TelemetryError::Bind { addr, source })?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "the metrics server stopped");
        }
    });
    // Not "listening ... addr=": scripts look for the gRPC line by those words.
    tracing::info!(http = %bound, "serving metrics over HTTP");
    Ok(bound)
}
