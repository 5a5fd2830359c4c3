//! `book-tools kifu add`: positions of game records become the kifu bonus set.

use std::path::PathBuf;

use anyhow::{Context, Result};
use hashbrown::HashSet;
use stera_book::NodeStore;
use stera_formats::kifu::read_kifu_file_with;
use stera_rules::Key;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Add every position of the games in FILES (CSA, KIF, USI or SFEN lines) to
    /// the kifu set: leaf moves into them get the selection bonus.
    Add {
        /// The book store directory.
        #[arg(long)]
        db: PathBuf,
        /// Make the store when --db does not exist (without it, a missing store
        /// is an error: a typo must not start a new book).
        #[arg(long)]
        create: bool,
        /// Game record files; `-` is standard input (a pipe is read whole).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How many skipped games to list (all are counted).
        #[arg(long, default_value_t = 20)]
        list: usize,
    },
}

pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        Command::Add {
            db,
            create,
            files,
            list,
        } => add(db, *create, files, *list),
    }
}

fn add(db: &std::path::Path, create: bool, files: &[PathBuf], list: usize) -> Result<()> {
    let mut keys: HashSet<u128> = HashSet::new();
    let (mut games, mut skipped, mut positions) = (0u64, 0u64, 0u64);
    let mut errors = Vec::new();
    for file in files {
        let mut replay_error = None;
        let summary = read_kifu_file_with(file, None, |game| {
            let result = game.for_each_position(|p| {
                keys.insert(p.key().0);
            });
            if let Err(e) = result {
                replay_error.get_or_insert(e);
            }
        })
        .with_context(|| format!("cannot read game records from `{}`", file.display()))?;
        if let Some(e) = replay_error {
            anyhow::bail!("`{}`: a game read back illegal: {e}", file.display());
        }
        crate::say!(
            "{}: {}, {} games read, {} skipped, {} positions",
            file.display(),
            summary.format,
            summary.games_read,
            summary.games_skipped,
            summary.positions
        );
        games += summary.games_read;
        skipped += summary.games_skipped;
        positions += summary.positions;
        // Only what is listed is kept: all skipped games are counted.
        let room = list.saturating_sub(errors.len());
        errors.extend(summary.errors.into_iter().take(room));
    }
    for e in &errors {
        crate::say!(
            "  skipped: {}:{} (game {}): {}",
            e.file.display(),
            e.line,
            e.game,
            e.reason
        );
    }
    let unlisted = skipped.saturating_sub(errors.len() as u64);
    if unlisted > 0 {
        crate::say!("  ... and {unlisted} more skipped games");
    }
    if games == 0 && skipped > 0 {
        let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let title = format!("no game could be read ({skipped} skipped), nothing stored");
        let mut text = crate::common::listing(&title, &listed, list);
        if unlisted > 0 {
            text.push_str(&format!("\n  ... and {unlisted} more"));
        }
        anyhow::bail!("{text}");
    }
    let mut store = crate::common::open_for_writing(db, create)?;
    let existing: HashSet<u128> = store
        .kifu_keys()
        .context("cannot read the kifu set")?
        .into_iter()
        .map(|k| k.0)
        .collect();
    let mut new: Vec<Key> = keys
        .iter()
        .filter(|k| !existing.contains(*k))
        .map(|&k| Key(k))
        .collect();
    // Sorted so that the same files always store the same bytes.
    new.sort_unstable_by_key(|k| k.0);
    store
        .add_kifu_keys(&new)
        .context("cannot store the kifu positions")?;
    crate::say!(
        "games read {games}, skipped {skipped}; positions {positions}, distinct {}, added {} (kifu set now {})",
        keys.len(),
        new.len(),
        existing.len() + new.len()
    );
    Ok(())
}
