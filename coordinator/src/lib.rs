//! The coordinator: owns the book and its selector, hands leaves to workers as
//! leases over gRPC, and stores their results.
//!
//! * [`dispatcher`]: the single thread that joins the lease table, the job kinds and
//!   the registry; every change arrives there as an event.
//! * [`leases`]: the lease table (credits, leases, heartbeats, expiry, idempotent
//!   completion, failure counts), knowing nothing of what a job is.
//! * [`think`]: the think job kind (selection, job message, validation, commit).
//! * [`play`]: the play job kind (openings from the book, game check, results per
//!   book position).
//! * [`service`]: the gRPC service; one task per Work stream forwards messages.
//! * [`validate`]: a result must give every legal move a value in range.
//! * [`registry`]: counters and the worker list, read by status and metrics.
//! * [`telemetry`]: Prometheus metric names and their copy from the registry.
//! * [`dashboard`]: the status page and its JSON, on the `--metrics` address.
//! * [`status_line`]: a live status line on a terminal, summary log lines otherwise.
//! * [`run`]: wiring, local workers, shutdown (SIGTERM drains).

pub mod blame;
pub mod dashboard;
pub mod dispatcher;
pub mod handle;
pub(crate) mod kinds;
pub mod leases;
pub mod maintenance;
pub(crate) mod observe;
pub mod play;
pub(crate) mod progress;
pub mod registry;
pub mod search;
pub mod service;
pub mod status_line;
pub mod store_space;
pub mod telemetry;
pub mod think;
pub mod validate;
pub(crate) mod workers;

/// Exports keep their path: `stera_coordinator::export` is what the binaries and
/// tools call.
pub use maintenance::export;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use stera_book::{LiveBook, NodeStore, SelectMode, Selector, SledStore, SoftmaxSelect};
use stera_proto::v1::Limits;
use stera_proto::v1::coordinator_server::CoordinatorServer;
use stera_service::export::{CoordinatorExport, ExportFlags};
use tokio::sync::watch;
use tokio_stream::wrappers::TcpListenerStream;

use crate::dispatcher::{DispatchConfig, Dispatcher, Event, Progress};
use crate::handle::DispatcherHandle;
use crate::maintenance::{ExportFn, backup, compact, schedule};
use crate::registry::Registry;
use crate::service::{CoordinatorService, TokenCheck};

/// Coordinator command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "coordinator",
    version,
    about = "Super Tera-Shock book coordinator"
)]
pub struct CoordinatorArgs {
    /// Directory of the book store (created if missing).
    #[arg(long)]
    pub db: PathBuf,
    /// Address the gRPC service listens on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Start this many worker processes on loopback with the built-in engine.
    #[arg(long, default_value_t = 0)]
    pub local_workers: u32,
    /// Evaluation slots of each local worker.
    #[arg(long, default_value_t = 1)]
    pub local_slots: u32,
    /// Stop after this many positions have been thought in this run.
    #[arg(long)]
    pub think_limit: Option<u64>,
    /// Write a YaneuraOu book to this file when generation stops (and every
    /// --export-every-mins while it runs).
    #[arg(long)]
    pub export: Option<PathBuf>,
    /// Also export to --export every this many minutes while generation runs (0: only
    /// at the end). Generation goes on during an export: it writes a snapshot of
    /// the book on its own threads, at a lower CPU priority.
    #[arg(long, default_value_t = 0, requires = "export")]
    pub export_every_mins: u64,
    // `--export-backup`, `--export-temperature`, `--export-weights` of the
    // --export book: declared once for the three export front ends.
    #[command(flatten)]
    pub export_choice: ExportFlags<CoordinatorExport>,
    /// Back the store up into --backup-dir every this many minutes while the
    /// coordinator runs (0: never). Each backup is a complete store directory
    /// `backup-<unix seconds>.db`, written under a temporary name and renamed when complete,
    /// on the maintenance thread while selection and results go on: it holds the
    /// store as it was when the backup started.
    #[arg(long, default_value_t = 0, requires = "backup_dir")]
    pub backup_every_mins: u64,
    /// Directory of the periodic backups (not inside the store).
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Periodic backups kept: older ones are deleted after a new one is complete.
    #[arg(long, default_value_t = 3)]
    pub backup_keep: usize,
    /// Compact the store every this many new positions (0, the default: never): on
    /// the maintenance thread, when no export or backup runs, the small chunks
    /// written since the last pass (one per committed batch of results) are merged
    /// into chunks of at least --compact-chunk positions; the first pass runs at
    /// start. Off by default because it costs disk with sled: merged chunks sit in
    /// the leaf that every append rewrites (BENCHMARKS.md, "Bounded disk": 215
    /// bytes per position without, 270-710 with). For stores written in tiny
    /// batches whose entry count matters more than their disk.
    #[arg(long, default_value_t = 0, value_name = "POSITIONS")]
    pub compact_every: u32,
    /// Free space (MiB) the store's file system must keep: below it the coordinator
    /// hands out no think or play jobs (results already out are still stored in
    /// it), logs why, shows `stera_coordinator_store_writable 0`, and resumes
    /// when space is freed. sled cannot write on a full disk.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub store_reserve_mb: u64,
    /// Positions per merged chunk of a compaction pass.
    #[arg(long, default_value_t = 4096, value_name = "POSITIONS", value_parser = clap::value_parser!(u32).range(2..))]
    pub compact_chunk: u32,
    /// Directory in which the Export RPC (`book-tools remote export --out PATH`) may
    /// write: relative paths are taken from here, and paths that resolve outside it
    /// are refused. Without it, remote exports are refused (a remote caller must
    /// not choose where the coordinator writes). Never inside the store.
    #[arg(long, value_name = "DIR")]
    pub export_dir: Option<PathBuf>,
    /// File holding the bearer token workers must present (else STERA_TOKEN; none
    /// means no authentication, for loopback use).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Node budget sent with every job (0: the worker's default).
    #[arg(long, default_value_t = 0)]
    pub nodes: u64,
    /// Depth limit sent with every job (0: none).
    #[arg(long, default_value_t = 0)]
    pub depth: u32,
    /// Time budget per position in milliseconds sent with every job (0: none).
    #[arg(long, default_value_t = 0)]
    pub time_ms: u32,
    /// Seconds after which a lease that was not renewed by a heartbeat is requeued.
    #[arg(long, default_value_t = 120)]
    pub lease_secs: u64,
    /// Seconds between the heartbeats workers are asked to send.
    #[arg(long, default_value_t = 10)]
    pub heartbeat_secs: u64,
    /// Failed evaluations (rejected results, evaluations a worker gave up on)
    /// after which a position is quarantined (its edge banned); the failures must
    /// come from more than one worker, so a broken engine cannot ban healthy
    /// positions. `book-tools stats` lists quarantined positions, `book-tools
    /// unban` lifts them.
    #[arg(long, default_value_t = 3)]
    pub max_failures: u32,
    /// Failed jobs in a row (no success between) after which a worker is refused:
    /// its stream is closed with the reason, the worker stops, and it may not
    /// connect again in this run.
    #[arg(long, default_value_t = 10)]
    pub max_worker_failures: u32,
    /// On SIGTERM or Ctrl-C, wait this many seconds for jobs in flight.
    #[arg(long, default_value_t = 60)]
    pub drain_secs: u64,
    /// PEM certificate chain for TLS (with --tls-key); workers then connect with
    /// `https://` URLs.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Log format: `text` for people, `json` (one object per line) for log
    /// collectors. Levels come from RUST_LOG (default `info`).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: stera_service::logging::LogFormat,
    /// Serve Prometheus metrics (GET /metrics), the status page (GET /) and its
    /// JSON (GET /api/status) on this address, e.g. 0.0.0.0:9100. Off when not given.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// How the positions to think are chosen from the book.
    #[arg(long, value_enum, default_value = "alphabeta")]
    pub select: SelectKind,
    /// Softmax temperature in centipawns for `--select softmax` (default 50): a
    /// move whose value is T below another's is sampled e (2.718...) times less
    /// often. Refused with `--select alphabeta`.
    #[arg(long, value_name = "CP")]
    pub temperature: Option<f64>,
    /// Seed of the `--select softmax` sampling: the same book, seed and sequence
    /// of selections and results give the same leaves.
    #[arg(long, default_value_t = stera_book::DEFAULT_SELECT_SEED)]
    pub select_seed: u64,
    /// Progress for a person: on a terminal (text logs), a status line redrawn
    /// every second; otherwise a summary log line (target
    /// `stera_coordinator::status`) every this many seconds (a log collector
    /// needs no more; the metrics have the rest). 0: neither.
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub status_every_secs: u64,
    #[command(flatten)]
    pub play: play::PlayArgs,
}

/// How the coordinator selects the positions to think (`--select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SelectKind {
    /// Super Tera-Shock: the leaf at the end of the principal variation of an
    /// alpha-beta search over the book (the reference method; always the line
    /// the book currently believes best).
    #[default]
    Alphabeta,
    /// MC Softmax: from a root, sample each move with probability proportional
    /// to exp(value / --temperature) until a move leaves the book; that position
    /// is thought. Spreads the thinking over near-best lines.
    Softmax,
}

/// Default `--temperature` of `--select softmax`, in centipawns.
pub const DEFAULT_SELECT_TEMPERATURE: f64 = 50.0;

/// The selection mode the `--select`, `--temperature` and `--select-seed` flags
/// give.
///
/// # Errors
/// `--temperature` with `--select alphabeta`, or a temperature that is not a
/// finite number > 0.
pub fn select_mode(args: &CoordinatorArgs) -> Result<SelectMode> {
    match args.select {
        SelectKind::Alphabeta => {
            if args.temperature.is_some() {
                bail!("--temperature applies only to --select softmax");
            }
            Ok(SelectMode::AlphaBeta)
        }
        SelectKind::Softmax => {
            let temperature = args.temperature.unwrap_or(DEFAULT_SELECT_TEMPERATURE);
            if !(temperature.is_finite() && temperature > 0.0) {
                bail!("--temperature must be a finite number > 0, not {temperature}");
            }
            Ok(SelectMode::Softmax(SoftmaxSelect {
                temperature,
                seed: args.select_seed,
            }))
        }
    }
}

fn tls_config(args: &CoordinatorArgs) -> Result<Option<tonic::transport::ServerTlsConfig>> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let cert = std::fs::read(cert)
        .with_context(|| format!("cannot read TLS certificate {}", cert.display()))?;
    let key =
        std::fs::read(key).with_context(|| format!("cannot read TLS key {}", key.display()))?;
    Ok(Some(
        tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(cert, key)),
    ))
}

/// Refuses, before anything runs, an `--export` or `--games-out` file inside a
/// store (this coordinator's own included) and an `--export-dir` that is not a
/// directory or lies inside the store.
fn check_export_paths(args: &CoordinatorArgs) -> Result<()> {
    if let Some(path) = &args.export {
        stera_book::store_path::check_output_path(path, &args.db)
            .with_context(|| format!("bad --export {}", path.display()))?;
    }
    if let Some(path) = &args.play.games_out {
        stera_book::store_path::check_output_path(path, &args.db)
            .with_context(|| format!("bad --games-out {}", path.display()))?;
    }
    if let Some(dir) = &args.export_dir {
        stera_book::store_path::check_export_dir(dir, &args.db)
            .with_context(|| format!("bad --export-dir {}", dir.display()))?;
    }
    Ok(())
}

/// Removes, and names in the log, what exports and backups of earlier runs
/// that were killed left in the directories this run writes into (only names
/// with `stera-partial-<pid>` of processes that no longer run, see
/// `stera_formats::leftovers`).
fn clean_leftovers(args: &CoordinatorArgs) {
    let dirs = [
        args.backup_dir.as_deref(),
        args.export_dir.as_deref(),
        args.export.as_deref().map(|p| match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        }),
    ];
    for dir in dirs.into_iter().flatten() {
        for removed in stera_formats::leftovers::clean_stale(dir) {
            tracing::info!(path = %removed.display(), "removed a leftover of an interrupted export or backup");
        }
    }
}

/// Waits for the next SIGTERM (on `term`, registered at start) or Ctrl-C.
async fn terminated(term: &mut Option<tokio::signal::unix::Signal>) {
    match term {
        Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Runs the coordinator until the think limit (and the games target) is reached or
/// it is told to stop.
///
/// # Errors
/// The store cannot be opened, the address cannot be bound, local workers cannot be
/// started, or the final export fails.
pub async fn run(args: CoordinatorArgs, export: Option<ExportFn<SledStore>>) -> Result<()> {
    let token = stera_service::token::read_token(args.token_file.as_deref())?;
    if token.is_none() && !args.listen.ip().is_loopback() {
        tracing::warn!(
            listen = %args.listen,
            "listening on a non-loopback address without a token: anyone who can reach it may connect workers, read the status, export and back up; give --token-file or STERA_TOKEN"
        );
    }
    let tls = tls_config(&args)?;
    std::fs::create_dir_all(&args.db)
        .with_context(|| format!("cannot create {}", args.db.display()))?;
    check_export_paths(&args)?;
    if let Some(dir) = &args.backup_dir {
        stera_book::store_path::check_export_dir(dir, &args.db)
            .map_err(|e| anyhow::anyhow!("bad --backup-dir: {e}"))?;
    }
    clean_leftovers(&args);
    if let Some(path) = &args.export {
        // Refused now rather than by the export at the end of a long run.
        export::options_of(&export_request(&args, path))
            .map_err(|e| anyhow::anyhow!("bad export flags: {e}"))?;
    }
    let play = args
        .play
        .settings()
        .map_err(|e| anyhow::anyhow!("bad game flags: {e}"))?;
    let select = select_mode(&args)?;
    // Registered before the server listens: a SIGTERM that comes right after
    // "listening" must drain the coordinator, not kill it with the default action.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let live = open_live_book(&args.db).await?;
    let mut selector = Selector::new();
    selector
        .set_select_mode(select)
        .map_err(|e| anyhow::anyhow!("bad selection flags: {e}"))?;
    tracing::info!(?select, "selection");

    let registry = Arc::new(Registry::default());
    let (progress_tx, mut progress) = watch::channel(Progress::default());
    let (handle, events_rx) = DispatcherHandle::channel();
    let config = dispatch_config(&args, play);
    // Set by a signal during the final export: the dispatcher then does not wait
    // for the maintenance thread (the export writes a temporary file, never the
    // store, so cutting it off leaves the store whole).
    let abandon = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dispatcher = Dispatcher::new(
        live,
        selector,
        config,
        export,
        registry.clone(),
        progress_tx,
    )
    .map(|d| {
        d.abandon_maintenance_on(abandon.clone())
            .with_store_space(store_space::StoreSpace::new(
                args.db.clone(),
                args.store_reserve_mb.saturating_mul(1 << 20),
                registry.clone(),
            ))
            .with_backup(backup::store_backup(args.db.clone()))
            .with_compaction(compact::store_compaction(
                compact::CompactPolicy {
                    every: args.compact_every,
                    min_records: args.compact_chunk,
                },
                registry.clone(),
            ))
    })
    .map_err(|e| anyhow::anyhow!("cannot start: {e}"))?;
    let dispatcher_thread = std::thread::Builder::new()
        .name("dispatcher".into())
        .spawn(move || dispatcher.run(events_rx))
        .context("cannot start the dispatcher thread")?;

    if let Some(addr) = args.metrics {
        serve_metrics(addr, registry.clone(), &handle, args.db.clone()).await?;
    }
    let ticker = start_ticker(handle.clone());
    let (stop_server, server_stopped) = watch::channel(false);
    let (server, addr) =
        start_server(&args, tls, &token, &handle, &registry, server_stopped).await?;
    let mut children = start_local_workers(&args, addr, token.as_deref())?;
    let periodic = args
        .export
        .as_ref()
        .filter(|_| args.export_every_mins > 0)
        .map(|path| {
            let every = Duration::from_secs(args.export_every_mins.saturating_mul(60));
            schedule::periodic_export(handle.clone(), every, export_request(&args, path))
        });
    let backups = args
        .backup_dir
        .as_ref()
        .filter(|_| args.backup_every_mins > 0)
        .map(|dir| {
            let every = Duration::from_secs(args.backup_every_mins.saturating_mul(60));
            schedule::periodic_backup(handle.clone(), every, dir.clone(), args.backup_keep)
        });
    let status = status_line::spawn(handle.clone(), progress.clone(), status_settings(&args));

    wait_for_the_end(&args, &handle, &mut progress, &mut term).await;
    status.stop().await;
    let thought = progress.borrow().thought;
    let mut export_result = Ok(());
    if let Some(path) = &args.export {
        tokio::select! {
            r = schedule::final_export(&handle, export_request(&args, path)) => {
                export_result = r
                    .map(drop)
                    .map_err(|e| anyhow::anyhow!("export to {} failed: {e}", path.display()));
            }
            () = terminated(&mut term) => {
                tracing::warn!(path = %path.display(), "signal during the final export: export abandoned (the earlier export file, if any, is unchanged; the store is whole)");
                abandon.store(true, std::sync::atomic::Ordering::Release);
                export_result = Err(anyhow::anyhow!(
                    "the final export to {} was abandoned by a signal; the store is whole, run `book-tools export` to write the book",
                    path.display()
                ));
            }
        }
    }

    if let Some(p) = periodic {
        p.abort();
    }
    if let Some(b) = backups {
        b.abort();
    }
    let _ = stop_server.send(true);
    for child in &mut children {
        let _ = child.start_kill();
    }
    for child in &mut children {
        let _ = child.wait().await;
    }
    ticker.abort();
    drop(handle);
    close_server(server).await;
    // The service held event senders; once it is gone the dispatcher ends.
    let mut live = tokio::task::spawn_blocking(move || dispatcher_thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the dispatcher thread panicked"))?;
    // Durable before the process ends, even if an abandoned export thread still
    // holds the store (then sled would not flush when the live book is dropped).
    if let Err(e) = live.store_mut().flush() {
        tracing::error!(error = %e, "cannot flush the store at shutdown");
    }
    export_result?;
    tracing::info!(nodes = live.book().len(), thought, "coordinator stopped");
    Ok(())
}

/// Opens the store and loads the book (on a blocking thread: it reads every node).
async fn open_live_book(db: &std::path::Path) -> Result<LiveBook<SledStore>> {
    let db = db.to_path_buf();
    let live = tokio::task::spawn_blocking(move || -> Result<LiveBook<SledStore>> {
        let store = SledStore::open(&db)
            .with_context(|| format!("cannot open the book store {}", db.display()))?;
        if !store.twins_merged().context("cannot read the store's twin marker")? {
            // It works as it is (both twins keep their values), but it is not
            // the one-node-per-pair book peta_shock would make of it.
            tracing::warn!(
                store = %db.display(),
                "the store may hold both colour-flipped twins of a position (made before twins became one node, or imported with --keep-twins); stop the coordinator and run `book-tools migrate --db STORE --out NEW` to merge them"
            );
        }
        LiveBook::open(store, None).context("cannot load the book")
    })
    .await??;
    tracing::info!(nodes = live.book().len(), "book loaded");
    Ok(live)
}

fn dispatch_config(args: &CoordinatorArgs, play: play::PlaySettings) -> DispatchConfig {
    DispatchConfig {
        lease: Duration::from_secs(args.lease_secs.max(1)),
        heartbeat: Duration::from_secs(args.heartbeat_secs.max(1)),
        limits: Limits {
            nodes: args.nodes,
            depth: args.depth,
            time_ms: args.time_ms,
        },
        think_limit: args.think_limit,
        max_failures: args.max_failures.max(1),
        max_worker_failures: args.max_worker_failures.max(1),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        play,
    }
}

/// What `--status-every-secs` (and the terminal, the log format, the limits) ask of
/// the status line.
fn status_settings(args: &CoordinatorArgs) -> status_line::StatusSettings {
    status_line::StatusSettings {
        every: Duration::from_secs(args.status_every_secs),
        // Local workers share the terminal and draw their own line there (which
        // cannot be turned off yet): two lines redrawn over each other would be
        // unreadable, so the coordinator then logs summaries.
        tty: std::io::IsTerminal::is_terminal(&std::io::stderr())
            && args.log_format == stera_service::logging::LogFormat::Text
            && args.local_workers == 0,
        think_limit: args.think_limit,
        play: args.play.play_share > 0.0,
        games_target: args.play.games,
    }
}

/// Ticks the dispatcher (lease expiry) four times a second.
fn start_ticker(dispatcher: DispatcherHandle) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            if dispatcher.send(Event::Tick).is_err() {
                break;
            }
        }
    })
}

type ServerTask = tokio::task::JoinHandle<Result<(), tonic::transport::Error>>;

/// Binds `--listen` and serves the gRPC service until `stopped` turns true.
async fn start_server(
    args: &CoordinatorArgs,
    tls: Option<tonic::transport::ServerTlsConfig>,
    token: &Option<String>,
    dispatcher: &DispatcherHandle,
    registry: &Arc<Registry>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(ServerTask, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    let service = CoordinatorServer::with_interceptor(
        CoordinatorService::new(dispatcher.clone(), registry.clone(), stopped.clone())
            .with_export_paths(args.db.clone(), args.export_dir.clone()),
        TokenCheck::new(token.clone()),
    );
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .context("invalid TLS certificate or key")?;
    }
    let server = tokio::spawn(builder.add_service(service).serve_with_incoming_shutdown(
        TcpListenerStream::new(listener),
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    Ok((server, addr))
}

/// Runs until the limits are reached, or a signal asks to drain (then waits up to
/// `--drain-secs` for jobs in flight).
async fn wait_for_the_end(
    args: &CoordinatorArgs,
    dispatcher: &DispatcherHandle,
    progress: &mut watch::Receiver<Progress>,
    term: &mut Option<tokio::signal::unix::Signal>,
) {
    let signalled = tokio::select! {
        _ = progress.wait_for(|p| p.finished) => false,
        () = terminated(term) => true,
    };
    if signalled {
        tracing::warn!(
            drain_secs = args.drain_secs,
            "stopping: no new jobs, waiting for jobs in flight"
        );
        let _ = dispatcher.drain("the coordinator is shutting down");
        tokio::select! {
            _ = tokio::time::timeout(
                Duration::from_secs(args.drain_secs),
                progress.wait_for(|p| p.in_flight == 0),
            ) => {}
            () = terminated(term) => {
                tracing::warn!("second signal: drain cut short; results still in flight are given up (their positions are thought again next run)");
            }
        }
    } else if progress.borrow().stalled {
        tracing::warn!(
            thought = progress.borrow().thought,
            "stopping: no position can be thought any more"
        );
        let _ = dispatcher.drain("no position can be thought any more");
    } else {
        tracing::info!(thought = progress.borrow().thought, "think limit reached");
        let _ = dispatcher.drain("the think limit is reached");
    }
}

/// The request of the end-of-run and periodic exports to `path`.
fn export_request(
    args: &CoordinatorArgs,
    path: &std::path::Path,
) -> stera_proto::v1::ExportRequest {
    // No --format: `--export book.ybb` writes a binary book (by the extension).
    args.export_choice
        .choice()
        .to_request(path.display().to_string())
}

/// Streams end with the stop signal; a connection that still does not close is cut
/// after a grace period, so shutdown never waits on a peer.
async fn close_server(mut server: ServerTask) {
    if tokio::time::timeout(SERVER_GRACE, &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open after {SERVER_GRACE:?}; closing them");
        server.abort();
    }
}

/// How long the gRPC server may take to close its connections at shutdown.
const SERVER_GRACE: Duration = Duration::from_secs(5);

/// How often the store directory is measured (walking it costs a few syscalls per
/// file; sled keeps few, large files).
const STORE_SIZE_EVERY: Duration = Duration::from_secs(30);

/// Installs the recorder and serves `/metrics`, `/` and `/api/status` on `addr`;
/// measures the store directory every [`STORE_SIZE_EVERY`].
async fn serve_metrics(
    addr: SocketAddr,
    registry: Arc<Registry>,
    dispatcher: &DispatcherHandle,
    db: PathBuf,
) -> Result<()> {
    let handle = stera_service::telemetry::install_recorder("coordinator", telemetry::BUCKETS)?;
    telemetry::describe();
    let exposition = {
        let registry = registry.clone();
        stera_service::telemetry::Exposition::new(handle, move || telemetry::refresh(&registry))
    };
    let router = exposition
        .router()
        .merge(dashboard::Dashboard::new(registry.clone(), dispatcher).router());
    stera_service::telemetry::serve(addr, router).await?;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STORE_SIZE_EVERY);
        loop {
            tick.tick().await;
            let dir = db.clone();
            match tokio::task::spawn_blocking(move || stera_book::store_path::directory_size(&dir))
                .await
            {
                Ok(Ok(bytes)) => registry
                    .counters
                    .store_bytes
                    .store(bytes, std::sync::atomic::Ordering::Relaxed),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, db = %db.display(), "cannot measure the store")
                }
                Err(_) => return,
            }
        }
    });
    Ok(())
}

/// Starts `--local-workers` worker processes: this same executable in worker mode.
fn start_local_workers(
    args: &CoordinatorArgs,
    addr: SocketAddr,
    token: Option<&str>,
) -> Result<Vec<tokio::process::Child>> {
    if args.local_workers == 0 {
        return Ok(Vec::new());
    }
    let exe =
        std::env::current_exe().context("cannot find this executable to start local workers")?;
    let mut children = Vec::new();
    for i in 0..args.local_workers {
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg(LOCAL_WORKER_ARG)
            .arg("--coordinator")
            .arg(local_url(args, addr))
            .arg("--slots")
            .arg(args.local_slots.max(1).to_string())
            .arg("--worker-id")
            .arg(format!("local-{i}"))
            // They end with this coordinator rather than wait for the next one.
            .arg("--exit-on-drain")
            // They share this terminal: one status line, this process's; their
            // log lines in this process's format.
            .arg("--status-every-secs")
            .arg("0")
            .arg("--log-format")
            .arg(match args.log_format {
                stera_service::logging::LogFormat::Text => "text",
                stera_service::logging::LogFormat::Json => "json",
            })
            .kill_on_drop(true);
        if let Some(t) = token {
            cmd.env("STERA_TOKEN", t);
        }
        if let Some(cert) = &args.tls_cert {
            cmd.arg("--tls-ca").arg(cert);
        }
        children.push(cmd.spawn().context("cannot start a local worker")?);
    }
    tracing::info!(count = args.local_workers, "local workers started");
    Ok(children)
}

/// The URL local workers use: loopback, over TLS when the coordinator serves TLS
/// (then the certificate must name `localhost`).
fn local_url(args: &CoordinatorArgs, addr: SocketAddr) -> String {
    if args.tls_cert.is_some() {
        format!("https://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    }
}

/// First argument that makes the coordinator executable act as a worker.
pub const LOCAL_WORKER_ARG: &str = "__worker";

#[cfg(test)]
mod select_flag_tests {
    use super::*;
    use clap::Parser;

    fn parse(extra: &[&str]) -> Result<CoordinatorArgs, clap::Error> {
        let mut argv = vec!["coordinator", "--db", "/tmp/x"];
        argv.extend_from_slice(extra);
        CoordinatorArgs::try_parse_from(argv)
    }

    #[test]
    fn alphabeta_is_the_default() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.select, SelectKind::Alphabeta);
        assert_eq!(select_mode(&args).unwrap(), SelectMode::AlphaBeta);
        let args = parse(&["--select", "alphabeta"]).unwrap();
        assert_eq!(select_mode(&args).unwrap(), SelectMode::AlphaBeta);
    }

    #[test]
    fn softmax_with_temperature_and_seed() {
        let args = parse(&["--select", "softmax", "--temperature", "50"]).unwrap();
        assert_eq!(
            select_mode(&args).unwrap(),
            SelectMode::Softmax(SoftmaxSelect {
                temperature: 50.0,
                seed: stera_book::DEFAULT_SELECT_SEED,
            })
        );
        let args = parse(&["--select", "softmax", "--select-seed", "9"]).unwrap();
        assert_eq!(
            select_mode(&args).unwrap(),
            SelectMode::Softmax(SoftmaxSelect {
                temperature: DEFAULT_SELECT_TEMPERATURE,
                seed: 9,
            })
        );
    }

    #[test]
    fn nonsense_is_refused() {
        assert!(parse(&["--select", "mcts"]).is_err());
        let args = parse(&["--temperature", "50"]).unwrap();
        assert!(select_mode(&args).is_err(), "temperature without softmax");
        for t in ["0", "-5", "NaN", "inf"] {
            let flag = format!("--temperature={t}");
            let args = parse(&["--select", "softmax", &flag]).unwrap();
            assert!(select_mode(&args).is_err(), "{t}");
        }
    }

    #[test]
    fn help_explains_each_mode() {
        let help = <CoordinatorArgs as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        for text in [
            "--select",
            "alphabeta",
            "softmax",
            "--temperature",
            "--select-seed",
        ] {
            assert!(help.contains(text), "{text} missing from --help");
        }
        assert!(help.contains("principal variation") && help.contains("exp(value"));
    }
}
