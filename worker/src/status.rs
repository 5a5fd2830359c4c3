//! What the worker has done, and how it tells a person: a one-line status on a
//! terminal, a summary line every couple of minutes otherwise.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::Shutdown;

/// Counters shared by the worker's tasks.
#[derive(Debug)]
pub struct Stats {
    pub started: Instant,
    pub connected: AtomicBool,
    pub busy: AtomicU64,
    pub evaluated: AtomicU64,
    /// Moves searched for games the coordinator plays (search jobs: its
    /// self-play and learning games, `book-tools match --coordinator`), whose
    /// games this worker never sees whole.
    pub game_moves: AtomicU64,
    pub acked: AtomicU64,
    pub rejected: AtomicU64,
    pub errors: AtomicU64,
    pub reconnects: AtomicU64,
    /// Engine processes restarted after a crash or a time-out.
    pub restarts: AtomicU64,
    /// Time the engines worked, in milliseconds: evaluations and searches.
    pub engine_ms: AtomicU64,
    /// Evaluation slots (engines).
    pub slots: AtomicU64,
    /// When the first stop request came (the stop grace counts from there, across
    /// reconnections).
    stop_requested: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            connected: AtomicBool::new(false),
            busy: AtomicU64::new(0),
            evaluated: AtomicU64::new(0),
            game_moves: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            engine_ms: AtomicU64::new(0),
            slots: AtomicU64::new(1),
            stop_requested: std::sync::Mutex::new(None),
        }
    }
}

impl Stats {
    /// When the first stop request came; the first call marks it as now.
    pub fn stop_requested(&self) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        match self.stop_requested.lock() {
            Ok(mut at) => *at.get_or_insert(now),
            Err(_) => now,
        }
    }

    /// The share of slot time spent inside the engines since start (0..=1): what
    /// the worker is for; the rest is start-up, network and waiting for jobs.
    #[must_use]
    pub fn engine_share(&self) -> f64 {
        let slot_ms = self.started.elapsed().as_secs_f64()
            * 1000.0
            * self.slots.load(Ordering::Relaxed).max(1) as f64;
        if slot_ms <= 0.0 {
            0.0
        } else {
            (self.engine_ms.load(Ordering::Relaxed) as f64 / slot_ms).min(1.0)
        }
    }

    /// One line: connection, busy slots, totals and rate.
    #[must_use]
    pub fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let evaluated = self.evaluated.load(Ordering::Relaxed);
        format!(
            "{} | jobs {} | evaluated {} ({:.2}/s) | game moves {} | engine {:.1}% | acked {} | rejected {} | errors {} | reconnects {}",
            if self.connected.load(Ordering::Relaxed) {
                "connected"
            } else {
                "disconnected"
            },
            self.busy.load(Ordering::Relaxed),
            evaluated,
            evaluated as f64 / secs,
            self.game_moves.load(Ordering::Relaxed),
            self.engine_share() * 100.0,
            self.acked.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
            self.reconnects.load(Ordering::Relaxed),
        )
    }
}

/// How the worker reports its progress (`--status-every-secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Seconds between summary lines when not drawing on a terminal; zero turns
    /// the status off altogether (terminal line included).
    pub every: Duration,
    /// Draw a live line on a terminal (stderr is one, and logs are text).
    pub tty: bool,
}

/// Reports until the task is aborted.
pub async fn report(stats: Arc<Stats>, settings: Settings, _shutdown: watch::Receiver<Shutdown>) {
    if settings.every.is_zero() {
        return;
    }
    let every = if settings.tty {
        Duration::from_secs(1)
    } else {
        settings.every
    };
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        if settings.tty {
            stera_service::terminal::draw(&stats.line());
        } else {
            tracing::info!(status = %stats.line(), "summary");
        }
    }
}

/// The last word before exit (the status line, if one was drawn, makes way).
pub fn final_line(stats: &Stats) {
    stera_service::terminal::clear();
    tracing::info!(status = %stats.line(), "worker stopped");
}
