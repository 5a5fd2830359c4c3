//! `book-tools backup`: a stopped store copied into a new store, every tree
//! (positions, roots, bans, kifu, game results), as the coordinator's online
//! backup writes it. A running coordinator's store is backed up with
//! `remote backup`.

use std::path::PathBuf;

use anyhow::{Context, Result};

use stera_book::store_path::directory_size;

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    /// The store to copy (not one a running coordinator holds: use `remote backup`).
    #[arg(long)]
    db: PathBuf,
    /// The new store directory; must not exist. Written under a temporary name
    /// (`OUT.stera-partial-<pid>.<n>`, which no open takes for a store) and
    /// renamed when complete.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    if stera_book::store_path::exists_outside_stores(&args.out, &args.db)
        .map_err(|e| anyhow::anyhow!("{e}"))?
    {
        anyhow::bail!(
            "`{}` exists already: a backup is written into a new directory; choose a name that does not exist",
            args.out.display()
        );
    }
    // Bound now: the copy is written into the directory checked here, whatever
    // becomes of its path meanwhile.
    let target = stera_book::store_path::BoundTarget::open(&args.out, Some(&args.db))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let out = target.write_path();
    let store = common::open_for_reading(&args.db)?;
    let before = directory_size(&args.db)
        .with_context(|| format!("cannot measure {}", args.db.display()))?;
    let summary = store.backup_to(&out).map_err(|e| {
        anyhow::anyhow!(
            "cannot back up {} to {}: {}",
            args.db.display(),
            args.out.display(),
            target.shown(&e.to_string())
        )
    })?;
    if summary.leftovers_removed > 0 {
        crate::tell!(
            "backup: removed {} leftover(s) of interrupted backups or exports beside {}",
            summary.leftovers_removed,
            args.out.display()
        );
    }
    let after =
        directory_size(&out).with_context(|| format!("cannot measure {}", args.out.display()))?;
    crate::say!(
        "backup: {} positions, {} entries; {} -> {} bytes on disk ({})",
        summary.nodes,
        summary.entries,
        before,
        after,
        args.out.display()
    );
    Ok(())
}
