//! Temporary names the product writes under, and the cleaning of those an
//! interrupted run left behind.
//!
//! Every temporary file or directory (an export's `.NAME.…tmp` beside its
//! target, the export's sort directory, a backup's or migration's store being
//! written) carries [`tag`] in its name: `stera-partial-<pid>.`, the process that
//! writes it. A writer removes, in the directory it writes into, the leftovers
//! of processes that no longer run ([`clean_stale`]); nothing without the tag is
//! touched, so a user's `book.db.partial` or `.x.tmp` stays, and a directory is
//! removed only when it also holds [`INCOMPLETE_MARKER`] (an unfinished store
//! that this product began).

use std::path::{Path, PathBuf};

/// The part of a temporary name before the writer's process id.
pub const TAG_PREFIX: &str = "stera-partial-";

/// The file an unfinished store (a backup or migration being written) holds
/// until it is complete. A store directory holding it is refused by every open:
/// it is not a store yet, whatever sled files it has.
pub const INCOMPLETE_MARKER: &str = "STERA-INCOMPLETE";

/// The tag of this process's temporary names: `stera-partial-<pid>.`.
#[must_use]
pub fn tag() -> String {
    format!("{TAG_PREFIX}{}.", std::process::id())
}

/// The writer's process id in a temporary name of ours, if it is one.
fn writer_pid(name: &str) -> Option<u32> {
    let at = name.find(TAG_PREFIX)? + TAG_PREFIX.len();
    let rest = &name[at..];
    let end = rest.find('.')?;
    rest[..end].parse().ok()
}

/// Whether process `pid` runs (on Linux, by `/proc`; elsewhere every process is
/// taken to run, so nothing is removed).
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// Removes, in `dir`, the temporary files and unfinished stores this product's
/// processes that no longer run left behind (see the module doc). Returns what
/// it removed; what it cannot read or remove is left as it is.
#[must_use]
pub fn clean_stale(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(writer_pid) else {
            continue;
        };
        if running(pid) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let gone = if meta.is_dir() {
            let ours = path.join(INCOMPLETE_MARKER).is_file()
                || name.to_str().is_some_and(|n| n.starts_with(".book-sort."));
            ours && std::fs::remove_dir_all(&path).is_ok()
        } else if meta.is_file() {
            std::fs::remove_file(&path).is_ok()
        } else {
            false
        };
        if gone {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process id that is not running: a child that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn only_our_leftovers_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let d = dir.path();
        let stale_file = d.join(format!(".book.db2016.{TAG_PREFIX}{dead}.abc.tmp"));
        std::fs::write(&stale_file, b"x").unwrap();
        let stale_store = d.join(format!("b.db.{TAG_PREFIX}{dead}.xyz"));
        std::fs::create_dir(&stale_store).unwrap();
        std::fs::write(stale_store.join(INCOMPLETE_MARKER), b"").unwrap();
        // A directory with the tag but without the marker is not ours.
        let foreign_dir = d.join(format!("keep.{TAG_PREFIX}{dead}.dir"));
        std::fs::create_dir(&foreign_dir).unwrap();
        // Ours, but of a running process (this one).
        let live = d.join(format!(".x.{}abc.tmp", tag()));
        std::fs::write(&live, b"x").unwrap();
        // The user's own things.
        let user_partial = d.join("book.db.partial");
        std::fs::create_dir(&user_partial).unwrap();
        std::fs::write(user_partial.join("notes"), b"mine").unwrap();
        let user_tmp = d.join(".book.db2016.tmp");
        std::fs::write(&user_tmp, b"mine").unwrap();

        let mut removed = clean_stale(d);
        removed.sort();
        let mut expected = vec![stale_file.clone(), stale_store.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        for kept in [&foreign_dir, &live, &user_partial, &user_tmp] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(!stale_file.exists() && !stale_store.exists());
    }

    #[test]
    fn names_give_their_writer() {
        assert_eq!(writer_pid(".a.stera-partial-42.xyz.tmp"), Some(42));
        assert_eq!(writer_pid("a.partial"), None);
        assert_eq!(writer_pid("stera-partial-x.y"), None);
    }
}
