//! Progress a person can see: on a terminal, one status line redrawn every second;
//! otherwise a summary log line (INFO, target [`TARGET`]) every
//! `--status-every-secs`, as lichess fishnet and the worker do, and a last one when
//! the run ends.
//!
//! The task asks the dispatcher for its status ([`DispatcherHandle::status`]) on each tick and
//! reads the positions thought in this run from the [`Progress`] watch; the line
//! itself is a pure function of a [`StatusSnapshot`] ([`line`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use stera_proto::v1::StatusReply;
use stera_rules::value::to_text;
use tokio::sync::{oneshot, watch};

use crate::dispatcher::Progress;
use crate::handle::DispatcherHandle;

/// The tracing target of the summary lines.
pub const TARGET: &str = "stera_coordinator::status";
/// How often the terminal line is redrawn.
pub const TTY_EVERY: Duration = Duration::from_secs(1);
/// Moves of the principal variation shown before `…`.
pub const PV_MOVES: usize = 8;
/// The positions-per-second rate is measured over about this long.
pub const RATE_WINDOW: Duration = Duration::from_secs(30);

/// How and what the status task reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatusSettings {
    /// Seconds between summary lines when not on a terminal; zero turns the
    /// status off altogether (terminal line included).
    pub every: Duration,
    /// Draw a live line on stderr (a terminal) instead of summary log lines.
    pub tty: bool,
    /// `--think-limit`.
    pub think_limit: Option<u64>,
    /// Whether games are played (then the line counts them).
    pub play: bool,
    /// `--play-games`, the games target of this run.
    pub games_target: Option<u64>,
}

/// Games counted in this run, and the target if there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Games {
    pub counted: u64,
    pub target: Option<u64>,
}

/// How far the run's learning games have come.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Learning {
    /// Games counted in this run, and `--learn-games`.
    pub counted: u64,
    pub target: u64,
    /// Games counted per second, and the seconds left at that rate.
    pub per_second: f64,
    pub left_secs: u64,
    /// Key positions settled, of how many.
    pub key_settled: u64,
    pub key_total: u64,
    /// Every key position settled: no new game starts.
    pub all_settled: bool,
    /// Games of this run per opponent: the store's number, the games.
    pub opponents: Vec<(u32, u64)>,
}

/// The book's principal variation from the first thought root (USI moves) and
/// its value from the root mover's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootPv {
    /// The root as given (`startpos`, `startpos moves ...`, `sfen ...`).
    pub root: String,
    pub moves: Vec<String>,
    pub value: i32,
}

/// Everything one status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusSnapshot {
    /// Positions thought in this run.
    pub thought: u64,
    pub think_limit: Option<u64>,
    /// Positions thought per second, recently.
    pub rate: f64,
    /// Positions in the book.
    pub nodes: u64,
    pub workers: usize,
    /// Job slots of the connected workers: each one's engines plus its prefetch.
    pub slots: u64,
    /// Leases outstanding (think, play and search jobs).
    pub in_flight: u64,
    /// `None` when no games are played.
    pub games: Option<Games>,
    /// `None` without learning games.
    pub learning: Option<Learning>,
    /// `None` until a root has been searched.
    pub pv: Option<RootPv>,
}

impl StatusSnapshot {
    /// The snapshot of a dispatcher status, with the run's `thought` and `rate`.
    #[must_use]
    pub fn new(reply: &StatusReply, thought: u64, rate: f64, settings: &StatusSettings) -> Self {
        Self {
            thought,
            think_limit: settings.think_limit,
            rate,
            nodes: reply.nodes,
            workers: reply.workers.len(),
            slots: reply.workers.iter().map(|w| u64::from(w.slots)).sum(),
            in_flight: reply.in_flight,
            games: settings.play.then(|| Games {
                counted: reply.games_black + reply.games_white + reply.games_draw,
                target: settings.games_target,
            }),
            learning: reply
                .learning
                .as_ref()
                .filter(|l| l.target > 0)
                .map(|l| Learning {
                    counted: l.games,
                    target: l.target,
                    per_second: l.games_per_second,
                    left_secs: l.left_secs,
                    key_settled: l.key_positions_settled,
                    key_total: l.key_positions,
                    all_settled: l.all_settled,
                    opponents: l.opponents.iter().map(|o| (o.number, o.games)).collect(),
                }),
            pv: reply.roots.first().map(|r| RootPv {
                root: r.root.clone(),
                moves: r.pv.clone(),
                value: r.value,
            }),
        }
    }
}

/// The status line: thought (against the limit), rate, ETA, learning games,
/// book, workers, jobs in flight, games, and the book's principal variation from
/// its first root, named.
#[must_use]
pub fn line(s: &StatusSnapshot) -> String {
    let mut parts = Vec::with_capacity(12);
    match s.think_limit {
        // A run that thinks nothing (games, learning, searches only).
        Some(0) => parts.push("thinking off (--think-limit 0)".to_owned()),
        Some(limit) => {
            let share = if limit == 0 {
                100.0
            } else {
                (s.thought as f64 / limit as f64 * 100.0).min(100.0)
            };
            parts.push(format!("thought {}/{limit} ({share:.1}%)", s.thought));
        }
        None => parts.push(format!("thought {}", s.thought)),
    }
    if s.think_limit != Some(0) {
        parts.push(format!("{:.1} pos/s", s.rate.max(0.0)));
    }
    if let Some(limit) = s.think_limit.filter(|l| *l > 0) {
        parts.push(match eta(s.thought, limit, s.rate) {
            Some(d) => format!("ETA {}", duration(d)),
            None => "ETA --".to_owned(),
        });
    }
    if let Some(l) = &s.learning {
        learning_parts(l, &mut parts);
    }
    parts.push(format!("book {}", s.nodes));
    parts.push(format!(
        "workers {} ({} job slot{})",
        s.workers,
        s.slots,
        if s.slots == 1 { "" } else { "s" }
    ));
    parts.push(format!("in flight {}", s.in_flight));
    if let Some(g) = s.games {
        parts.push(match g.target {
            Some(t) => format!("games {}/{t}", g.counted),
            None => format!("games {}", g.counted),
        });
    }
    if let Some(pv) = &s.pv {
        parts.push(
            format!(
                "pv ({}) {} {}",
                root_name(&pv.root),
                to_text(pv.value),
                moves(&pv.moves, PV_MOVES)
            )
            .trim_end()
            .to_owned(),
        );
    }
    parts.join(" | ")
}

/// The learning games' parts of the line: counted against the target, the
/// rate, the time left at that rate (or why no game starts any more), the key positions
/// settled, and the games per opponent by the store's numbers.
fn learning_parts(l: &Learning, parts: &mut Vec<String>) {
    let share = if l.target == 0 {
        100.0
    } else {
        (l.counted as f64 / l.target as f64 * 100.0).min(100.0)
    };
    parts.push(format!("learning {}/{} ({share:.1}%)", l.counted, l.target));
    parts.push(format!("{:.2} games/s", l.per_second.max(0.0)));
    parts.push(if l.all_settled {
        "every key position settled".to_owned()
    } else if l.counted >= l.target {
        "left 0s".to_owned()
    } else if l.counted == 0 {
        "left --".to_owned()
    } else {
        format!("left {}", duration(Duration::from_secs(l.left_secs)))
    });
    parts.push(format!("key positions {}/{}", l.key_settled, l.key_total));
    if !l.opponents.is_empty() {
        let each: Vec<String> = l
            .opponents
            .iter()
            .map(|(number, games)| format!("#{number} {games}"))
            .collect();
        parts.push(format!("by opponent {}", each.join(", ")));
    }
}

/// Time left to the think limit at `rate` positions per second: zero once it is
/// reached, `None` while nothing is being thought.
#[must_use]
pub fn eta(thought: u64, limit: u64, rate: f64) -> Option<Duration> {
    let left = limit.saturating_sub(thought);
    if left == 0 {
        return Some(Duration::ZERO);
    }
    if !(rate.is_finite() && rate > 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64((left as f64 / rate).ceil()).unwrap_or(Duration::MAX))
}

/// `42s`, `3m05s`, `2h03m`, `4d07h`; anything beyond 99 days is `>99d`.
#[must_use]
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3_600, s % 3_600 / 60),
        86_400..8_640_000 => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3_600),
        _ => ">99d".to_owned(),
    }
}

/// A root as the status line names it: as given, cut after `ROOT_NAME_CHARS`
/// characters (an SFEN root would take the whole line).
#[must_use]
pub fn root_name(root: &str) -> String {
    if root.chars().count() <= ROOT_NAME_CHARS {
        return root.to_owned();
    }
    let mut name: String = root.chars().take(ROOT_NAME_CHARS - 1).collect();
    name.push('…');
    name
}

/// The longest root name on the status line.
const ROOT_NAME_CHARS: usize = 32;

/// The first `max` moves, then `…` if there are more.
#[must_use]
pub fn moves(pv: &[String], max: usize) -> String {
    let mut text = pv
        .iter()
        .take(max)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    if pv.len() > max {
        text.push_str(" …");
    }
    text
}

/// The thought rate over the last [`RATE_WINDOW`] (or the last two samples, if
/// they are further apart).
#[derive(Debug, Clone)]
pub struct RecentRate {
    samples: VecDeque<(Instant, u64)>,
    window: Duration,
}

impl RecentRate {
    #[must_use]
    pub fn new(window: Duration) -> Self {
        Self {
            samples: VecDeque::new(),
            window,
        }
    }

    /// Records `thought` at `now` and forgets samples the window no longer needs
    /// (the oldest kept is the newest one at least a window old).
    pub fn push(&mut self, now: Instant, thought: u64) {
        self.samples.push_back((now, thought));
        while self
            .samples
            .get(1)
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) >= self.window)
        {
            self.samples.pop_front();
        }
    }

    /// Positions per second between the oldest and the newest sample (0 with
    /// fewer than two).
    #[must_use]
    pub fn per_second(&self) -> f64 {
        let (Some((t0, n0)), Some((t1, n1))) = (self.samples.front(), self.samples.back()) else {
            return 0.0;
        };
        let secs = t1.saturating_duration_since(*t0).as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            n1.saturating_sub(*n0) as f64 / secs
        }
    }
}

/// The running status task; [`StatusLine::stop`] ends it.
#[derive(Debug)]
pub struct StatusLine {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl StatusLine {
    /// Stops the task and waits for it: on a terminal the line is cleared, so
    /// later log lines start clean; otherwise a last summary is logged (unless the
    /// run's end already logged it).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Starts the status task (it does nothing when `settings.every` is zero). It also
/// ends by itself once the run is finished (clearing its line, or logging a last
/// summary) or the dispatcher is gone.
#[must_use]
pub fn spawn(
    dispatcher: DispatcherHandle,
    progress: watch::Receiver<Progress>,
    settings: StatusSettings,
) -> StatusLine {
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(report(dispatcher, progress, settings, stopped));
    StatusLine { stop, task }
}

async fn report(
    dispatcher: DispatcherHandle,
    mut progress: watch::Receiver<Progress>,
    settings: StatusSettings,
    mut stopped: oneshot::Receiver<()>,
) {
    if settings.every.is_zero() {
        return;
    }
    let every = if settings.tty {
        TTY_EVERY
    } else {
        settings.every
    };
    let mut rate = RecentRate::new(RATE_WINDOW.max(every));
    rate.push(Instant::now(), progress.borrow().thought);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut drawn = false;
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            _ = progress.wait_for(|p| p.finished) => break,
            _ = tick.tick() => {}
        }
        // The dispatcher may be busy (an export); a stop must not wait for it.
        let text = tokio::select! {
            _ = &mut stopped => break,
            t = status_text(&dispatcher, &progress, &mut rate, &settings) => t,
        };
        let Some(text) = text else {
            // The dispatcher is gone.
            break;
        };
        if settings.tty {
            // Cut to the terminal's width there; log records erase it and draw it
            // again below them (one lock for both).
            stera_service::terminal::draw(&text);
            drawn = true;
        } else {
            tracing::info!(target: TARGET, "{text}");
        }
    }
    if drawn {
        stera_service::terminal::clear();
    }
    if !settings.tty {
        // Where the run ended, for the log (bounded: the dispatcher may be busy).
        let last = tokio::time::timeout(
            FINAL_WAIT,
            status_text(&dispatcher, &progress, &mut rate, &settings),
        )
        .await;
        if let Ok(Some(text)) = last {
            tracing::info!(target: TARGET, "{text}");
        }
    }
}

/// How long the last summary waits for the dispatcher's answer.
const FINAL_WAIT: Duration = Duration::from_secs(2);

/// Asks the dispatcher for its status and makes the line (`None`: the dispatcher
/// is gone).
async fn status_text(
    dispatcher: &DispatcherHandle,
    progress: &watch::Receiver<Progress>,
    rate: &mut RecentRate,
    settings: &StatusSettings,
) -> Option<String> {
    let reply = dispatcher.status().await.ok()?;
    let thought = progress.borrow().thought;
    rate.push(Instant::now(), thought);
    Some(line(&StatusSnapshot::new(
        &reply,
        thought,
        rate.per_second(),
        settings,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_proto::v1::{RootLine, WorkerStatus};
    use stera_rules::value::MATE;

    fn pv(n: usize) -> Vec<String> {
        [
            "7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "6i7h", "4a3b", "2e2d", "2c2d",
        ]
        .iter()
        .take(n)
        .map(|m| (*m).to_owned())
        .collect()
    }

    fn snapshot() -> StatusSnapshot {
        StatusSnapshot {
            thought: 1_000,
            think_limit: Some(4_000),
            rate: 10.0,
            nodes: 5_678,
            workers: 2,
            slots: 8,
            in_flight: 7,
            games: None,
            learning: None,
            pv: Some(RootPv {
                root: "startpos".into(),
                moves: pv(10),
                value: 34,
            }),
        }
    }

    #[test]
    fn full_line() {
        assert_eq!(
            line(&snapshot()),
            "thought 1000/4000 (25.0%) | 10.0 pos/s | ETA 5m00s | book 5678 | workers 2 (8 job slots) \
             | in flight 7 | pv (startpos) +34 7g7f 3c3d 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b …"
        );
    }

    #[test]
    fn eta_math() {
        assert_eq!(eta(1_000, 4_000, 10.0), Some(Duration::from_secs(300)));
        // Rounded up: 1 left at 3/s is still a second away.
        assert_eq!(eta(39, 40, 3.0), Some(Duration::from_secs(1)));
        assert_eq!(eta(40, 40, 0.0), Some(Duration::ZERO));
        assert_eq!(eta(50, 40, 2.0), Some(Duration::ZERO));
        assert_eq!(eta(0, 40, 0.0), None);
        assert_eq!(eta(0, 40, f64::NAN), None);
        assert_eq!(eta(0, u64::MAX, 1e-300), Some(Duration::MAX));
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(duration(Duration::from_secs(2 * 3_600 + 180)), "2h03m");
        assert_eq!(
            duration(Duration::from_secs(4 * 86_400 + 7 * 3_600)),
            "4d07h"
        );
        assert_eq!(duration(Duration::MAX), ">99d");
    }

    #[test]
    fn pv_is_cut_after_eight_moves() {
        assert_eq!(
            moves(&pv(8), PV_MOVES),
            "7g7f 3c3d 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b"
        );
        assert_eq!(
            moves(&pv(9), PV_MOVES),
            "7g7f 3c3d 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b …"
        );
        assert_eq!(moves(&pv(2), PV_MOVES), "7g7f 3c3d");
        assert_eq!(moves(&[], PV_MOVES), "");
        let mut s = snapshot();
        s.pv = Some(RootPv {
            root: "startpos moves 7g7f".into(),
            moves: Vec::new(),
            value: -12,
        });
        assert!(
            line(&s).ends_with("| pv (startpos moves 7g7f) -12"),
            "{}",
            line(&s)
        );
        s.pv = Some(RootPv {
            root: "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2".into(),
            moves: vec!["3c3d".into()],
            value: 3,
        });
        assert!(
            line(&s).ends_with("| pv (sfen lnsgkgsnl/1r5b1/ppppppppp/…) +3 3c3d"),
            "{}",
            line(&s)
        );
        s.pv = None;
        assert!(!line(&s).contains("pv"), "{}", line(&s));
    }

    #[test]
    fn values_and_mates() {
        assert_eq!(to_text(34), "+34");
        assert_eq!(to_text(0), "0");
        assert_eq!(to_text(-12), "-12");
        assert_eq!(to_text(MATE - 7), "+M7");
        assert_eq!(to_text(-(MATE - 4)), "-M4");
    }

    #[test]
    fn no_limit_means_no_eta() {
        let mut s = snapshot();
        s.think_limit = None;
        let l = line(&s);
        assert!(
            l.starts_with("thought 1000 | 10.0 pos/s | book 5678"),
            "{l}"
        );
        assert!(!l.contains("ETA"), "{l}");
    }

    #[test]
    fn zero_rate_has_no_eta() {
        let mut s = snapshot();
        s.rate = 0.0;
        let l = line(&s);
        assert!(l.contains("| 0.0 pos/s | ETA -- |"), "{l}");
        s.thought = 4_000;
        assert!(line(&s).contains("(100.0%) | 0.0 pos/s | ETA 0s |"));
        s.think_limit = Some(0);
        s.thought = 0;
        assert!(
            line(&s).starts_with("thinking off (--think-limit 0) | book 5678"),
            "{}",
            line(&s)
        );
    }

    #[test]
    fn learning_games_when_learning() {
        let mut s = snapshot();
        s.think_limit = Some(0);
        s.learning = Some(Learning {
            counted: 270,
            target: 400,
            per_second: 2.345,
            left_secs: 56,
            key_settled: 3,
            key_total: 12,
            all_settled: false,
            opponents: vec![(1, 90), (3, 178)],
        });
        assert_eq!(
            line(&s),
            "thinking off (--think-limit 0) | learning 270/400 (67.5%) | 2.35 games/s | left 56s \
             | key positions 3/12 | by opponent #1 90, #3 178 | book 5678 | workers 2 (8 job slots) \
             | in flight 7 | pv (startpos) +34 7g7f 3c3d 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b …"
        );
        let l = s.learning.as_mut().unwrap();
        l.all_settled = true;
        assert!(
            line(&s).contains("| 2.35 games/s | every key position settled | key positions 3/12 |"),
            "{}",
            line(&s)
        );
        let l = s.learning.as_mut().unwrap();
        (l.all_settled, l.counted, l.per_second, l.opponents) = (false, 0, 0.0, Vec::new());
        assert!(
            line(&s).contains(
                "| learning 0/400 (0.0%) | 0.00 games/s | left -- | key positions 3/12 | book"
            ),
            "{}",
            line(&s)
        );
    }

    #[test]
    fn games_when_play_is_on() {
        let mut s = snapshot();
        s.games = Some(Games {
            counted: 12,
            target: Some(100),
        });
        assert!(line(&s).contains("| in flight 7 | games 12/100 | pv"));
        s.games = Some(Games {
            counted: 3,
            target: None,
        });
        assert!(line(&s).contains("| games 3 |"));
        s.workers = 1;
        s.slots = 1;
        assert!(line(&s).contains("| workers 1 (1 job slot) |"));
    }

    #[test]
    fn snapshot_of_a_status_reply() {
        let reply = StatusReply {
            nodes: 99,
            in_flight: 3,
            games_black: 1,
            games_white: 2,
            games_draw: 3,
            roots: vec![
                RootLine {
                    root: "startpos".into(),
                    pv: pv(3),
                    value: 5,
                },
                RootLine {
                    root: "sfen other".into(),
                    pv: pv(1),
                    value: -5,
                },
            ],
            workers: vec![
                WorkerStatus {
                    slots: 4,
                    ..WorkerStatus::default()
                },
                WorkerStatus {
                    slots: 2,
                    ..WorkerStatus::default()
                },
            ],
            ..StatusReply::default()
        };
        let settings = StatusSettings {
            every: Duration::from_secs(10),
            tty: false,
            think_limit: Some(40),
            play: true,
            games_target: None,
        };
        let s = StatusSnapshot::new(&reply, 20, 2.0, &settings);
        assert_eq!(
            line(&s),
            "thought 20/40 (50.0%) | 2.0 pos/s | ETA 10s | book 99 | workers 2 (6 job slots) \
             | in flight 3 | games 6 | pv (startpos) +5 7g7f 3c3d 2g2f"
        );
        let off = StatusSettings {
            play: false,
            ..settings
        };
        assert_eq!(StatusSnapshot::new(&reply, 20, 2.0, &off).games, None);
        assert_eq!(s.learning, None, "no learning games in the reply");
        let learning = StatusReply {
            learning: Some(stera_proto::v1::LearningStatus {
                games: 5,
                target: 40,
                games_per_second: 0.5,
                left_secs: 70,
                key_positions_settled: 1,
                key_positions: 4,
                opponents: vec![stera_proto::v1::LearningOpponent {
                    number: 2,
                    identity: "e at 60 nodes".into(),
                    games: 4,
                    games_stored: 9,
                }],
                ..Default::default()
            }),
            ..reply
        };
        let s = StatusSnapshot::new(&learning, 20, 2.0, &off);
        assert!(
            line(&s).contains(
                "| ETA 10s | learning 5/40 (12.5%) | 0.50 games/s | left 1m10s | key positions 1/4 \
                 | by opponent #2 4 | book 99 |"
            ),
            "{}",
            line(&s)
        );
    }

    #[test]
    fn recent_rate() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let mut r = RecentRate::new(Duration::from_secs(30));
        assert!(r.per_second().abs() < f64::EPSILON);
        r.push(s(0), 0);
        assert!(r.per_second().abs() < f64::EPSILON, "one sample");
        r.push(s(10), 100);
        assert!((r.per_second() - 10.0).abs() < 1e-9);
        // Slower lately: after the window only the recent samples count.
        r.push(s(40), 130);
        r.push(s(50), 140);
        r.push(s(70), 160);
        assert!((r.per_second() - 1.0).abs() < 1e-9, "{}", r.per_second());
        // Samples further apart than the window still give a rate.
        let mut r = RecentRate::new(Duration::from_secs(30));
        r.push(s(0), 0);
        r.push(s(60), 120);
        r.push(s(120), 180);
        assert!((r.per_second() - 1.0).abs() < 1e-9, "{}", r.per_second());
    }
}
