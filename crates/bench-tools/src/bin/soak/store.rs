//! The store: the copy the soak runs on, and what it holds afterwards.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use stera_book::{Book, NodeStore, SledStore};
use stera_rules::Position;

pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<u64> {
    std::fs::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut bytes = 0;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            bytes += copy_dir(&src, &dst)?;
        } else if kind.is_file() {
            bytes += std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        } else {
            bail!("{} is neither a file nor a directory", src.display());
        }
    }
    Ok(bytes)
}

/// Nodes and games of a closed store.
pub(crate) fn store_counts(db: &Path) -> Result<(u64, u64)> {
    let store = SledStore::open_existing(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    Ok((u64::from(store.len()), store.games_recorded()?))
}

/// Which acknowledged positions the closed store lacks; its nodes and games.
pub(crate) fn check_store(db: &Path, acked: &[String]) -> Result<(Vec<String>, u64, u64)> {
    let store = SledStore::open_existing(db)
        .with_context(|| format!("cannot reopen the store {}", db.display()))?;
    let games = store.games_recorded()?;
    let book = Book::load(&store).context("cannot load the book")?;
    let mut missing = Vec::new();
    for sfen in acked {
        let key = Position::from_sfen(sfen)
            .with_context(|| format!("acknowledged position `{sfen}`"))?
            .key();
        if !book.contains(key) {
            missing.push(sfen.clone());
        }
    }
    Ok((missing, book.len() as u64, games))
}

pub(crate) fn side_path(out: &Path, suffix: &str) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}
