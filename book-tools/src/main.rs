//! `book-tools`: everything a book maker runs by hand. One module per subcommand;
//! each has an `Args` (clap) and a `run`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod evaluate;
mod perft;

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
    /// Value every legal move of a position with the built-in or a USI engine.
    Evaluate(evaluate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Perft(args) => perft::run(&args),
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
