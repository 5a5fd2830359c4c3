//! `coordinator`: owns the book, selects leaves and hands them to workers.
//!
//! The distributed service is not built yet; this binary already accepts the
//! command line of the main job so that the README's first command is stable.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "coordinator",
    version,
    about = "Super Tera-Shock book coordinator"
)]
struct Cli {
    /// Directory of the book store (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// Address the gRPC service listens on.
    #[arg(long, default_value = "127.0.0.1:50051")]
    listen: String,
    /// Start this many worker processes on loopback with the built-in engine.
    #[arg(long, default_value_t = 0)]
    local_workers: u32,
    /// Stop after this many thought positions have been added.
    #[arg(long)]
    think_limit: Option<u64>,
    /// Write a YaneuraOu book to this file when generation stops.
    #[arg(long)]
    export: Option<PathBuf>,
}

fn main() -> ExitCode {
    let _cli = Cli::parse();
    eprintln!(
        "coordinator: book generation is not built yet (see the open issues); no book was written"
    );
    ExitCode::from(2)
}
