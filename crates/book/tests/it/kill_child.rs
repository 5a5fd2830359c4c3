//! The SIGKILL harness of the crash tests: the test binary re-runs itself as a
//! writer (an ignored test named by the caller, the store's directory in an
//! environment variable), reads the writer's `ack ...` lines, and kills it with
//! SIGKILL a random moment after its first acknowledgement.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;

/// Runs the ignored test `writer` of this binary (its full path in the test binary,
/// `module::name`, matched with `--exact`) with `store_env` set to `dir`,
/// waits for its first `ack` line, lets it go on for 5 to 300 ms (drawn from
/// `rng`) and kills it. Returns the largest value `ack_end` gave any `ack` line
/// the writer printed before it died (what the writer has acknowledged).
pub fn kill_writer(
    writer: &str,
    store_env: &str,
    dir: &Path,
    rng: &mut StdRng,
    ack_end: fn(&str) -> u64,
) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(&exe)
        .args([
            writer,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(store_env, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("ack ")
                && tx.send(ack_end(rest)).is_err()
            {
                break;
            }
        }
    });
    // The kill lands mid-stream: after the first acknowledgement, at a random
    // moment.
    let mut acked = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("writer acks");
    std::thread::sleep(Duration::from_millis(rng.random_range(5..300)));
    // std's kill sends SIGKILL on Unix.
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    while let Ok(end) = rx.try_recv() {
        acked = acked.max(end);
    }
    acked
}
