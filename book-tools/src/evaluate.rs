//! `book-tools evaluate`: every legal move's value from the built-in engine or an
//! external USI engine, as the worker would compute it.

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use stera_engine::usi::{GoMode, ScoreConversion, UsiConfig, UsiEvaluator};
use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
use stera_rules::Position;

/// How often a non-interactive run reports that it is still searching.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EngineKind {
    /// The built-in alpha-beta engine (nothing to install).
    Builtin,
    /// An external USI engine given by --engine-cmd.
    Usi,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum GoModeArg {
    /// Byoyomi only for GPS Shogi (recognised by its `id name`), anything otherwise.
    Auto,
    /// `go depth`, `go nodes` and `go ... byoyomi` as the limits ask.
    Any,
    /// Only `go btime 0 wtime 0 byoyomi <ms>`.
    ByoyomiOnly,
}

#[derive(clap::Args)]
pub struct Args {
    /// `startpos`, an SFEN (with or without a leading `sfen `, ply optional), or a
    /// position command such as `startpos moves 7g7f 3c3d`.
    position: String,
    /// Which evaluator to run.
    #[arg(long, value_enum, default_value = "builtin")]
    engine: EngineKind,
    /// The USI engine's command line: the program, then its arguments, separated by
    /// spaces (for example `/usr/games/fairy-stockfish`). Required with `--engine usi`.
    #[arg(long, value_name = "CMD")]
    engine_cmd: Option<String>,
    /// A USI option as `Name=Value`, sent with `setoption` after the handshake
    /// (repeatable; e.g. `UCI_Variant=shogi` for Fairy-Stockfish, `BookDepth=0` for
    /// gpsusi, `BookFile=no_book` for YaneuraOu).
    #[arg(long, value_name = "NAME=VALUE")]
    engine_option: Vec<String>,
    /// Node limit (`go nodes N`; the built-in engine's budget for the whole position).
    #[arg(long, value_name = "N")]
    nodes: Option<u64>,
    /// Depth limit (`go depth D`; child searches of moves a USI engine did not report
    /// get D-1).
    #[arg(long, value_name = "D")]
    depth: Option<u32>,
    /// Time limit in milliseconds: `go btime 0 wtime 0 byoyomi MS` for each USI
    /// search, a budget for the whole position for the built-in engine.
    #[arg(long, value_name = "MS")]
    byoyomi: Option<u64>,
    /// Which `go` limits the USI engine understands.
    #[arg(long, value_enum, default_value = "auto")]
    go_mode: GoModeArg,
    /// Seconds one USI search may run beyond its byoyomi before the engine is killed.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    timeout_secs: u64,
    /// The USI engine prints win rates scaled by SCALE in `score cp` (e.g. 10000);
    /// they are converted with cp = -K ln(1/p - 1).
    #[arg(long, value_name = "SCALE")]
    cp_is_win_rate: Option<f64>,
    /// K in the win-rate conversion cp = -K ln(1/p - 1), also used for
    /// `score winrate` output.
    #[arg(long, value_name = "K", default_value_t = stera_engine::usi::DEFAULT_WIN_RATE_COEFFICIENT)]
    win_rate_coefficient: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let position = Position::from_position_command(&args.position)
        .with_context(|| format!("cannot read position `{}`", args.position))?;
    let limits = Limits {
        nodes: args.nodes,
        depth: args.depth,
        time: args.byoyomi.map(Duration::from_millis),
    };
    let mut evaluator: Box<dyn Evaluator> = match args.engine {
        EngineKind::Builtin => {
            if args.engine_cmd.is_some() || !args.engine_option.is_empty() {
                bail!("--engine-cmd and --engine-option need --engine usi");
            }
            Box::new(BuiltinEvaluator::new())
        }
        EngineKind::Usi => Box::new(start_usi(args)?),
    };
    eprintln!("engine: {}", evaluator.identity());
    let evaluation = with_progress(|| evaluator.evaluate(&position, &limits))
        .with_context(|| format!("evaluating `{}`", position.to_sfen()))?;
    let mut out = std::io::stdout().lock();
    for m in &evaluation.moves {
        writeln!(out, "{} {} {}", m.mv, m.value, m.depth)?;
    }
    writeln!(out, "moves {}", evaluation.moves.len())?;
    out.flush()?;
    eprintln!(
        "nodes {}, time {:.3} s",
        evaluation.nodes,
        evaluation.elapsed.as_secs_f64()
    );
    Ok(())
}

fn start_usi(args: &Args) -> Result<UsiEvaluator> {
    let Some(command) = args.engine_cmd.as_deref() else {
        bail!("--engine usi needs --engine-cmd <CMD>");
    };
    let mut words = command.split_whitespace();
    let Some(program) = words.next() else {
        bail!("--engine-cmd is empty");
    };
    let mut config = UsiConfig::new(program);
    config.args = words.map(str::to_owned).collect();
    for text in &args.engine_option {
        let (name, value) = UsiConfig::parse_option(text).map_err(anyhow::Error::msg)?;
        config.options.push((name, value));
    }
    config.go_mode = match args.go_mode {
        GoModeArg::Auto => GoMode::Auto,
        GoModeArg::Any => GoMode::Any,
        GoModeArg::ByoyomiOnly => GoMode::ByoyomiOnly,
    };
    config.search_timeout = Duration::from_secs(args.timeout_secs);
    if let Some(scale) = args.cp_is_win_rate
        && !(scale.is_finite() && scale > 0.0)
    {
        bail!("--cp-is-win-rate must be a positive number, not {scale}");
    }
    if !(args.win_rate_coefficient.is_finite() && args.win_rate_coefficient > 0.0) {
        bail!(
            "--win-rate-coefficient must be a positive number, not {}",
            args.win_rate_coefficient
        );
    }
    config.scores = ScoreConversion {
        cp_is_win_rate: args.cp_is_win_rate,
        win_rate_coefficient: args.win_rate_coefficient,
    };
    UsiEvaluator::new(config).with_context(|| format!("cannot start USI engine `{command}`"))
}

/// Runs `work`, telling a watching user that the search goes on: a spinner on a
/// terminal, a log line every [`PROGRESS_INTERVAL`] otherwise.
fn with_progress<T>(work: impl FnOnce() -> T) -> T {
    if std::io::stderr().is_terminal() {
        let spinner = indicatif::ProgressBar::new_spinner().with_message("evaluating");
        spinner.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        spinner.enable_steady_tick(Duration::from_millis(120));
        let result = work();
        spinner.finish_and_clear();
        return result;
    }
    let (done, finished) = mpsc::channel::<()>();
    let start = Instant::now();
    let reporter = thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(PROGRESS_INTERVAL) {
            eprintln!("evaluating... {:.0} s", start.elapsed().as_secs_f64());
        }
    });
    let result = work();
    drop(done);
    let _ = reporter.join();
    result
}
