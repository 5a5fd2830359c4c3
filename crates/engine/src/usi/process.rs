//! The engine as a child process: line-oriented I/O with deadlines.
//!
//! A thread reads stdout into a bounded channel so that every read can time out;
//! another drains stderr (an engine that fills its stderr pipe would block forever)
//! and keeps its last lines for error messages.
//!
//! Nothing an engine prints can take more memory than a bound: a line longer than
//! [`MAX_LINE_BYTES`] ends the reading (the engine is broken: it is killed), at most
//! [`LINE_QUEUE`] lines wait in the channel (a flooding engine then blocks on its
//! own pipe), and a read past its deadline fails even while lines keep coming.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::line::{LineRead, read_bounded_line, skip_rest_of_line};

/// How many stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 8;
/// The longest line an engine may print (stdout; longer stderr lines are cut).
/// The longest real lines are `info ... pv` with a long variation and `option`
/// lines with many `var`s, a few KiB at most.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;
/// How many stdout lines may wait to be read: an engine that prints faster than
/// they are read waits on its pipe instead of filling memory.
pub(crate) const LINE_QUEUE: usize = 1024;
/// How long a polite `quit` may take before the process is killed.
const QUIT_GRACE: Duration = Duration::from_millis(500);

/// Why no line arrived.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The deadline passed.
    Timeout,
    /// stdout closed: the engine exited or crashed.
    Closed,
    /// The engine printed a line longer than [`MAX_LINE_BYTES`]; its start, at most
    /// [`stera_rules::MAX_QUOTE_CHARS`] characters.
    TooLong(String),
}

/// What the stdout thread passes on.
enum Received {
    Line(String),
    TooLong(String),
}

/// A running engine process.
pub(crate) struct EngineProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Received>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Set by the stderr thread when stderr closed (all of it is in the tail).
    stderr_closed: Arc<AtomicBool>,
}

impl EngineProcess {
    /// Starts `program` with `args`, its working directory being the program's own
    /// directory when it has one (engines look for evaluation files next to
    /// themselves).
    pub(crate) fn spawn(program: &Path, args: &[String]) -> io::Result<Self> {
        // A relative path with a directory part would be ambiguous once the working
        // directory changes, so it is made absolute first. A bare name is looked up
        // in PATH and keeps the caller's working directory.
        let program = match working_directory(program) {
            Some(_) => program.canonicalize()?,
            None => program.to_path_buf(),
        };
        let directory = working_directory(&program);
        let mut command = Command::new(&program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = directory {
            command.current_dir(dir);
        }
        let mut child = command.spawn()?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(io::Error::other("engine pipes were not created"));
                }
            };
        let (sender, lines) = mpsc::sync_channel(LINE_QUEUE);
        // The reader threads end by themselves when the pipes close (or, for
        // stdout, when the process is dropped and the channel with it); they are not
        // joined, because a grandchild the engine spawned may hold the pipes open.
        thread::Builder::new()
            .name("usi-stdout".to_owned())
            .spawn(move || read_stdout(BufReader::new(stdout), &sender))?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_closed = Arc::new(AtomicBool::new(false));
        let closed = Arc::clone(&stderr_closed);
        thread::Builder::new()
            .name("usi-stderr".to_owned())
            .spawn(move || {
                let mut stderr = BufReader::new(stderr);
                loop {
                    let line = match read_bounded_line(&mut stderr, MAX_LINE_BYTES) {
                        Ok(LineRead::Line(line)) => line,
                        // A long line is kept cut short; the rest of it is skipped.
                        Ok(LineRead::TooLong(start)) => {
                            if !skip_rest_of_line(&mut stderr) {
                                break;
                            }
                            format!("{start} (cut: a line of more than {MAX_LINE_BYTES} bytes)")
                        }
                        Ok(LineRead::End) | Err(_) => break,
                    };
                    tracing::debug!(target: "stera_engine::usi", "engine stderr: {line}");
                    if let Ok(mut tail) = tail.lock() {
                        if tail.len() == STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                }
                closed.store(true, Ordering::Release);
            })?;
        Ok(Self {
            child,
            stdin,
            lines,
            stderr_tail,
            stderr_closed,
        })
    }

    /// Sends one command line.
    pub(crate) fn send(&mut self, command: &str) -> io::Result<()> {
        tracing::trace!(target: "stera_engine::usi", "> {command}");
        // One write per line: engines read line by line, and a partial line must not
        // sit in a buffer while we wait for an answer.
        let mut buf = Vec::with_capacity(command.len() + 1);
        buf.extend_from_slice(command.as_bytes());
        buf.push(b'\n');
        self.stdin.write_all(&buf)?;
        self.stdin.flush()
    }

    /// The next line of stdout, waiting until `deadline` at most.
    pub(crate) fn read_line(&self, deadline: Instant) -> Result<String, ReadError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        // Checked first: an engine that prints without pause always has a line
        // ready, and must not keep a search alive past its deadline that way.
        if wait.is_zero() {
            return Err(ReadError::Timeout);
        }
        match self.lines.recv_timeout(wait) {
            Ok(Received::Line(line)) => {
                tracing::trace!(target: "stera_engine::usi", "< {line}");
                Ok(line)
            }
            Ok(Received::TooLong(start)) => Err(ReadError::TooLong(start)),
            Err(RecvTimeoutError::Timeout) => Err(ReadError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(ReadError::Closed),
        }
    }

    /// Why the engine seems to have died: exit status and its last stderr lines.
    pub(crate) fn death_report(&mut self) -> String {
        // The exit status may lag the closing of stdout by a moment.
        let deadline = Instant::now() + Duration::from_millis(200);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status.to_string()),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => break None,
            }
        };
        // An engine that exited has closed its stderr; its last words (the reason
        // it gave up) may still be on their way through the reader thread.
        if status.is_some() {
            while !self.stderr_closed.load(Ordering::Acquire) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
        }
        let mut report =
            status.map_or_else(|| "output closed".to_owned(), |s| format!("exited ({s})"));
        let tail = self.stderr_tail();
        if !tail.is_empty() {
            report.push_str("; stderr: ");
            report.push_str(&tail.join(" | "));
        }
        report
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Kills the process at once (after a time-out: the engine cannot be trusted to
    /// answer `quit`).
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = self.send("quit");
        let deadline = Instant::now() + QUIT_GRACE;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => thread::sleep(Duration::from_millis(5)),
            }
        }
        self.kill();
    }
}

/// The stdout thread: passes on every line until the pipe closes, a line is too
/// long (the last thing sent: the engine will be killed) or nobody listens.
fn read_stdout(mut stdout: impl BufRead, sender: &SyncSender<Received>) {
    loop {
        let received = match read_bounded_line(&mut stdout, MAX_LINE_BYTES) {
            Ok(LineRead::Line(line)) => Received::Line(line),
            Ok(LineRead::TooLong(start)) => {
                let _ = sender.send(Received::TooLong(start));
                return;
            }
            Ok(LineRead::End) | Err(_) => return,
        };
        if sender.send(received).is_err() {
            return;
        }
    }
}

fn working_directory(program: &Path) -> Option<PathBuf> {
    let parent = program.parent()?;
    if parent.as_os_str().is_empty() {
        None
    } else {
        Some(parent.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether process `pid` is waiting to write into a full pipe.
    fn blocked_on_its_pipe(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/wchan"))
            .is_ok_and(|wchan| wchan.contains("pipe_write"))
    }

    #[test]
    fn lines_nobody_reads_wait_in_the_engine_not_in_memory() {
        // Far more lines than the queue and a pipe hold; unread, the engine
        // cannot print them all and end.
        let script = "i=0; while [ $i -lt 400000 ]; do echo \"info $i\"; i=$((i+1)); done";
        let mut process =
            EngineProcess::spawn(Path::new("sh"), &["-c".to_owned(), script.to_owned()]).unwrap();
        let pid = process.child.id();
        // Blocked for a while, not for a moment (an unbounded queue's reader
        // may lag behind for a moment too).
        let mut blocked = 0;
        while blocked < 50 {
            assert!(
                process.child.try_wait().unwrap().is_none(),
                "the engine printed everything: nothing bounded the lines waiting"
            );
            blocked = if blocked_on_its_pipe(pid) {
                blocked + 1
            } else {
                0
            };
            thread::sleep(Duration::from_millis(10));
        }
        // What waits is there to read.
        let line = process.read_line(Instant::now() + Duration::from_secs(60));
        assert_eq!(line.unwrap(), "info 0");
        process.kill();
    }
}
