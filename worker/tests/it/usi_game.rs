//! A full game between the built-in engine, through `worker --usi`, and GPS Shogi
//! (`gpsusi`, Debian package `gpsshogi`): two real USI processes, every move checked
//! for legality, the game ending by mate, resignation, declaration, repetition or
//! the ply cap.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use stera_rules::Position;

/// The longest a game may run, in plies (then it is adjudicated a draw).
const PLY_CAP: usize = 160;
/// How long one engine may take for one move before the test fails.
const MOVE_TIMEOUT: Duration = Duration::from_secs(60);

struct UsiProcess {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl UsiProcess {
    fn start(name: &'static str, program: &PathBuf, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({}): {e}", program.display()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            name,
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}")
            .unwrap_or_else(|e| panic!("{} closed its input: {e}", self.name));
        self.stdin.flush().expect("flush");
    }

    /// The first line starting with `prefix` (earlier lines are skipped).
    fn wait_for(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(MOVE_TIMEOUT)
                .unwrap_or_else(|e| panic!("{} gave no `{prefix}` line: {e}", self.name));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    fn handshake(&mut self, options: &[(&str, &str)]) {
        self.send("usi");
        self.wait_for("usiok");
        for (name, value) in options {
            self.send(&format!("setoption name {name} value {value}"));
        }
        self.send("isready");
        self.wait_for("readyok");
        self.send("usinewgame");
    }
}

impl Drop for UsiProcess {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        std::thread::sleep(Duration::from_millis(100));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gpsusi_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("STERA_GPSUSI") {
        return Some(PathBuf::from(p));
    }
    let games = PathBuf::from("/usr/games/gpsusi");
    if games.is_file() {
        return Some(games);
    }
    assert!(
        std::env::var("STERA_REQUIRE_ENGINES").as_deref() != Ok("1"),
        "gpsusi not found: install the Debian package gpsshogi (STERA_REQUIRE_ENGINES=1 makes this a failure)"
    );
    eprintln!("skipping: gpsusi not found (Debian package gpsshogi)");
    None
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    Mate,
    Resign,
    Declaration,
    Repetition,
    PlyCap,
}

#[test]
fn builtin_engine_plays_a_full_legal_game_against_gpsusi() {
    let Some(gps) = gpsusi_path() else { return };
    let worker = PathBuf::from(env!("CARGO_BIN_EXE_worker"));
    let mut builtin = UsiProcess::start("worker --usi", &worker, &["--usi"]);
    let mut gpsusi = UsiProcess::start("gpsusi", &gps, &[]);
    builtin.handshake(&[("Hash", "16")]);
    gpsusi.handshake(&[("BookDepth", "0"), ("Thread", "1")]);

    let mut pos = Position::startpos();
    let mut moves: Vec<String> = Vec::new();
    let end = loop {
        if moves.len() >= PLY_CAP {
            break End::PlyCap;
        }
        // The built-in engine plays black.
        let black = moves.len().is_multiple_of(2);
        let (engine, go) = if black {
            (&mut builtin, "go nodes 20000")
        } else {
            (&mut gpsusi, "go btime 0 wtime 0 byoyomi 100")
        };
        let position = if moves.is_empty() {
            "position startpos".to_owned()
        } else {
            format!("position startpos moves {}", moves.join(" "))
        };
        engine.send(&position);
        engine.send(go);
        let line = engine.wait_for("bestmove");
        let answer = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        match answer.as_str() {
            "resign" => break End::Resign,
            "win" => break End::Declaration,
            _ => {}
        }
        let mv = pos.parse_move(&answer).unwrap_or_else(|e| {
            panic!(
                "{} played an illegal move after {moves:?}: {e}",
                engine.name
            )
        });
        pos.do_move(mv);
        moves.push(answer);
        if pos.is_checkmate() {
            break End::Mate;
        }
        if pos.game_repetition().is_some() {
            break End::Repetition;
        }
    };
    eprintln!(
        "game ended by {end:?} after {} plies: {}",
        moves.len(),
        moves.join(" ")
    );
    assert!(!moves.is_empty(), "no move was played");
    // Replaying the record from the start reaches the same position: the record is legal.
    let replay =
        Position::from_position_command(&format!("startpos moves {}", moves.join(" "))).unwrap();
    assert_eq!(replay.to_sfen(), pos.to_sfen());
}
