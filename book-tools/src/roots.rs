//! `book-tools roots`: the run's root positions (`set` from a file, `list`) and how
//! many leaves each takes in its turn.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hashbrown::HashSet;
use stera_book::NodeStore;
use stera_rules::Position;

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Replace the run's roots with those of a file: one per line, `startpos`,
    /// `startpos moves ...` or `sfen ...` (also `position ...`); blank lines and
    /// lines starting with `#` are ignored, a position given twice is kept once.
    /// Nothing is stored if any line is bad.
    Set {
        /// The book store directory.
        #[arg(long)]
        db: PathBuf,
        /// Make the store when --db does not exist (without it, a missing store
        /// is an error: a typo must not start a new book).
        #[arg(long)]
        create: bool,
        /// The file of roots; `-` is standard input.
        file: PathBuf,
        /// Leaves each root hands out before the next root takes its turn (1 to
        /// 10,000). Many roots with a small number spread the thinking over all of
        /// them (e.g. roots where games left the book); few roots with 100 follow each
        /// root's principal variation longer. Default: keep the store's setting
        /// (100 in a new store).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        leaves_per_turn: Option<u32>,
    },
    /// Print the run's roots, one per line in the form `roots set` reads, and (as
    /// `#` comments) the settings that go with them. A store without roots of its
    /// own prints the defaults it would use: `startpos` and its 30 children.
    List {
        /// The book store directory.
        #[arg(long)]
        db: PathBuf,
    },
}

pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        Command::Set {
            db,
            create,
            file,
            leaves_per_turn,
        } => set(db, *create, file, *leaves_per_turn),
        Command::List { db } => list(db),
    }
}

fn list(db: &Path) -> Result<()> {
    let store = common::open_for_reading(db)?;
    let stored = store
        .config()
        .context("cannot read the run configuration")?;
    let origin = if stored.is_some() {
        "stored"
    } else {
        "defaults: none stored"
    };
    let config = stored.unwrap_or_default();
    crate::say!(
        "# {} roots ({origin}), {} leaves per turn, kifu bonus {}, book ply limit {} (a line of the book past it scores as a draw; games have their own --ply-limit)",
        config.roots.len(),
        config.leaves_per_turn,
        config.kifu_bonus,
        config.ply_limit
    );
    for r in &config.roots {
        crate::say!("{r}");
    }
    Ok(())
}

/// How many bad lines are listed (all are counted).
const LISTED: usize = 20;

/// The largest roots file read: 64 MiB (10,000 roots of long move lists fit
/// many times; endless input ends with an error).
pub const MAX_ROOTS_FILE_BYTES: u64 = 64 << 20;

/// The roots of a file (one per line, first occurrences of each position, in file
/// order) and how many lines repeated an earlier position; every bad line is an
/// error with its number.
pub fn parse_roots(path: &Path) -> Result<(Vec<String>, usize)> {
    let name = path.display().to_string();
    let mut roots = Vec::new();
    let mut seen: HashSet<u128> = HashSet::new();
    let mut duplicates = 0;
    let mut errors = Vec::new();
    common::for_each_line_within(path, MAX_ROOTS_FILE_BYTES, |(number, line)| {
        let line = match line {
            Ok(line) => line,
            Err(reason) => return errors.push(format!("{name}:{number}: {reason}")),
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        let command = line.strip_prefix("position ").unwrap_or(line).trim();
        match Position::from_position_command(command) {
            Ok(pos) if seen.insert(pos.key().0) => roots.push(command.to_owned()),
            Ok(_) => duplicates += 1,
            Err(e) => errors.push(format!("{name}:{number}: {e}")),
        }
    })?;
    if !errors.is_empty() {
        let title = format!("{} bad root line(s), nothing stored", errors.len());
        bail!("{}", common::listing(&title, &errors, LISTED));
    }
    if roots.is_empty() {
        bail!("{name}: no root positions");
    }
    if roots.len() > stera_book::MAX_ROOTS {
        bail!(
            "{name}: {} roots, more than the limit of {} (MAX_ROOTS); nothing stored",
            roots.len(),
            stera_book::MAX_ROOTS
        );
    }
    Ok((roots, duplicates))
}

fn set(db: &Path, create: bool, file: &Path, leaves_per_turn: Option<u32>) -> Result<()> {
    let (roots, duplicates) = parse_roots(file)?;
    let mut store = common::open_for_writing(db, create)?;
    let mut config = store
        .config()
        .context("cannot read the run configuration")?
        .unwrap_or_default();
    config.roots = roots;
    if let Some(n) = leaves_per_turn {
        config.leaves_per_turn = n;
    }
    stera_book::check_roots(&config).map_err(|e| anyhow::anyhow!("{e}; nothing stored"))?;
    store
        .save_config(&config)
        .context("cannot store the run configuration")?;
    if duplicates > 0 {
        crate::say!("dropped {duplicates} duplicate root(s): the same position as an earlier line");
    }
    crate::say!(
        "stored {} roots, {} leaves per turn:",
        config.roots.len(),
        config.leaves_per_turn
    );
    for r in &config.roots {
        crate::say!("  {r}");
    }
    Ok(())
}
