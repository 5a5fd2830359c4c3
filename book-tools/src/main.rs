//! `book-tools`: everything a book maker runs by hand. One module per subcommand;
//! each has an `Args` (clap) and a `run`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod backup;
mod bench;
mod check;
mod common;
mod evaluate;
mod export;
mod file_book;
mod game_threads;
mod import;
mod kifu;
mod learn;
mod matches;
mod migrate;
mod next;
mod perft;
mod remote;
mod remote_player;
mod roots;
mod show;
mod stats;
mod synth;
mod unban;

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
    /// Tera-shock export: minimax over the whole book, written as a YaneuraOu
    /// DB2016 text book or (`.ybb`, or `--export-format ybb`) a binary book.
    Export(export::Args),
    /// Import a YaneuraOu book (DB2016 text, or `.ybb` binary by the extension) as
    /// thought positions.
    Import(import::Args),
    /// Game records for the kifu bonus: `kifu add`.
    Kifu(kifu::Args),
    /// The run's root positions: `roots set`, `roots list`.
    Roots(roots::Args),
    /// Book statistics: size, in-book depth, principal variations, growth.
    Stats(stats::Args),
    /// One position: board, stored and propagated value of every move.
    Show(show::Args),
    /// Lift quarantines (positions banned after failing on several workers) on a
    /// stopped store; `stats` lists them.
    Unban(unban::Args),
    /// Copy a stopped store into a new one (every tree). A running coordinator's
    /// store: `remote backup`.
    Backup(backup::Args),
    /// Read a stopped store through (every position and table) and compare it
    /// with its record of what it must hold; exits non-zero when something is
    /// missing or unreadable.
    Check(check::Args),
    /// Merge colour-flipped twins: a store that holds both twins of a position
    /// (made before twins became one node) written as a new store with one node
    /// per pair.
    Migrate(migrate::Args),
    /// The N positions the selector would hand out next, as `sfen ...` lines,
    /// without changing the store (peta_shock_next).
    Next(next::Args),
    /// A running coordinator: `remote export` (a fresh book while generation
    /// runs), `remote backup` (a copy of its store), `remote status`.
    Remote(remote::Args),
    /// A book against another book or against no book: games with the same engine
    /// on both sides once the books end; wins, draws, losses, Elo.
    Match(Box<matches::Args>),
    /// Games the way a book is used (its moves against an opponent engine
    /// without one), counted in the store, so that `match --book-moves results`
    /// and `export --export-by-results` play the moves that won.
    Learn(Box<learn::Args>),
}

fn main() -> ExitCode {
    let cli: Cli = stera_service::deprecated::parse_from(std::env::args_os());
    let result = match cli.command {
        Command::Perft(args) => perft::run(&args),
        Command::Synth(args) => synth::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Evaluate(args) => evaluate::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Kifu(args) => kifu::run(&args),
        Command::Roots(args) => roots::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Show(args) => show::run(&args),
        Command::Unban(args) => unban::run(&args),
        Command::Backup(args) => backup::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Migrate(args) => migrate::run(&args),
        Command::Next(args) => next::run(&args),
        Command::Remote(args) => remote::run(&args),
        Command::Match(args) => matches::run(&args),
        Command::Learn(args) => learn::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::tell!("error: {}", stera_service::error_text(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
