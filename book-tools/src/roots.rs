//! `book-tools roots set`: the run's root positions, one per line of a file.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use stera_book::{NodeStore, SledStore};
use stera_rules::Position;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Replace the run's roots with those of a file: one per line, `startpos`,
    /// `startpos moves ...` or `sfen ...` (also `position ...`); blank lines and
    /// lines starting with `#` are ignored. Nothing is stored if any line is bad.
    Set {
        /// The book store directory (created if missing).
        #[arg(long)]
        db: PathBuf,
        /// The file of roots.
        file: PathBuf,
    },
}

pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        Command::Set { db, file } => set(db, file),
    }
}

/// Parses a roots file: the roots, or every bad line with its number.
pub fn parse_roots(text: &str, name: &str) -> Result<Vec<String>> {
    let mut roots = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let command = line.strip_prefix("position ").unwrap_or(line).trim();
        match Position::from_position_command(command) {
            Ok(_) => roots.push(command.to_owned()),
            Err(e) => errors.push(format!("{name}:{}: `{line}`: {e}", i + 1)),
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} bad root line(s), nothing stored:\n  {}",
            errors.len(),
            errors.join("\n  ")
        );
    }
    if roots.is_empty() {
        bail!("{name}: no root positions");
    }
    Ok(roots)
}

fn set(db: &std::path::Path, file: &std::path::Path) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read `{}`", file.display()))?;
    let roots = parse_roots(&text, &file.display().to_string())?;
    let mut store = SledStore::open(db)
        .with_context(|| format!("cannot open the book store `{}`", db.display()))?;
    let mut config = store
        .config()
        .context("cannot read the run configuration")?
        .unwrap_or_default();
    config.roots = roots;
    store
        .save_config(&config)
        .context("cannot store the run configuration")?;
    println!("stored {} roots:", config.roots.len());
    for r in &config.roots {
        println!("  {r}");
    }
    Ok(())
}
