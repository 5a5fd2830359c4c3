//! `coordinator`: owns the book, selects leaves and hands them to workers.

use std::process::ExitCode;

use clap::Parser;
use stera_coordinator::{CoordinatorArgs, LOCAL_WORKER_ARG};

fn main() -> ExitCode {
    let mut argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some(LOCAL_WORKER_ARG) {
        // Local workers are this executable re-run in worker mode, so the main job
        // needs only `cargo run -p coordinator`.
        argv.remove(1);
        return stera_worker::main_with_args(argv);
    }
    let args = CoordinatorArgs::parse_from(argv);
    stera_worker::logging::init(args.log_format);
    let exporter = stera_coordinator::export::book_exporter(args.db.clone());
    stera_worker::block_on_main(stera_coordinator::run(args, Some(exporter)))
}
