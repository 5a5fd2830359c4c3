//! `book-tools unban`: lifts quarantines (bans the coordinator made after a
//! position failed to evaluate on several workers), on a stopped store.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use stera_book::NodeStore;
use stera_rules::Position;

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory (not in use by a coordinator).
    #[arg(long)]
    db: PathBuf,
    /// Lift every quarantine.
    #[arg(long, conflicts_with = "sfen")]
    all: bool,
    /// Lift the quarantine of this position (as `book-tools stats` lists it).
    /// One of --all and --sfen is required.
    #[arg(long, value_name = "SFEN")]
    sfen: Option<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let wanted = match (&args.sfen, args.all) {
        (Some(sfen), false) => {
            let sfen = sfen.trim().strip_prefix("sfen ").unwrap_or(sfen.trim());
            let position = Position::from_sfen(sfen)
                .with_context(|| format!("--sfen `{sfen}` is not a position"))?;
            Some(position.key())
        }
        (None, true) => None,
        _ => bail!("say which quarantines to lift: --all or --sfen SFEN"),
    };
    let mut store = common::open_existing(&args.db)?;
    let quarantined = store
        .quarantined()
        .context("cannot read the quarantined positions")?;
    let mut lifted = 0usize;
    for (node, mv, note) in quarantined {
        let sfen = note.split_once('\t').map_or(note.as_str(), |(s, _)| s);
        if let Some(key) = wanted {
            let matches = Position::from_sfen(sfen).is_ok_and(|p| p.key() == key);
            if !matches {
                continue;
            }
        }
        store
            .unban(node, mv)
            .with_context(|| format!("cannot lift the quarantine of `{sfen}`"))?;
        crate::say!("lifted: sfen {sfen}");
        lifted += 1;
    }
    if lifted == 0 {
        if let Some(sfen) = &args.sfen {
            bail!("`{sfen}` is not quarantined in `{}`", args.db.display());
        }
        crate::say!("nothing is quarantined in `{}`", args.db.display());
    } else {
        crate::say!("{lifted} quarantine(s) lifted");
    }
    Ok(())
}
