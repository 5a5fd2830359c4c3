//! The coordinator: owns the book and its selector, hands leaves to workers as
//! leases over gRPC, and stores their results.
//!
//! * [`dispatcher`]: the single thread that joins the lease table, the job kinds and
//!   the registry; every change arrives there as an event (`handle`: the events
//!   and the typed requests other tasks send).
//! * `kinds`: the ticket a lease carries and every per-kind dispatch; the kinds
//!   themselves in `think` and `search`.
//! * The coordinator's own games, every move a search job (`game_search`):
//!   learning games (`learn`) and self-play games (`self_play` plays them,
//!   `play` counts them); one id space for both (`kinds::GameIds`).
//! * [`leases`]: the lease table (credits, leases, heartbeats, expiry, idempotent
//!   completion), knowing nothing of what a job is; `blame`: failures per worker
//!   and per position; `workers`: the open streams; `thinkers`: which engines at
//!   which budgets may think for the store (`--allow-mixed-engines`).
//! * `observe`: each domain event's log line, counter and problem entry;
//!   `progress`: what the dispatcher publishes after each round.
//! * `maintenance`: exports, backups, compactions and their timers.
//! * `service`: the gRPC service; `server`: its start and stop, and the end of a
//!   run (SIGTERM drains, a second one cuts the drain short).
//! * [`validate`]: a result must give every legal move a value in range.
//! * [`registry`]: counters and the worker list, read by status and metrics;
//!   `telemetry`: Prometheus metric names, their copy from the registry and the
//!   metrics server; `status`: the Status reply, which the RPC and `/api/status`
//!   serve; `dashboard`: the status page; `status_line`: a live status line on a
//!   terminal, summary log lines otherwise.
//! * `cli`: the command line; `local_workers`: `--local-workers`.
//! * [`run`]: the wiring of all of it.

pub(crate) mod blame;
pub(crate) mod cli;
pub(crate) mod closed;
pub(crate) mod dashboard;
pub mod dispatcher;
pub(crate) mod game_search;
pub(crate) mod handle;
pub(crate) mod kinds;
pub(crate) mod learn;
pub mod lease_id;
pub mod leases;
pub(crate) mod local_workers;
pub(crate) mod maintenance;
pub(crate) mod metrics_server;
pub(crate) mod observe;
pub(crate) mod play;
pub(crate) mod progress;
pub mod registry;
pub(crate) mod search;
pub(crate) mod self_play;
pub(crate) mod server;
pub(crate) mod service;
pub(crate) mod status;
pub(crate) mod status_line;
pub(crate) mod store_space;
pub(crate) mod telemetry;
pub(crate) mod think;
pub(crate) mod thinkers;
pub mod validate;
pub(crate) mod workers;

pub use cli::{CoordinatorArgs, DEFAULT_SELECT_TEMPERATURE, SelectKind, select_mode};
pub use local_workers::LOCAL_WORKER_ARG;
/// Exports keep their path: `stera_coordinator::export` is what the binaries and
/// tools call.
pub use maintenance::export;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use stera_book::{LiveBook, NodeStore, Selector, SledStore};
use tokio::sync::watch;

use crate::dispatcher::{Dispatcher, Progress};
use crate::handle::DispatcherHandle;
use crate::maintenance::{ExportFn, backup, compact, schedule};
use crate::registry::Registry;

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
    let tls = server::tls_config(&args)?;
    // The flags alone first, so that a refused run leaves nothing behind (not
    // even an empty --db directory).
    cli::check_export_format(&args)?;
    if let Some(path) = &args.export {
        // Refused now rather than by the export at the end of a long run.
        export::options_of(&cli::export_request(&args, path))
            .map_err(|e| anyhow::anyhow!("bad export flags: {e}"))?;
    }
    let mut play = args
        .play
        .settings()
        .map_err(|e| anyhow::anyhow!("bad game flags: {e}"))?;
    let select = select_mode(&args)?;
    args.learn
        .check()
        .map_err(|e| anyhow::anyhow!("bad learning flags: {e}"))?;
    cli::check_local_engine(&args)?;
    cli::check_job_limits(&args)?;
    backup::refuse_rotatable_store(&args.db, args.backup_dir.as_deref())?;
    let creating = cli::check_store_or_create(&args)?;
    if creating {
        // Before the store is made: a new store wrote no book anywhere.
        cli::check_export_owned(&args, None)?;
    }
    std::fs::create_dir_all(&args.db)
        .with_context(|| format!("cannot create {}", args.db.display()))?;
    cli::check_export_paths(&args)?;
    if let Some(path) = &args.play.out_games {
        let out = stera_book::store_path::BoundOutput::append(path, Some(&args.db))
            .with_context(|| format!("bad --out-games {}", path.display()))?;
        play.games_out = Some(std::sync::Arc::new(out));
    }
    if let Some(dir) = &args.backup_dir {
        backup::prepare_dir(dir, &args.db)?;
    }
    cli::clean_leftovers(&args);
    // Registered before the server listens: a SIGTERM that comes right after
    // "listening" must drain the coordinator, not kill it with the default action.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let mut live = open_live_book(&args.db).await?;
    if !creating {
        cli::check_export_owned(&args, Some(&live.store().export_ledger()))?;
    }
    cli::check_export_opponents(&args, live.store())?;
    cli::check_run_budget(&args, live.store())?;
    let roots = live.config().roots.clone();
    live.set_leaf_discount(args.selection.leaf_discount);
    let mut selector = Selector::new();
    selector
        .set_select_mode(select)
        .map_err(|e| anyhow::anyhow!("bad selection flags: {e}"))?;
    tracing::info!(
        ?select,
        leaf_discount = args.selection.leaf_discount,
        "selection"
    );

    let registry = Arc::new(Registry::starting_now());
    // The timers start after /metrics serves; their intervals are set now, so that
    // no scrape reads a configured timer as off (the age alerts key on them).
    let export_every = args
        .export
        .as_ref()
        .filter(|_| args.export_every_mins > 0)
        .map(|_| Duration::from_secs(args.export_every_mins.saturating_mul(60)));
    let backup_every = args
        .backup_dir
        .as_ref()
        .filter(|_| args.backup_every_mins > 0)
        .map(|_| Duration::from_secs(args.backup_every_mins.saturating_mul(60)));
    for (counter, every) in [
        (&registry.counters.export_every_secs, export_every),
        (&registry.counters.backup_every_secs, backup_every),
    ] {
        counter.store(
            every.map_or(0, |e| e.as_secs()),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    let (progress_tx, mut progress) = watch::channel(Progress::default());
    let (handle, events_rx) = DispatcherHandle::channel();
    let lease_secret = live
        .store_mut()
        .lease_secret()
        .context("cannot read or make the store's lease secret")?;
    let config = cli::dispatch_config(&args, play.clone(), lease_secret);
    let ledger = live.store().export_ledger();
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
        metrics_server::serve(addr, registry.clone(), &handle, args.db.clone()).await?;
    }
    let ticker = server::start_ticker(handle.clone());
    let (stop_server, server_stopped) = watch::channel(false);
    let (server, addr) = server::start_server(
        &args,
        tls,
        &token,
        &handle,
        &registry,
        ledger,
        server_stopped,
    )
    .await?;
    let mut local_workers = local_workers::start_local_workers(&args, addr, token.as_deref())?;
    let learning = learn::LearnDriver::start(
        handle.clone(),
        registry.clone(),
        &args.learn,
        &roots,
        args.play.ply_limit,
        args.export_choice.choice().prior_games,
    )
    .await
    .map_err(|e| anyhow::anyhow!("cannot start learning games: {e}"))?;
    let self_play =
        self_play::SelfPlayDriver::start(handle.clone(), registry.clone(), play, &roots)
            .await
            .map_err(|e| anyhow::anyhow!("cannot start self-play games: {e}"))?;
    let periodic = args.export.as_ref().zip(export_every).map(|(path, every)| {
        schedule::periodic_export(handle.clone(), every, cli::export_request(&args, path))
    });
    let backups = args
        .backup_dir
        .as_ref()
        .zip(backup_every)
        .map(|(dir, every)| {
            schedule::periodic_backup(
                handle.clone(),
                every,
                dir.clone(),
                args.backup_keep,
                args.db.clone(),
            )
        });
    let status = status_line::spawn(
        handle.clone(),
        progress.clone(),
        cli::status_settings(&args),
    );

    let run_result = server::wait_for_the_end(
        &args,
        &handle,
        &registry,
        &mut local_workers,
        &mut progress,
        &mut term,
    )
    .await;
    learning.stop().await;
    self_play.stop().await;
    status.stop().await;
    let thought = progress.borrow().thought;
    let mut export_result = Ok(());
    if let Some(path) = &args.export {
        tokio::select! {
            r = schedule::final_export(&handle, cli::export_request(&args, path)) => {
                export_result = r
                    .map(drop)
                    .map_err(|e| anyhow::anyhow!("export to {} failed: {e}", path.display()));
            }
            () = server::terminated(&mut term) => {
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
    local_workers.stop().await;
    ticker.abort();
    drop(handle);
    server::close_server(server).await;
    // The service held event senders; once it is gone the dispatcher ends.
    let mut live = tokio::task::spawn_blocking(move || dispatcher_thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the dispatcher thread panicked"))?;
    // Durable before the process ends, even if an abandoned export thread still
    // holds the store (then sled would not flush when the live book is dropped).
    if let Err(e) = live.store_mut().flush() {
        tracing::error!(error = %e, "cannot flush the store at shutdown");
    }
    run_result?;
    export_result?;
    tracing::info!(nodes = live.book().len(), thought, "coordinator stopped");
    Ok(())
}

/// Opens the store and loads the book (on a blocking thread: it reads every node).
async fn open_live_book(db: &std::path::Path) -> Result<LiveBook<SledStore>> {
    let db = db.to_path_buf();
    let live = tokio::task::spawn_blocking(move || -> Result<LiveBook<SledStore>> {
        let existed = db.join("conf").is_file();
        let store = SledStore::open(&db)
            .with_context(|| format!("cannot open the book store {}", db.display()))?;
        if !existed {
            // Only with --create (`cli::check_store_or_create`); said at INFO,
            // loudly: a new book is what a first run is for, and a clean run
            // logs no warning.
            tracing::info!(
                store = %db.display(),
                "created a NEW, EMPTY book store (--create)"
            );
        }
        if store.record_begun() {
            tracing::info!(
                store = %db.display(),
                "the store had no record of what it holds (made before stores kept one): begun now; from now on a store cut short is reported as damaged"
            );
        }
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
