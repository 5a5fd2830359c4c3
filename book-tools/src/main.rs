//! `book-tools`: everything a book maker runs by hand. One module per subcommand;
//! each has an `Args` (clap) and a `run`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod evaluate;
mod perft;
mod synth;

#[derive(Parser)]
#[command(
    name = "book-tools",
    version,
    about = "Tools for Super Tera-Shock opening books"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaf nodes of the legal move tree (move generator check and speed).
    Perft(perft::Args),
    /// Grow a synthetic book (pseudo-evaluator, real selector) for benchmarks.
    Synth(synth::Args),
    /// Measure the book: `bench select` (latency, throughput, memory).
    Bench(bench::Args),
    /// Value every legal move of a position with the built-in or a USI engine.
    Evaluate(evaluate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Perft(args) => perft::run(&args),
        Command::Synth(args) => synth::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Evaluate(args) => evaluate::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
