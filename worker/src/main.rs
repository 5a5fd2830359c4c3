//! `worker`: evaluates positions handed out by the coordinator.
//!
//! Not built yet; see the open issues.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("worker: not built yet (see the open issues)");
    ExitCode::from(2)
}
