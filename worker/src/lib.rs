//! The worker: connects to a coordinator, does the jobs it leases (think: evaluate
//! every legal move of a position with an [`stera_engine::Evaluator`]; search: one
//! move of a game the coordinator plays, with a [`stera_engine::Player`]), and
//! streams the results back.
//!
//! Tasks talk over channels (as in lichess fishnet): the session task owns the gRPC
//! stream; evaluations run on blocking threads, one per slot, each with its own
//! engine; a status task prints a one-line status on a terminal or a summary every
//! couple of minutes otherwise; the signal task turns the first Ctrl-C into "finish
//! and leave" and the second into "give back and leave now".

mod jobs;
mod pool;
pub mod search;
mod session;
mod status;
pub mod worker_metrics;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use stera_service::engine_flags::{EngineFlags, LimitArgs};
use stera_service::logging::LogFormat;
use stera_service::signals::{StopSignals, two_stage};
use stera_service::token::read_token;
use stera_service::{logging, telemetry};
use tokio::sync::watch;

pub use pool::EvaluatorPool;
pub use session::SessionEnd;
pub use status::Stats;

/// Worker command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "worker",
    version,
    about = "Evaluates book positions for a stera coordinator"
)]
pub struct WorkerArgs {
    #[arg(
        long,
        env = stera_proto::COORDINATOR_ENV,
        value_name = "URL",
        default_value = stera_proto::DEFAULT_COORDINATOR_URL,
        value_parser = stera_proto::coordinator_url,
        help = stera_proto::COORDINATOR_URL_HELP
    )]
    pub coordinator: String,
    /// File holding the bearer token the coordinator expects (else STERA_TOKEN;
    /// neither: no token is sent).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = stera_proto::TLS_CA_HELP)]
    pub tls_ca: Option<PathBuf>,
    /// Engines run at once, one evaluation each. Default: the number of CPUs. The
    /// worker takes --slots plus --prefetch jobs at once: the coordinator's status
    /// shows that sum as the worker's job slots. 1 to 1,024: each slot holds an
    /// engine and its hash table.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub slots: Option<u32>,
    /// Jobs held beyond the engines, so an engine starts its next position while
    /// the previous result travels to the coordinator (counted in the job slots
    /// the coordinator shows for this worker).
    #[arg(long, default_value_t = 1)]
    pub prefetch: u32,
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Budget used when a job carries no limits of its own (the coordinator's
    /// --nodes, --depth and --time-ms all 0).
    #[command(flatten)]
    pub limits: LimitArgs,
    /// A name for this worker in the coordinator's status (default: host name and
    /// process id).
    #[arg(long)]
    pub worker_id: Option<String>,
    /// Speak USI on stdin/stdout with the built-in engine instead of connecting
    /// (for shogi GUIs and tools).
    #[arg(long)]
    pub usi: bool,
    /// Progress for a person: on a terminal (text logs), a status line redrawn
    /// every second; otherwise a summary log line every this many seconds. 0:
    /// neither (the coordinator's local workers, whose terminal shows the
    /// coordinator's line). The same flag and default as the coordinator's.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 60,
        alias = "summary-secs"
    )]
    pub status_every_secs: u64,
    /// After the first Ctrl-C or SIGTERM, the jobs in hand and their
    /// acknowledgements may take this many seconds; what is left then is given back
    /// and the worker exits. A second Ctrl-C or SIGTERM gives back at once.
    #[arg(long, default_value_t = 300)]
    pub stop_timeout_secs: u64,
    /// Longest pause between reconnection attempts, in seconds. The worker keeps
    /// trying while the coordinator is down or restarting (after its drain too);
    /// it leaves only on its own signal, or when refused.
    #[arg(long, default_value_t = 60)]
    pub max_backoff_secs: u64,
    /// Leave (exit 0) when the coordinator drains instead of waiting for the next
    /// one. Set by the coordinator for its `--local-workers`, which end with it.
    #[arg(long)]
    pub exit_on_drain: bool,
    /// Leave (giving back the jobs in hand) once the process that started this
    /// worker has ended, which a worker sees as its parent process id changing.
    /// Set by the coordinator for its `--local-workers`, so that a coordinator
    /// killed without a drain (SIGKILL, the OOM killer) leaves no worker behind
    /// retrying forever. Default: off, a worker outlives whoever started it.
    #[arg(long)]
    pub exit_with_parent: bool,
    /// Log format: `text` for people, `json` (one object per line) for log
    /// collectors. Levels come from RUST_LOG (default `info`).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Serve Prometheus metrics at GET /metrics on this address (e.g.
    /// 0.0.0.0:9101). Off when not given.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
}

/// What the signal task asks of the rest: [`Shutdown::Finish`] the jobs in hand,
/// send their results, then leave; or [`Shutdown::Abort`]: give them back and
/// leave now.
pub use stera_service::signals::Shutdown;

fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let host = if host.is_empty() {
        "worker".to_owned()
    } else {
        host
    };
    format!("{host}-{}", std::process::id())
}

/// Runs the worker until it is told to stop (its own signal) or it is refused. A
/// coordinator that drains, stops or cannot be reached is waited for: the worker
/// reconnects with capped, jittered backoff and works for the next coordinator.
/// Returns an error (non-zero exit) when refused or when engines fail to start.
///
/// # Errors
/// A refused token or protocol version, an engine that does not start, bad flags.
pub async fn run(args: WorkerArgs) -> Result<()> {
    if args.usi {
        let nnue = args
            .engine
            .choice()
            .nnue()
            .context("cannot load the evaluation file")?;
        return tokio::task::spawn_blocking(|| {
            let stdin = std::io::stdin();
            stera_engine::builtin::run_usi_with(stdin.lock(), std::io::stdout(), nnue)
        })
        .await
        .context("USI loop panicked")?
        .context("USI loop failed");
    }
    let token = read_token(args.token_file.as_deref())?;
    let tls = match &args.tls_ca {
        Some(path) => {
            let pem = stera_proto::pem::read_pem("CA file", path)?;
            Some(
                tonic::transport::ClientTlsConfig::new()
                    .ca_certificate(tonic::transport::Certificate::from_pem(pem)),
            )
        }
        None if args.coordinator.starts_with("https://") => {
            Some(tonic::transport::ClientTlsConfig::new().with_native_roots())
        }
        None => None,
    };
    let slots = args.slots.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
    });
    if slots == 0 {
        bail!("--slots must be at least 1");
    }
    let worker_id = args.worker_id.clone().unwrap_or_else(default_worker_id);
    let pool = Arc::new(
        EvaluatorPool::start(&args.engine.choice(), slots)
            .await
            .context("cannot start the evaluators")?,
    );
    tracing::info!(engine = %pool.identity(), slots, coordinator = %args.coordinator, "worker starting");
    let stats = Arc::new(Stats::default());
    stats
        .slots
        .store(u64::from(slots), std::sync::atomic::Ordering::Relaxed);
    if let Some(addr) = args.metrics {
        serve_metrics(addr, stats.clone()).await?;
    }
    let (shutdown_tx, shutdown_rx) = watch::channel(Shutdown::Running);
    if args.exit_with_parent {
        tokio::spawn(leave_with_parent(shutdown_tx.clone()));
    }
    tokio::spawn(two_stage(StopSignals::register(), shutdown_tx, log_stage));
    let status = tokio::spawn(status::report(
        stats.clone(),
        status::Settings {
            every: Duration::from_secs(args.status_every_secs),
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr())
                && args.log_format == logging::LogFormat::Text,
        },
        shutdown_rx.clone(),
    ));
    let result = session::run_forever(session::SessionConfig {
        url: args.coordinator.clone(),
        token,
        tls,
        worker_id,
        slots: slots.saturating_add(args.prefetch),
        max_backoff: Duration::from_secs(args.max_backoff_secs.max(1)),
        stop_timeout: Duration::from_secs(args.stop_timeout_secs),
        exit_on_drain: args.exit_on_drain,
        think_budget: args.engine.choice().budget_of(args.limits.limits()),
        jobs: jobs::JobContext {
            default_limits: args.limits.limits(),
            told_override: Arc::default(),
            pool,
            players: Arc::new(search::PlayerPool::new(args.engine.choice())),
            stats: stats.clone(),
        },
        stats: stats.clone(),
        shutdown: shutdown_rx,
    })
    .await;
    status.abort();
    status::final_line(&stats);
    result
}

/// How often a worker with `--exit-with-parent` looks for its parent.
const PARENT_CHECK_EVERY: Duration = Duration::from_millis(500);

/// Aborts through `shutdown` once this process's parent has changed: the
/// process that started it ended and it was handed to another (init or a
/// subreaper). Polling the parent id needs nothing beyond std and works on
/// every Unix, where a parent-death signal is Linux's alone.
async fn leave_with_parent(shutdown: watch::Sender<Shutdown>) {
    let parent = std::os::unix::process::parent_id();
    loop {
        tokio::time::sleep(PARENT_CHECK_EVERY).await;
        if std::os::unix::process::parent_id() != parent {
            tracing::warn!(
                parent,
                "the process that started this worker has ended (--exit-with-parent): leaving"
            );
            let _ = shutdown.send(Shutdown::Abort);
            return;
        }
    }
}

/// Installs the recorder and serves `/metrics` from `stats`.
async fn serve_metrics(addr: std::net::SocketAddr, stats: Arc<Stats>) -> Result<()> {
    let handle = telemetry::install_recorder("worker", worker_metrics::BUCKETS)?;
    worker_metrics::describe();
    let exposition = telemetry::Exposition::new(handle, move || worker_metrics::refresh(&stats));
    telemetry::serve(addr, exposition.router()).await?;
    Ok(())
}

/// What the worker says when a signal moves it to `stage` (first Ctrl-C or
/// SIGTERM: finish; second: abort).
fn log_stage(stage: Shutdown) {
    // A requested stop is normal operation (INFO); aborting gives work back (WARN).
    if stage == Shutdown::Finish {
        tracing::info!("stopping: finishing the jobs in hand (press Ctrl-C again to abort)");
    } else {
        tracing::warn!("aborting: giving back the jobs in hand");
    }
}

/// Entry point for binaries: parses `args`, runs, and maps the outcome to an exit code.
pub fn main_with_args<I: IntoIterator<Item = String>>(args: I) -> std::process::ExitCode {
    let args: WorkerArgs = stera_service::deprecated::parse_from(args);
    logging::init(args.log_format);
    stera_service::block_on_main(run(args))
}
