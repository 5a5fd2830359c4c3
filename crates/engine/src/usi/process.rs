//! The engine as a child process: line-oriented I/O with deadlines.
//!
//! A thread reads stdout into a channel so that every read can time out; another
//! drains stderr (an engine that fills its stderr pipe would block forever) and keeps
//! its last lines for error messages.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How many stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 8;
/// How long a polite `quit` may take before the process is killed.
const QUIT_GRACE: Duration = Duration::from_millis(500);

/// Why no line arrived.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The deadline passed.
    Timeout,
    /// stdout closed: the engine exited or crashed.
    Closed,
}

/// A running engine process.
pub(crate) struct EngineProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
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
        let (sender, lines) = mpsc::channel();
        // The reader threads end by themselves when the pipes close; they are not
        // joined, because a grandchild the engine spawned may hold the pipes open.
        thread::Builder::new()
            .name("usi-stdout".to_owned())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            })?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_closed = Arc::new(AtomicBool::new(false));
        let closed = Arc::clone(&stderr_closed);
        thread::Builder::new()
            .name("usi-stderr".to_owned())
            .spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
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
        match self.lines.recv_timeout(wait) {
            Ok(line) => {
                tracing::trace!(target: "stera_engine::usi", "< {line}");
                Ok(line)
            }
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

fn working_directory(program: &Path) -> Option<PathBuf> {
    let parent = program.parent()?;
    if parent.as_os_str().is_empty() {
        None
    } else {
        Some(parent.to_path_buf())
    }
}
