//! A USI front end for the built-in engine.
//!
//! Commands: `usi`, `isready`, `setoption` (`Hash`, `MultiPV`, `EnteringKingRule`,
//! `EvalFile` and `FV_SCALE` for NNUE evaluation; the file is loaded at `isready`),
//! `usinewgame`, `position`, `go` (`depth`, `nodes`, `movetime`, `byoyomi`,
//! `btime`/`wtime`, `binc`/`winc`, `infinite`, `ponder`), `stop`, `ponderhit`,
//! `gameover`, `quit`. The search runs in its own thread so `stop` and `isready`
//! are answered while it thinks.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use stera_rules::Position;
use stera_rules::backend::types::{Color as BColor, EnteringKingRule, MOVE_NONE};
use stera_rules::value::{MATE, MATE_IN_MAX_PLY};

use super::search::{Iteration, SearchLimits, Searcher};
use super::tt::{DEFAULT_HASH_MB, TranspositionTable};
use super::{ENGINE_NAME, root_moves};
use crate::choice::MAX_FV_SCALE;
use crate::line::{LineRead, read_bounded_line};
use crate::nnue::{self, DEFAULT_FV_SCALE, NnueConfig};

/// The longest command line read: 1 MiB, far above a `position` command with
/// `MAX_PLY` moves (some 60 KB). A longer line ends the session with an error.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;
/// Lines in a row that are no USI command (unknown, or not text: a NUL or
/// another control character, bytes that are not UTF-8) after which a session
/// ends with an error: its input is not a GUI speaking USI. A GUI's mistakes
/// come one at a time, between commands that reset the count.
pub const MAX_BAD_LINES: usize = 100;
/// Largest accepted `Hash` in MiB.
const MAX_HASH_MB: usize = 65_536;
/// Largest accepted `MultiPV` (what YaneuraOu accepts; more than any position has moves).
const MAX_MULTIPV: usize = 600;
/// Stack for the search thread (the search keeps its buffers on the heap; this is
/// a generous margin for the recursion itself).
const SEARCH_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Runs a USI session until `quit` or the end of `input`.
///
/// Malformed commands are answered with `info string` lines and otherwise
/// ignored, as GUIs expect (bytes that are not UTF-8 are replaced); the session
/// ends because of bad input only for a line longer than [`MAX_COMMAND_BYTES`],
/// after which no command can be found (endless input such as `/dev/zero`), or
/// after [`MAX_BAD_LINES`] lines in a row that are no USI command (binary input
/// such as `/dev/urandom`, which was echoed back for ever).
///
/// ```
/// let script = "usi\nisready\nposition startpos\ngo depth 2\nquit\n";
/// let mut out = Vec::new();
/// stera_engine::builtin::run_usi(script.as_bytes(), &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("usiok") && text.contains("readyok") && text.contains("bestmove "));
/// ```
///
/// # Errors
/// Reading `input` or writing `output` failed, a line of `input` is longer
/// than [`MAX_COMMAND_BYTES`], or [`MAX_BAD_LINES`] lines in a row are no
/// command.
pub fn run_usi<R: BufRead, W: Write + Send>(input: R, output: W) -> io::Result<()> {
    run_usi_with(input, output, None)
}

/// Runs a USI session as [`run_usi`] does, evaluating with `nnue` from the start
/// (e.g. a network given on the command line); `setoption name EvalFile` can still
/// replace it.
///
/// # Errors
/// Reading `input` or writing `output` failed.
pub fn run_usi_with<R: BufRead, W: Write + Send>(
    input: R,
    output: W,
    nnue: Option<NnueConfig>,
) -> io::Result<()> {
    let out = Mutex::new(output);
    std::thread::scope(|scope| {
        let mut session = Session::new(&out);
        if let Some(config) = nnue {
            session.fv_scale = config.fv_scale;
            session.nnue = Some(config);
        }
        let result = session.read_commands(input, scope);
        let finished = session.finish_search();
        result.and(finished)
    })
}

/// One USI session's state.
struct Session<'s, W: Write + Send> {
    out: &'s Mutex<W>,
    hash_mb: usize,
    multipv: usize,
    entering_king_rule: EnteringKingRule,
    /// The table; `None` while a search thread owns it.
    tt: Option<TranspositionTable>,
    position: Option<Position>,
    running: Option<Running<'s>>,
    /// The network in use (`None`: hand-crafted evaluation).
    nnue: Option<NnueConfig>,
    /// An `EvalFile` set but not loaded yet (`Some(None)`: back to the hand-crafted
    /// evaluation); loaded at the next `isready` or `go`.
    pending_eval_file: Option<Option<PathBuf>>,
    fv_scale: i32,
}

struct Running<'s> {
    stop: Arc<AtomicBool>,
    handle: ScopedJoinHandle<'s, (TranspositionTable, io::Result<()>)>,
}

/// Parsed `go` parameters.
#[derive(Debug, Default, Clone, Copy)]
struct Go {
    depth: Option<u32>,
    nodes: Option<u64>,
    movetime: Option<u64>,
    byoyomi: Option<u64>,
    btime: Option<u64>,
    wtime: Option<u64>,
    binc: Option<u64>,
    winc: Option<u64>,
    infinite: bool,
}

fn write_line<W: Write>(out: &Mutex<W>, line: &str) -> io::Result<()> {
    let mut w = out
        .lock()
        .map_err(|_| io::Error::other("USI output lock poisoned"))?;
    writeln!(w, "{line}")?;
    w.flush()
}

impl<'s, W: Write + Send> Session<'s, W> {
    fn new(out: &'s Mutex<W>) -> Self {
        Self {
            out,
            hash_mb: DEFAULT_HASH_MB,
            multipv: 1,
            entering_king_rule: EnteringKingRule::None,
            tt: None,
            position: Some(Position::startpos()),
            running: None,
            nnue: None,
            pending_eval_file: None,
            fv_scale: DEFAULT_FV_SCALE,
        }
    }

    fn say(&self, line: &str) -> io::Result<()> {
        write_line(self.out, line)
    }

    fn read_commands<'e, R: BufRead>(
        &mut self,
        input: R,
        scope: &'s Scope<'s, 'e>,
    ) -> io::Result<()> {
        let mut input = input;
        let mut bad_in_a_row = 0usize;
        loop {
            let line = match read_bounded_line(&mut input, MAX_COMMAND_BYTES)? {
                LineRead::Line(line) => line,
                LineRead::End => break,
                // Where the next command starts is unknown; the input is not USI.
                LineRead::TooLong(start) => {
                    let reason = format!(
                        "a USI command longer than {MAX_COMMAND_BYTES} bytes (MAX_COMMAND_BYTES): `{start}`"
                    );
                    let _ = self.say(&format!("info string error: {reason}"));
                    return Err(io::Error::new(io::ErrorKind::InvalidData, reason));
                }
            };
            let line = line.trim();
            let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            if line.is_empty() {
                continue;
            }
            let known = matches!(
                command,
                "usi"
                    | "isready"
                    | "setoption"
                    | "usinewgame"
                    | "position"
                    | "go"
                    | "stop"
                    | "gameover"
                    | "ponderhit"
                    | "quit"
            );
            let text = !line
                .chars()
                .any(|c| c == char::REPLACEMENT_CHARACTER || (c.is_control() && c != '\t'));
            if known && text {
                bad_in_a_row = 0;
            } else {
                bad_in_a_row += 1;
                let quoted = stera_rules::excerpt(&line.escape_debug().to_string());
                if bad_in_a_row >= MAX_BAD_LINES {
                    let reason = format!(
                        "{MAX_BAD_LINES} lines in a row that are no USI command (MAX_BAD_LINES), the last `{quoted}`: the input is not USI"
                    );
                    let _ = self.say(&format!("info string error: {reason}"));
                    return Err(io::Error::new(io::ErrorKind::InvalidData, reason));
                }
                if !text {
                    // Not text: no command is read from it, whatever it starts with.
                    self.say(&format!("info string not a USI command: `{quoted}`"))?;
                    continue;
                }
            }
            match command {
                "usi" => self.usi()?,
                "isready" => {
                    // A running search keeps its evaluation; a new file is loaded
                    // now when idle, else at the next `go`.
                    if self.running.is_none() {
                        self.load_pending_eval_file()?;
                    }
                    self.table();
                    self.say("readyok")?;
                }
                "setoption" => self.set_option(rest)?,
                "usinewgame" => self.finish_search()?,
                "position" => {
                    self.finish_search()?;
                    match Position::from_position_command(rest) {
                        Ok(p) => self.position = Some(p),
                        Err(e) => {
                            self.position = None;
                            self.say(&format!("info string error: {e}"))?;
                        }
                    }
                }
                "go" => {
                    self.finish_search()?;
                    self.go(rest, scope)?;
                }
                "stop" | "gameover" => self.finish_search()?,
                // Pondering is not advertised; should a GUI ponder anyway, answer at
                // once on `ponderhit` rather than run its clock down.
                "ponderhit" => {
                    if let Some(running) = &self.running {
                        running.stop.store(true, Ordering::Relaxed);
                    }
                }
                "quit" => return Ok(()),
                other => self.say(&format!(
                    "info string unknown command `{}`",
                    stera_rules::excerpt(&other.escape_debug().to_string())
                ))?,
            }
        }
        Ok(())
    }

    fn usi(&self) -> io::Result<()> {
        self.say(&format!(
            "id name {ENGINE_NAME} {}",
            env!("CARGO_PKG_VERSION")
        ))?;
        self.say("id author the stera authors")?;
        self.say(&format!(
            "option name Hash type spin default {DEFAULT_HASH_MB} min 1 max {MAX_HASH_MB}"
        ))?;
        self.say(&format!(
            "option name MultiPV type spin default 1 min 1 max {MAX_MULTIPV}"
        ))?;
        self.say(
            "option name EnteringKingRule type combo default NoEnteringKing \
             var NoEnteringKing var CSARule24 var CSARule27 var TryRule",
        )?;
        self.say("option name EvalFile type string default <empty>")?;
        self.say(&format!(
            "option name FV_SCALE type spin default {DEFAULT_FV_SCALE} min 1 max {MAX_FV_SCALE}"
        ))?;
        self.say("usiok")
    }

    fn table(&mut self) -> &mut TranspositionTable {
        let mb = self.hash_mb;
        self.tt.get_or_insert_with(|| TranspositionTable::new(mb))
    }

    fn set_option(&mut self, rest: &str) -> io::Result<()> {
        let Some(body) = rest.strip_prefix("name ") else {
            return self.say("info string error: expected `setoption name <id> [value <x>]`");
        };
        let (name, value) = match body.split_once(" value ") {
            Some((n, v)) => (n.trim(), v.trim()),
            None => (body.trim(), ""),
        };
        match name.to_ascii_lowercase().as_str() {
            "hash" | "usi_hash" => match value.parse::<usize>() {
                Ok(mb) if (1..=MAX_HASH_MB).contains(&mb) => {
                    self.finish_search()?;
                    if mb != self.hash_mb {
                        self.hash_mb = mb;
                        self.tt = None;
                    }
                    Ok(())
                }
                _ => self.say(&format!(
                    "info string error: Hash must be 1..={MAX_HASH_MB} MiB, got `{value}`"
                )),
            },
            "multipv" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_MULTIPV).contains(&n) => {
                    self.multipv = n;
                    Ok(())
                }
                _ => self.say(&format!(
                    "info string error: MultiPV must be 1..={MAX_MULTIPV}, got `{value}`"
                )),
            },
            "enteringkingrule" => {
                let rule = match value {
                    "NoEnteringKing" => EnteringKingRule::None,
                    "CSARule24" => EnteringKingRule::Point24,
                    "CSARule27" => EnteringKingRule::Point27,
                    "TryRule" => EnteringKingRule::TryRule,
                    _ => {
                        return self.say(&format!(
                            "info string error: unknown EnteringKingRule `{value}`"
                        ));
                    }
                };
                self.entering_king_rule = rule;
                Ok(())
            }
            "evalfile" => {
                let path = match value {
                    "" | "<empty>" => None,
                    path => Some(PathBuf::from(path)),
                };
                self.pending_eval_file = Some(path);
                Ok(())
            }
            "fv_scale" => match value.parse::<i32>() {
                Ok(n) if (1..=MAX_FV_SCALE).contains(&n) => {
                    self.finish_search()?;
                    self.fv_scale = n;
                    if let Some(config) = &mut self.nnue {
                        config.fv_scale = n;
                    }
                    Ok(())
                }
                _ => self.say(&format!(
                    "info string error: FV_SCALE must be 1..={MAX_FV_SCALE}, got `{value}`"
                )),
            },
            // GUIs send their own options (USI_Ponder, ...); ignoring them is the norm.
            _ => Ok(()),
        }
    }

    /// Loads an `EvalFile` given since the last load. A file that cannot be used
    /// is reported and leaves the hand-crafted evaluation in place (so a typo
    /// never goes unnoticed, yet the session goes on as GUIs expect).
    fn load_pending_eval_file(&mut self) -> io::Result<()> {
        let Some(path) = self.pending_eval_file.take() else {
            return Ok(());
        };
        let Some(path) = path else {
            self.nnue = None;
            return self.say("info string evaluation: hand-crafted");
        };
        match nnue::load_shared(&path) {
            Ok(network) => {
                let line = format!("info string evaluation: nnue {}", network.description());
                self.nnue = Some(NnueConfig {
                    network,
                    fv_scale: self.fv_scale,
                });
                self.say(&line)
            }
            Err(e) => {
                self.nnue = None;
                self.say(&format!(
                    "info string error: {e}; using the hand-crafted evaluation"
                ))
            }
        }
    }

    fn go<'e>(&mut self, rest: &str, scope: &'s Scope<'s, 'e>) -> io::Result<()> {
        self.load_pending_eval_file()?;
        let go = match parse_go(rest) {
            Ok(go) => go,
            Err(e) => {
                self.say(&format!("info string error: {e}"))?;
                return self.say("bestmove resign");
            }
        };
        let Some(position) = self.position.clone() else {
            self.say("info string error: no valid position; send `position` first")?;
            return self.say("bestmove resign");
        };
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let limits = SearchLimits {
            nodes: go.nodes,
            depth: go.depth,
            deadline: time_budget(&go, position.backend().turn()).map(|d| started + d),
            stop: Some(Arc::clone(&stop)),
        };
        let multipv = self.multipv;
        let rule = self.entering_king_rule;
        let mb = self.hash_mb;
        let tt = self
            .tt
            .take()
            .unwrap_or_else(|| TranspositionTable::new(mb));
        let out = self.out;
        let thread_stop = Arc::clone(&stop);
        let nnue = self.nnue.clone();
        let handle = std::thread::Builder::new()
            .name("usi-search".to_owned())
            .stack_size(SEARCH_STACK_BYTES)
            .spawn_scoped(scope, move || {
                let mut tt = tt;
                let result = think(
                    out,
                    &position,
                    &mut tt,
                    limits,
                    multipv,
                    rule,
                    go.infinite,
                    &thread_stop,
                    nnue.as_ref(),
                );
                (tt, result)
            })?;
        self.running = Some(Running { stop, handle });
        Ok(())
    }

    /// Stops a running search (it prints its `bestmove`) and takes the table back.
    fn finish_search(&mut self) -> io::Result<()> {
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        running.stop.store(true, Ordering::Relaxed);
        match running.handle.join() {
            Ok((tt, result)) => {
                self.tt = Some(tt);
                result
            }
            Err(_) => Err(io::Error::other("the search thread panicked")),
        }
    }
}

/// Searches `position` and prints `info` lines and the `bestmove`.
#[allow(clippy::too_many_arguments)]
fn think<W: Write>(
    out: &Mutex<W>,
    position: &Position,
    tt: &mut TranspositionTable,
    limits: SearchLimits,
    multipv: usize,
    rule: EnteringKingRule,
    infinite: bool,
    stop: &AtomicBool,
    nnue: Option<&NnueConfig>,
) -> io::Result<()> {
    let mut declaration = position.backend().clone();
    declaration.set_entering_king_rule(rule);
    let legal = position.legal_moves();
    let bestmove = if declaration.declaration_win_move() != MOVE_NONE {
        "bestmove win".to_owned()
    } else if legal.is_empty() {
        "bestmove resign".to_owned()
    } else {
        let board = position.backend().clone();
        let mut root = root_moves(&board, &legal);
        let mut searcher = Searcher::new(board, tt, limits).with_nnue(nnue);
        let mut write_error = None;
        searcher.run(&mut root, multipv, |it| {
            if write_error.is_none()
                && let Err(e) = report(out, it, multipv)
            {
                write_error = Some(e);
            }
        });
        if let Some(reason) = searcher.failure() {
            write_line(out, &format!("info string error: {reason}"))?;
        }
        if let Some(e) = write_error {
            return Err(e);
        }
        match root[0].pv.get(1) {
            Some(ponder) => format!(
                "bestmove {} ponder {}",
                root[0].mv.to_usi(),
                ponder.to_usi()
            ),
            None => format!("bestmove {}", root[0].mv.to_usi()),
        }
    };
    if infinite {
        // USI: after `go infinite` the engine answers only once `stop` arrives.
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    write_line(out, &bestmove)
}

fn report<W: Write>(out: &Mutex<W>, it: &Iteration<'_>, multipv: usize) -> io::Result<()> {
    let millis = it.elapsed.as_millis().max(1);
    let nps = u128::from(it.nodes) * 1000 / millis;
    for (i, rm) in it.moves.iter().take(multipv).enumerate() {
        if !rm.exact {
            break;
        }
        let multipv_field = if multipv > 1 {
            format!(" multipv {}", i + 1)
        } else {
            String::new()
        };
        let pv: Vec<String> = rm.pv.iter().map(|m| m.to_usi()).collect();
        write_line(
            out,
            &format!(
                "info depth {} seldepth {}{multipv_field} score {} nodes {} nps {nps} time {} pv {}",
                it.depth,
                it.seldepth,
                usi_score(rm.value),
                it.nodes,
                it.elapsed.as_millis(),
                pv.join(" ")
            ),
        )?;
    }
    Ok(())
}

/// `cp N` or `mate N` (plies; negative when being mated).
fn usi_score(value: i32) -> String {
    if value >= MATE_IN_MAX_PLY {
        format!("mate {}", MATE - value)
    } else if value <= -MATE_IN_MAX_PLY {
        format!("mate -{}", MATE + value)
    } else {
        format!("cp {value}")
    }
}

fn parse_go(rest: &str) -> Result<Go, String> {
    let mut go = Go::default();
    let mut tokens = rest.split_whitespace();
    while let Some(token) = tokens.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            let text = tokens.next().ok_or(format!("`go {name}` needs a number"))?;
            text.parse::<u64>()
                .map_err(|_| format!("`go {name}` needs a non-negative number, got `{text}`"))
        };
        match token {
            "depth" => {
                let d = number("depth")?;
                go.depth = Some(u32::try_from(d.max(1)).unwrap_or(u32::MAX));
            }
            "nodes" => go.nodes = Some(number("nodes")?.max(1)),
            "movetime" => go.movetime = Some(number("movetime")?),
            "byoyomi" => go.byoyomi = Some(number("byoyomi")?),
            "btime" => go.btime = Some(number("btime")?),
            "wtime" => go.wtime = Some(number("wtime")?),
            "binc" => go.binc = Some(number("binc")?),
            "winc" => go.winc = Some(number("winc")?),
            "infinite" | "ponder" => go.infinite = true,
            other => return Err(format!("unknown `go` parameter `{other}`")),
        }
    }
    Ok(go)
}

/// How long to think, from the clock fields of `go` (None when there are none).
fn time_budget(go: &Go, side: BColor) -> Option<Duration> {
    if go.infinite {
        return None;
    }
    if let Some(ms) = go.movetime {
        return Some(Duration::from_millis(ms.saturating_sub(20).max(1)));
    }
    let (remaining, increment) = if side == BColor::BLACK {
        (go.btime, go.binc)
    } else {
        (go.wtime, go.winc)
    };
    if remaining.is_none() && go.byoyomi.is_none() && increment.is_none() {
        return None;
    }
    let remaining = remaining.unwrap_or(0);
    let increment = increment.unwrap_or(0);
    let byoyomi = go.byoyomi.unwrap_or(0);
    let planned = remaining / 40 + increment + byoyomi;
    // Never plan past what the clock allows, minus a safety margin for I/O.
    let available = remaining + increment + byoyomi;
    let margin = (available / 10).clamp(10, 200);
    Some(Duration::from_millis(
        planned.min(available.saturating_sub(margin)).max(5),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_fields() {
        let go = parse_go("btime 1000 wtime 2000 byoyomi 3000 nodes 5").expect("valid");
        assert_eq!(
            (go.btime, go.wtime, go.byoyomi, go.nodes),
            (Some(1000), Some(2000), Some(3000), Some(5))
        );
        assert!(parse_go("depth x").is_err());
        assert!(parse_go("sideways").is_err());
    }

    #[test]
    fn budget_stays_inside_the_clock() {
        let go = parse_go("btime 0 wtime 0 byoyomi 1000").expect("valid");
        let budget = time_budget(&go, BColor::BLACK).expect("has a clock");
        assert!(budget < Duration::from_millis(1000) && budget >= Duration::from_millis(800));
        assert!(time_budget(&parse_go("depth 3").expect("valid"), BColor::BLACK).is_none());
    }

    /// A GUI's mistakes between real commands never end the session; as
    /// many bad lines in a row as MAX_BAD_LINES do.
    #[test]
    fn only_bad_lines_in_a_row_end_the_session() {
        let some_bad = "bogus\n".repeat(MAX_BAD_LINES - 1);
        let script = format!("{some_bad}isready\n{some_bad}usi\nquit\n");
        let mut out = Vec::new();
        run_usi(script.as_bytes(), &mut out).expect("a session with a few mistakes");
        assert!(String::from_utf8_lossy(&out).contains("usiok"));

        let script = format!("isready\n{}usi\n", "bogus\n".repeat(MAX_BAD_LINES));
        let mut out = Vec::new();
        let err = run_usi(script.as_bytes(), &mut out).expect_err("not USI");
        assert!(err.to_string().contains("MAX_BAD_LINES"), "{err}");
        assert!(!String::from_utf8_lossy(&out).contains("usiok"));
    }

    #[test]
    fn mate_scores_print_in_plies() {
        assert_eq!(usi_score(MATE - 3), "mate 3");
        assert_eq!(usi_score(-MATE + 2), "mate -2");
        assert_eq!(usi_score(-45), "cp -45");
    }
}
