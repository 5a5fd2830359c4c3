//! A scripted USI session against `run_usi`, driven like a GUI would: send a
//! command, wait for the answer, check it.

use std::io::{self, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use stera_engine::builtin::run_usi;
use stera_rules::Position;

/// The engine's stdin: bytes arrive line by line from the test.
struct ChannelReader {
    rx: Receiver<String>,
    pending: Vec<u8>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            match self.rx.recv() {
                Ok(line) => self.pending = line.into_bytes(),
                Err(_) => return Ok(0), // test hung up: end of input
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

/// The engine's stdout: complete lines go to the test.
struct ChannelWriter {
    tx: Sender<String>,
    partial: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                let _ = self.tx.send(line);
            } else {
                self.partial.push(b);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Gui {
    to_engine: Sender<String>,
    from_engine: Receiver<String>,
    engine: JoinHandle<io::Result<()>>,
}

impl Gui {
    fn start() -> Self {
        let (to_engine, engine_in) = channel();
        let (engine_out, from_engine) = channel();
        let engine = std::thread::spawn(move || {
            let reader = BufReader::new(ChannelReader {
                rx: engine_in,
                pending: Vec::new(),
            });
            let writer = ChannelWriter {
                tx: engine_out,
                partial: Vec::new(),
            };
            run_usi(reader, writer)
        });
        Self {
            to_engine,
            from_engine,
            engine,
        }
    }

    fn send(&self, command: &str) {
        self.to_engine
            .send(format!("{command}\n"))
            .expect("engine is running");
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn until(&self, prefix: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self
                .from_engine
                .recv()
                .unwrap_or_else(|_| panic!("engine ended before `{prefix}`; got {lines:?}"));
            let done = line.starts_with(prefix);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }
}

fn bestmove(lines: &[String]) -> &str {
    lines
        .last()
        .and_then(|l| l.strip_prefix("bestmove "))
        .expect("ends with bestmove")
        .split_whitespace()
        .next()
        .unwrap_or("")
}

#[test]
fn scripted_session() {
    let gui = Gui::start();

    gui.send("usi");
    let hello = gui.until("usiok");
    assert!(hello[0].starts_with("id name stera-builtin "));
    assert!(
        hello
            .iter()
            .any(|l| l.starts_with("option name Hash type spin"))
    );
    assert!(
        hello
            .iter()
            .any(|l| l.starts_with("option name MultiPV type spin"))
    );

    gui.send("setoption name Hash value 8");
    gui.send("isready");
    assert_eq!(gui.until("readyok"), vec!["readyok"]);
    gui.send("usinewgame");

    // Mate in one, MultiPV 3: three ranked lines, the first a mate in 1.
    gui.send("setoption name MultiPV value 3");
    gui.send("position sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1");
    gui.send("go depth 3");
    let lines = gui.until("bestmove");
    assert_eq!(bestmove(&lines), "G*5b");
    let last_depth: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("info depth 3 "))
        .collect();
    assert_eq!(last_depth.len(), 3, "{lines:?}");
    assert!(
        last_depth[0].contains(" multipv 1 score mate 1 "),
        "{}",
        last_depth[0]
    );
    assert!(last_depth[0].ends_with(" pv G*5b"), "{}", last_depth[0]);
    assert!(last_depth[1].contains(" multipv 2 "));
    assert!(last_depth[2].contains(" multipv 3 "));
    for l in &last_depth {
        assert!(l.contains(" nodes ") && l.contains(" time "), "{l}");
    }

    // A node-limited search from a game, back at MultiPV 1: a legal move.
    gui.send("setoption name MultiPV value 1");
    gui.send("position startpos moves 7g7f 3c3d");
    gui.send("go nodes 20000");
    let lines = gui.until("bestmove");
    let pos = Position::from_position_command("startpos moves 7g7f 3c3d").expect("valid");
    assert!(pos.parse_move(bestmove(&lines)).is_ok(), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("multipv")));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info depth 1 ") && l.contains(" score cp "))
    );

    // `go infinite` answers only after `stop`; `isready` is answered meanwhile.
    gui.send("position startpos");
    gui.send("go infinite");
    gui.send("isready");
    let ready = gui.until("readyok");
    assert!(
        ready.iter().all(|l| !l.starts_with("bestmove")),
        "{ready:?}"
    );
    gui.send("stop");
    let lines = gui.until("bestmove");
    assert!(Position::startpos().parse_move(bestmove(&lines)).is_ok());

    // `go ponder` ends with a bestmove on `ponderhit`.
    gui.send("go ponder");
    gui.send("ponderhit");
    let lines = gui.until("bestmove");
    assert!(Position::startpos().parse_move(bestmove(&lines)).is_ok());

    // Clock-based search with byoyomi.
    gui.send("go btime 0 wtime 0 byoyomi 200");
    let lines = gui.until("bestmove");
    assert!(Position::startpos().parse_move(bestmove(&lines)).is_ok());

    // Checkmated: resign.
    gui.send("position sfen 4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1");
    gui.send("go depth 2");
    assert_eq!(
        gui.until("bestmove").last().map(String::as_str),
        Some("bestmove resign")
    );

    // Entering-king declaration under the 27-point rule.
    gui.send("setoption name EnteringKingRule value CSARule27");
    gui.send("position sfen +R+B2K4/GGGGSSSS1/NNNNLLLLP/9/9/9/9/9/4k4 b RB17p 1");
    gui.send("go depth 1");
    assert_eq!(
        gui.until("bestmove").last().map(String::as_str),
        Some("bestmove win")
    );
    gui.send("setoption name EnteringKingRule value NoEnteringKing");

    // Bad input is reported, and the session goes on.
    gui.send("position sfen this is not a position");
    let error = gui.until("info string error");
    assert!(error[0].contains("error"));
    gui.send("go depth 1");
    assert_eq!(
        gui.until("bestmove").last().map(String::as_str),
        Some("bestmove resign")
    );
    gui.send("go nodes lots");
    assert!(gui.until("info string error")[0].contains("nodes"));
    assert_eq!(
        gui.until("bestmove").last().map(String::as_str),
        Some("bestmove resign")
    );
    gui.send("frobnicate");
    assert!(gui.until("info string")[0].contains("frobnicate"));

    gui.send("position startpos");
    gui.send("go depth 1");
    assert!(
        Position::startpos()
            .parse_move(bestmove(&gui.until("bestmove")))
            .is_ok()
    );

    gui.send("quit");
    gui.engine
        .join()
        .expect("engine thread finished")
        .expect("session ended cleanly");
}

#[test]
fn piped_script_runs_to_the_end() {
    // All input at once, as from a file: `quit` ends the session.
    let script = "usi\nisready\nposition startpos moves 2g2f\ngo depth 2\nquit\n";
    let mut out = Vec::new();
    run_usi(script.as_bytes(), &mut out).expect("session runs");
    let text = String::from_utf8(out).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.contains(&"usiok") && lines.contains(&"readyok"));
    let best = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("bestmove "))
        .expect("a bestmove");
    let pos = Position::from_position_command("startpos moves 2g2f").expect("valid");
    let mv = best.split_whitespace().next().unwrap_or("");
    assert!(pos.parse_move(mv).is_ok(), "{best}");
}

#[test]
fn endless_input_ends_the_session_with_a_clear_error() {
    // `/dev/zero` as a reader: one line without end.
    let input = std::io::BufReader::new(std::io::repeat(0));
    let mut out = Vec::new();
    let err = run_usi(input, &mut out).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    let text = err.to_string();
    assert!(text.contains("longer than 1048576 bytes"), "{text}");
    // The quoted start is escaped and short.
    let quoted = text.split('`').nth(1).unwrap();
    assert!(quoted.starts_with("\\0\\0"), "{quoted}");
    assert_eq!(quoted.chars().count(), stera_rules::MAX_QUOTE_CHARS + 1);
    // The GUI is told too.
    let said = String::from_utf8(out).unwrap();
    assert!(
        said.starts_with("info string error: a USI command longer"),
        "{said}"
    );
    // Commands before an over-long line are answered.
    let mut input = b"usi\n".to_vec();
    input.extend(std::iter::repeat_n(
        b'x',
        stera_engine::builtin::MAX_COMMAND_BYTES + 1,
    ));
    let mut out = Vec::new();
    run_usi(input.as_slice(), &mut out).unwrap_err();
    assert!(String::from_utf8(out).unwrap().contains("usiok"));
}
