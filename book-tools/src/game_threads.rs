//! Games on threads, each thread with its own two engines (one per side, each
//! started from its side's choice), finished games handed to the calling thread
//! as they end: what `match` and `learn` share.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use anyhow::{Context, Result};
use stera_engine::Player;

/// Starts one engine for a game thread.
pub type StartEngine<'a> = dyn Fn() -> Result<Box<dyn Player>> + Sync + 'a;

/// Plays game `index` with a thread's two engines (the side under test first).
pub type PlayOne<'a, T> = dyn Fn(usize, &mut dyn Player, &mut dyn Player) -> Result<T> + Sync + 'a;

/// Plays games `0..games` on `threads` threads, both sides' engines started
/// with `start`: [`run_sides`] with one engine for both sides.
///
/// # Errors
/// As [`run_sides`].
pub fn run<T: Send>(
    threads: usize,
    games: usize,
    start: &StartEngine<'_>,
    play: &PlayOne<'_, T>,
    consume: impl FnMut(T) -> Result<bool>,
) -> Result<()> {
    run_sides(threads, games, [start, start], play, consume)
}

/// Plays games `0..games` on `threads` threads (each starts the side under
/// test's engine with `start[0]` and the other side's with `start[1]`, and
/// plays its games with `play`) and gives each finished game to `consume` on
/// this thread; `consume` returning `true` starts no more games (those in
/// flight still end and are consumed). Stops at the first error of a thread or
/// of `consume`, and returns it.
///
/// # Errors
/// The first error of an engine start, a game or `consume`.
pub fn run_sides<T: Send>(
    threads: usize,
    games: usize,
    start: [&StartEngine<'_>; 2],
    play: &PlayOne<'_, T>,
    mut consume: impl FnMut(T) -> Result<bool>,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<Result<T>>();
    let mut failure = None;
    thread::scope(|scope| {
        for t in 0..threads.max(1).min(games) {
            let sender = sender.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let outcome = (|| -> Result<()> {
                    let mut own =
                        start[0]().context("starting the engine of the side under test")?;
                    let mut other = start[1]().context("starting the opponent's engine")?;
                    loop {
                        if stop.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= games {
                            return Ok(());
                        }
                        let game = play(index, own.as_mut(), other.as_mut())?;
                        if sender.send(Ok(game)).is_err() {
                            return Ok(());
                        }
                    }
                })();
                if let Err(e) = outcome {
                    stop.store(true, Ordering::Relaxed);
                    let _ = sender.send(Err(e.context(format!("game thread {t}"))));
                }
            });
        }
        drop(sender);
        for message in receiver {
            match message.and_then(&mut consume) {
                Ok(false) => {}
                Ok(true) => stop.store(true, Ordering::Relaxed),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                }
            }
        }
    });
    failure.map_or(Ok(()), Err)
}

/// The help of `--node-jitter`, one text for `match` and `learn`.
pub const NODE_JITTER_HELP: &str = "Jitter each engine move's node limit by up to this share \
     (0.5 = ±50 %), drawn from the games' seed, so that a deterministic engine does not \
     replay the same game (0: every move at the node limit). Only with a node limit. \
     Default: 0.5 with a node limit (the least share measured at which openings used 3-4 \
     times still gave 95 % distinct games; the coordinator's --learn-node-jitter), else 0";

/// Games per second since `started` and the time left to `total` at that
/// rate: `1.25 games/s, 3 min 05 s left`.
#[must_use]
pub fn speed_text(started: std::time::Instant, done: u64, total: u64) -> String {
    let secs = started.elapsed().as_secs_f64();
    if secs <= 0.0 || done == 0 {
        return "starting".to_owned();
    }
    let rate = done as f64 / secs;
    let left = total.saturating_sub(done) as f64 / rate;
    format!("{rate:.2} games/s, {} left", duration_text(left))
}

/// `secs` as `1 h 02 min`, `3 min 05 s` or `42 s`.
fn duration_text(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, min, sec) => format!("{min} min {sec:02} s"),
        (h, min, _) => format!("{h} h {min:02} min"),
    }
}

/// Refuses a node jitter outside [0, 1), or one above 0 without a node limit
/// to jitter, naming `flag`.
///
/// # Errors
/// The flag, its value and why.
pub fn check_node_jitter(
    flag: &str,
    jitter: Option<f64>,
    limits: &stera_engine::Limits,
) -> anyhow::Result<()> {
    let Some(j) = jitter else { return Ok(()) };
    if !(0.0..1.0).contains(&j) {
        anyhow::bail!("{flag} must lie in [0, 1), not {j}");
    }
    if j > 0.0 && limits.nodes.is_none() {
        anyhow::bail!("{flag} needs a node limit (it jitters the node limit)");
    }
    Ok(())
}

/// `jitter` as given, else the default: [`stera_games::play::DEFAULT_NODE_JITTER`] with a node
/// limit, 0 without one.
#[must_use]
pub fn node_jitter_or_default(jitter: Option<f64>, limits: &stera_engine::Limits) -> f64 {
    jitter.unwrap_or(if limits.nodes.is_some() {
        stera_games::play::DEFAULT_NODE_JITTER
    } else {
        0.0
    })
}

/// A bar of `total` games with a message on a terminal; `None` otherwise (the
/// caller prints summary lines instead).
#[must_use]
pub fn games_bar(total: usize) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            // The bar's width is BAR_COLUMNS.
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

/// Columns of the games bar before its message: `{bar:30} {pos}/{len} `.
const BAR_COLUMNS: usize = 30;

/// Shows `line` on the bar, or prints it as a summary line when `due`. On the bar
/// the line is cut to what the terminal has left beside the bar (read at each
/// game: a window may be resized), whole fields first: a wrapped bar would leave
/// a copy of itself on the screen at each redraw. A summary line is whole.
pub fn show_progress(
    bar: Option<&indicatif::ProgressBar>,
    line: String,
    due: bool,
    print: impl FnOnce(&str),
) {
    match bar {
        Some(bar) => {
            bar.inc(1);
            let message = match stera_service::terminal::columns() {
                Some(columns) => {
                    let counts = format!("{}/{}", bar.position(), bar.length().unwrap_or(0));
                    let beside = BAR_COLUMNS + 1 + counts.len() + 1;
                    stera_service::terminal::fit(&line, columns.saturating_sub(beside))
                }
                None => line,
            };
            bar.set_message(message);
        }
        None if due => print(&line),
        None => {}
    }
}

/// `--prior-games`: a finite number of games, 0 or more.
///
/// # Errors
/// Not a number, negative or not finite.
pub fn parse_prior_games(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if stera_book::results::prior_games_valid(v) => Ok(v),
        _ => Err(format!("must be a finite number >= 0, not `{text}`")),
    }
}
