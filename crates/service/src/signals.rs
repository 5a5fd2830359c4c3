//! Stop signals: Ctrl-C and SIGTERM, read in two stages. The first asks a process
//! to finish what it holds and leave; the second to give it up and leave now (as
//! lichess fishnet does). An operator's `docker stop` or `systemctl stop` sends
//! SIGTERM, a person at a terminal presses Ctrl-C: both mean the same.

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;

/// What a process has been asked to do, in the order the signals ask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shutdown {
    Running,
    /// Finish the work in hand, report it, then leave.
    Finish,
    /// Give back the work in hand and leave now.
    Abort,
}

/// Ctrl-C and SIGTERM, one stream of "stop" requests.
///
/// SIGTERM is registered when this is made, not when it is first awaited: a
/// SIGTERM that comes right after start-up must reach the process's own handling
/// rather than kill it with the default action.
pub struct StopSignals {
    /// `None` where SIGTERM cannot be registered: then Ctrl-C alone stops.
    term: Option<Signal>,
}

impl StopSignals {
    /// Registers SIGTERM now; Ctrl-C is listened to while [`Self::next`] waits.
    #[must_use]
    pub fn register() -> Self {
        Self {
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Waits for the next SIGTERM or Ctrl-C.
    pub async fn next(&mut self) {
        match self.term.as_mut() {
            Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// Turns the first signal into [`Shutdown::Finish`] and the second into
/// [`Shutdown::Abort`] on `stage`, calling `on_stage` with each new stage before it
/// is published (so that the caller's log line, under its own target, comes
/// first). Returns after the abort.
pub async fn two_stage(
    mut signals: StopSignals,
    stage: watch::Sender<Shutdown>,
    mut on_stage: impl FnMut(Shutdown),
) {
    loop {
        signals.next().await;
        let next = if *stage.borrow() == Shutdown::Running {
            Shutdown::Finish
        } else {
            Shutdown::Abort
        };
        on_stage(next);
        // Nobody listening any more is no reason to stop reading signals: the
        // default action (death) must not come back for the second one.
        let _ = stage.send(next);
        if next == Shutdown::Abort {
            return;
        }
    }
}
