//! The coordinator's command line: its flags, the checks that need nothing but
//! the flags, and what the flags make of the dispatcher's, the status line's and
//! the exports' settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use stera_book::{NodeStore, SelectMode};
use stera_proto::v1::Limits;
use stera_service::export::{CoordinatorExport, ExportFlags};
use stera_service::select::SelectFlags;

use crate::dispatcher::DispatchConfig;
use crate::{play, status_line};

/// Coordinator command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "coordinator",
    version,
    about = "Super Tera-Shock book coordinator"
)]
pub struct CoordinatorArgs {
    /// Directory of the book store (it must exist unless --create is given).
    #[arg(long)]
    pub db: PathBuf,
    /// Make the store when --db does not exist (without it, a missing store
    /// is an error: a typo must not start a new book).
    #[arg(long)]
    pub create: bool,
    /// Address the gRPC service listens on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Start this many worker processes on loopback (0 to 256), with the engine
    /// of --engine and its flags (below, "The local workers' engine"): the
    /// built-in engine by default.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub local_workers: u32,
    /// Engines of each local worker (its --slots, 1 to 1,024). The coordinator
    /// counts each worker's engines plus its one prefetched job as its job slots.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub local_slots: u32,
    /// Stop after this many positions have been thought in this run. Default: no
    /// limit, the run goes on until it is stopped (SIGTERM, Ctrl-C) or has
    /// nothing left to think.
    #[arg(long)]
    pub think_limit: Option<u64>,
    /// Write a YaneuraOu book to this file when generation stops (and every
    /// --export-every-mins while it runs), as `book-tools export --export FILE`
    /// writes one. Its extension chooses the format unless --export-format says
    /// otherwise: `.ybb` a binary book, anything else YaneuraOu's text book.
    /// Default: no export.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Also export to --export every this many minutes while generation runs (0: only
    /// at the end). Generation goes on during an export: it writes a snapshot of
    /// the book on its own threads, at a lower CPU priority.
    #[arg(long, default_value_t = 0, requires = "export")]
    pub export_every_mins: u64,
    // `--export-propagation`, `--export-temperature`, `--export-weights`,
    // `--export-shrink`, `--export-raw`, `--export-format` of the --export book:
    // declared once for the three export front ends.
    #[command(flatten)]
    pub export_choice: ExportFlags<CoordinatorExport>,
    /// Back the store up into --backup-dir every this many minutes while the
    /// coordinator runs (0: never). Each backup is a complete store directory
    /// `backup-<unix seconds>.db`, written under a temporary name and renamed when complete,
    /// on the maintenance thread while selection and results go on: it holds the
    /// store as it was when the backup started.
    #[arg(long, default_value_t = 0, requires = "backup_dir")]
    pub backup_every_mins: u64,
    /// Directory of the periodic backups (not inside the store; made at start
    /// when missing, its parent must exist). Required by --backup-every-mins;
    /// default: none, no periodic backups.
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
    /// hands out no think jobs (results already out are still stored in
    /// it), logs why, shows `stera_coordinator_store_writable 0`, and resumes
    /// when 8 MiB more than the reserve are free. sled cannot write on a full
    /// disk. At least 8, the store's own write margin: a smaller value is raised
    /// to it (and the log says so).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub store_reserve_mb: u64,
    /// Positions per merged chunk of a compaction pass.
    #[arg(long, default_value_t = 4096, value_name = "POSITIONS", value_parser = clap::value_parser!(u32).range(2..))]
    pub compact_chunk: u32,
    /// Directory in which the Export RPC (`book-tools remote export --export PATH`) may
    /// write: relative paths are taken from here, and paths that resolve outside it
    /// are refused. Without it, remote exports are refused (a remote caller must
    /// not choose where the coordinator writes). Never inside the store.
    #[arg(long, value_name = "DIR")]
    pub export_dir: Option<PathBuf>,
    /// File holding the bearer token workers must present (else STERA_TOKEN; none
    /// means no authentication, for loopback use).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Node budget sent with every think job (0: none; with no limit at all the
    /// worker's own budget applies: its --nodes/--depth/--time-ms, else the
    /// built-in engine's 300,000 nodes).
    #[arg(long, value_name = "NODES", default_value_t = 0)]
    pub nodes: u64,
    /// Depth limit sent with every think job (0: none).
    #[arg(long, value_name = "DEPTH", default_value_t = 0)]
    pub depth: u32,
    /// Time budget per position in milliseconds sent with every think job (0:
    /// none). The worker's and book-tools' flag of the same name is `--time-ms` too.
    #[arg(long, value_name = "MS", default_value_t = 0)]
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
    /// Let workers whose engine or budget differs from the store's think for it.
    /// A worker's thinker is its engine at the budget of its think jobs (--nodes,
    /// --depth, --time-ms when any is set, else the worker's own); each position
    /// records the thinker that thought it (`book-tools show`, `stats`). Default:
    /// such a worker is refused at Hello (it stops, naming both), and a run whose
    /// limits differ from every budget recorded in the store does not start;
    /// values of two engines or budgets are not on one scale. A run that thinks
    /// nothing (`--think-limit 0`: games, learning, searches) takes any worker,
    /// whose engine then only plays.
    #[arg(long)]
    pub allow_mixed_engines: bool,
    /// On SIGTERM or Ctrl-C, wait this many seconds for jobs in flight.
    #[arg(long, default_value_t = 60)]
    pub drain_secs: u64,
    /// PEM certificate chain for TLS (with --tls-key); workers then connect with
    /// `https://` URLs. Default: no TLS (plain `http://`).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert). Default: no TLS.
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
    // `--select`, `--select-temperature`, `--select-seed`, `--select-leaf-discount`:
    // declared once for the
    // coordinator, `book-tools next` and `book-tools bench select`.
    #[command(flatten)]
    pub selection: SelectFlags,
    /// Progress for a person: on a terminal (text logs), a status line redrawn
    /// every second; otherwise a summary log line (target
    /// `stera_coordinator::status`) every this many seconds (a log collector
    /// needs no more; the metrics have the rest). 0: neither.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub status_every_secs: u64,
    #[command(flatten)]
    pub play: play::PlayArgs,
    #[command(flatten)]
    pub learn: crate::learn::LearnArgs,
    // `--engine`, `--engine-cmd`, `--engine-option`, ...: the worker's engine
    // flags, passed on to the --local-workers (last, so that the heading covers
    // these alone).
    #[command(flatten, next_help_heading = "The local workers' engine")]
    pub local_engine: stera_service::engine_flags::EngineFlags,
}

pub use stera_service::select::{DEFAULT_SELECT_TEMPERATURE, SelectKind};

/// The selection mode the `--select`, `--select-temperature` and `--select-seed` flags
/// give.
///
/// # Errors
/// `--select-temperature` with `--select alphabeta`, or a temperature that is not a
/// finite number >= 0.
pub fn select_mode(args: &CoordinatorArgs) -> Result<SelectMode> {
    Ok(args.selection.mode()?)
}

/// Refuses an `--export-format` that the `--export` path contradicts, and
/// `--export-weights` for a `.ybb` export (from the flags alone, before the
/// store directory is made).
pub(crate) fn check_export_format(args: &CoordinatorArgs) -> Result<()> {
    if let Some(path) = &args.export {
        args.export_choice
            .choice()
            .format_for(path)
            .context("bad --export-format or --export-weights")?;
    }
    Ok(())
}

/// Refuses an `--opponents` list that names a learning opponent the store does
/// not know, when no learning games of this run can add it: the first export
/// would fail hours later otherwise.
pub(crate) fn check_export_opponents(
    args: &CoordinatorArgs,
    store: &dyn stera_book::NodeStore,
) -> Result<()> {
    let choice = args.export_choice.choice();
    if !choice.by_results || args.learn.learn_games > 0 {
        return Ok(());
    }
    let known = store
        .opponents()
        .context("cannot read the store's learning opponents")?;
    choice
        .opponents
        .resolve(&known)
        .context("bad --opponents")?;
    Ok(())
}

/// Refuses, before anything runs, an `--export` or `--out-games` file inside a
/// store (this coordinator's own included) and an `--export-dir` that is not a
/// directory or lies inside the store.
pub(crate) fn check_export_paths(args: &CoordinatorArgs) -> Result<()> {
    if let Some(path) = &args.export {
        stera_book::store_path::check_output_path(path, &args.db)
            .with_context(|| format!("bad --export {}", path.display()))?;
    }
    if let Some(path) = &args.play.out_games {
        stera_book::store_path::check_output_path(path, &args.db)
            .with_context(|| format!("bad --out-games {}", path.display()))?;
    }
    if let Some(dir) = &args.export_dir {
        stera_book::store_path::check_export_dir(dir, &args.db)
            .with_context(|| format!("bad --export-dir {}", dir.display()))?;
    }
    Ok(())
}

/// Whether the run makes a new store: a --db that holds none is refused unless
/// --create says to make one (as book-tools' `--create`): a typo in --db must
/// not start a new, empty book (and replace the --export file with it).
pub(crate) fn check_store_or_create(args: &CoordinatorArgs) -> Result<bool> {
    Ok(stera_book::store_path::must_create_store(
        &args.db,
        args.create,
    )?)
}

/// Refuses --export when it names an existing file that the store (its
/// `ledger`; `None` for a store made now) did not write as it is.
pub(crate) fn check_export_owned(
    args: &CoordinatorArgs,
    ledger: Option<&stera_book::ExportLedger>,
) -> Result<()> {
    let Some(path) = &args.export else {
        return Ok(());
    };
    let resolved = match ledger {
        // A store made now wrote nothing: only whether something is there
        // matters (the path's rules are checked once --db exists).
        None => path.clone(),
        Some(_) => stera_book::store_path::check_output_path(path, &args.db)
            .with_context(|| format!("bad --export {}", path.display()))?,
    };
    crate::export::check_export_owned(ledger, &args.db, path, &resolved)
}

/// Removes, and names in the log, what exports and backups of earlier runs
/// that were killed left in the directories this run writes into (only names
/// with `stera-partial-<pid>` of processes that no longer run, see
/// `stera_formats::leftovers`).
pub(crate) fn clean_leftovers(args: &CoordinatorArgs) {
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

/// The dispatcher's settings from the flags.
pub(crate) fn dispatch_config(
    args: &CoordinatorArgs,
    play: play::PlaySettings,
    lease_secret: [u8; stera_book::SECRET_BYTES],
) -> DispatchConfig {
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
        learn: crate::dispatcher::LearnConfig {
            games: args.learn.learn_games,
            grow_share: if args.learn.learn_grow_plies > 0 {
                args.learn.learn_grow_share
            } else {
                0.0
            },
            opponent_engines: if args.learn.learn_games > 0 {
                args.learn.opponent_engines()
            } else {
                Vec::new()
            },
        },
        allow_mixed_engines: args.allow_mixed_engines,
        lease_secret,
    }
}

/// Refuses to start a run whose think jobs would run at another budget than every
/// budget recorded in the store (`--allow-mixed-engines` allows it): the
/// coordinator's limits, or without them its local workers' built-in default.
/// A run that thinks nothing has no think jobs.
pub(crate) fn check_run_budget(args: &CoordinatorArgs, store: &dyn NodeStore) -> Result<()> {
    if args.think_limit == Some(0) {
        return Ok(());
    }
    let identities = store
        .evaluators()
        .context("cannot read the store's evaluators")?;
    let limits = Limits {
        nodes: args.nodes,
        depth: args.depth,
        time_ms: args.time_ms,
    };
    let (budget, why) = match crate::thinkers::job_budget(&limits) {
        Some(budget) => (budget, "--nodes, --depth, --time-ms"),
        // The budget the local workers report at Hello, by the worker's own rule
        // (a USI engine has none: `check_local_engine` refused that run).
        None if args.local_workers > 0 => (
            args.local_engine
                .choice()
                .budget_of(stera_engine::Limits::default()),
            "the --local-workers' built-in engine without --nodes, --depth or --time-ms",
        ),
        None => return Ok(()),
    };
    crate::thinkers::check_run_budget(&identities, &budget, why, args.allow_mixed_engines)
        .map_err(anyhow::Error::msg)
}

/// Refuses limits a worker would refuse in every job (`stera_proto::limits`'
/// bounds): such a run would hand out jobs that fail, ban its workers as
/// failing and idle. The think jobs' `--nodes`, `--depth`, `--time-ms`, the
/// games' `--play-nodes`, `--play-depth`, `--play-time-ms` and `--learn-nodes`.
pub(crate) fn check_job_limits(args: &CoordinatorArgs) -> Result<()> {
    let sets = [
        (
            Limits {
                nodes: args.nodes,
                depth: args.depth,
                time_ms: args.time_ms,
            },
            ["--nodes", "--depth", "--time-ms"],
        ),
        (
            Limits {
                nodes: args.play.play_nodes,
                depth: args.play.play_depth,
                time_ms: args.play.play_time_ms,
            },
            ["--play-nodes", "--play-depth", "--play-time-ms"],
        ),
        (
            Limits {
                nodes: args.learn.learn_nodes,
                depth: 0,
                time_ms: 0,
            },
            ["--learn-nodes", "", ""],
        ),
    ];
    for (limits, [nodes, depth, time]) in sets {
        if let Err(v) = stera_proto::limits::check_job_limits(&limits) {
            use stera_proto::limits::Field;
            let flag = match v.field {
                Field::JobNodes => nodes,
                Field::JobDepth => depth,
                _ => time,
            };
            anyhow::bail!(
                "{flag} is out of the protocol's bounds ({}): every worker would refuse these jobs",
                v.detail
            );
        }
    }
    Ok(())
}

/// Refuses local workers' engine flags that the workers would refuse (the
/// same checks as the worker's) or that nothing would use (no --local-workers),
/// and a USI engine without the coordinator's --nodes, --depth or --time-ms in
/// a run that thinks: the only limits its think jobs carry.
pub(crate) fn check_local_engine(args: &CoordinatorArgs) -> Result<()> {
    let engine = &args.local_engine.choice();
    if engine.is_default() {
        return Ok(());
    }
    if args.local_workers == 0 {
        anyhow::bail!(
            "--engine and its flags choose the --local-workers' engine, and no --local-workers \
             were asked; remote workers choose their own (`worker --engine ...`)"
        );
    }
    engine
        .check_flags()
        .map_err(|e| anyhow::anyhow!("bad local workers' engine flags: {e}"))?;
    if engine.kind() == stera_engine::choice::EngineKind::Usi
        && args.think_limit != Some(0)
        && args.nodes == 0
        && args.depth == 0
        && args.time_ms == 0
    {
        anyhow::bail!(
            "the --local-workers' USI engine needs --nodes, --depth or --time-ms: think jobs \
             carry the coordinator's limits, and without one a USI engine would search forever"
        );
    }
    Ok(())
}

/// What `--status-every-secs` (and the terminal, the log format, the limits) ask of
/// the status line.
pub(crate) fn status_settings(args: &CoordinatorArgs) -> status_line::StatusSettings {
    status_line::StatusSettings {
        every: Duration::from_secs(args.status_every_secs),
        // Local workers draw no status line and their records come through this
        // process's log writer, so the line stays one and whole with them too.
        tty: std::io::IsTerminal::is_terminal(&std::io::stderr())
            && args.log_format == stera_service::logging::LogFormat::Text,
        think_limit: args.think_limit,
        play: args.play.play_share > 0.0,
        games_target: args.play.games,
    }
}

/// The request of the end-of-run and periodic exports to `path`.
pub(crate) fn export_request(
    args: &CoordinatorArgs,
    path: &std::path::Path,
) -> stera_proto::v1::ExportRequest {
    args.export_choice
        .choice()
        .to_request(path.display().to_string())
}

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
        assert_eq!(args.selection.select, SelectKind::Alphabeta);
        assert_eq!(select_mode(&args).unwrap(), SelectMode::AlphaBeta);
        let args = parse(&["--select", "alphabeta"]).unwrap();
        assert_eq!(select_mode(&args).unwrap(), SelectMode::AlphaBeta);
    }

    #[test]
    fn softmax_with_temperature_and_seed() {
        let args = parse(&["--select", "softmax", "--select-temperature", "50"]).unwrap();
        assert_eq!(
            select_mode(&args).unwrap(),
            SelectMode::Softmax(stera_book::SoftmaxSelect {
                temperature: 50.0,
                seed: stera_book::DEFAULT_SELECT_SEED,
            })
        );
        let args = parse(&["--select", "softmax", "--select-seed", "9"]).unwrap();
        assert_eq!(
            select_mode(&args).unwrap(),
            SelectMode::Softmax(stera_book::SoftmaxSelect {
                temperature: DEFAULT_SELECT_TEMPERATURE,
                seed: 9,
            })
        );
    }

    #[test]
    fn nonsense_is_refused() {
        assert!(parse(&["--select", "mcts"]).is_err());
        let args = parse(&["--select-temperature", "50"]).unwrap();
        assert!(select_mode(&args).is_err(), "temperature without softmax");
        for t in ["-5", "NaN", "inf"] {
            let flag = format!("--select-temperature={t}");
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
            "--select-temperature",
            "--select-seed",
        ] {
            assert!(help.contains(text), "{text} missing from --help");
        }
        assert!(help.contains("principal variation") && help.contains("exp(value"));
    }
}
