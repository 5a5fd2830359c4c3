//! Whether the store can take results: the free space of its file system.
//!
//! A coordinator whose disk filled kept handing out jobs and rejected every
//! result (10,884 rejections in 110 s, issue 26): sled cannot store on a full
//! disk, and once it has met one it fails until the store is reopened. So the
//! dispatcher asks [`StoreSpace::writable`] before it hands out work: below the
//! reserve (`--store-reserve-mb`) it hands out no think jobs (clients'
//! searches store nothing and go on), says so once in the log and the
//! dashboard's problems, shows `stera_coordinator_store_writable 0`, and
//! resumes by itself when space is back. Results of jobs already out are
//! still stored: the reserve is there for them, and the store refuses a write
//! it has no room for before sled sees it (`stera_book::space`).
//!
//! The store keeps a write margin of its own ([`SLED_SLACK`], 8 MiB): a reserve
//! below it would hand out jobs whose results the store then refuses, so it is
//! raised to the margin (and the log says so). Once full, jobs resume only when
//! [`RESUME_ABOVE_RESERVE`] more than the reserve is free: a disk near the
//! reserve does not flip between "full" and "space again" with every write.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stera_book::BookError;
use stera_book::space::SLED_SLACK;

use crate::registry::Registry;

/// How often the free space is read (a `statvfs`, a few microseconds).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How much more than the reserve must be free before a full store takes jobs
/// again (the store's write margin: room for a batch of results and sled's
/// own slack).
pub const RESUME_ABOVE_RESERVE: u64 = SLED_SLACK;

/// The space watch of the store's file system.
#[derive(Debug)]
pub struct StoreSpace {
    path: PathBuf,
    reserve: u64,
    writable: bool,
    checked: Option<Instant>,
    registry: Arc<Registry>,
}

impl StoreSpace {
    /// Watches the file system of the store directory `path`; jobs stop while
    /// less than `reserve` bytes are free, and resume when `reserve` plus
    /// [`RESUME_ABOVE_RESERVE`] are.
    /// A reserve below the store's write margin ([`SLED_SLACK`]) is raised to it.
    #[must_use]
    pub fn new(path: PathBuf, reserve: u64, registry: Arc<Registry>) -> Self {
        let reserve = if reserve < SLED_SLACK {
            tracing::warn!(
                reserve,
                margin = SLED_SLACK,
                "--store-reserve-mb is below the store's own write margin of {} MiB (every \
                 write needs that much free besides its data): the reserve is raised to {} MiB",
                SLED_SLACK >> 20,
                SLED_SLACK >> 20
            );
            SLED_SLACK
        } else {
            reserve
        };
        registry.counters.store_writable.store(1, Ordering::Relaxed);
        Self {
            path,
            reserve,
            writable: true,
            checked: None,
            registry,
        }
    }

    /// Whether jobs whose results must be stored may be handed out now (the
    /// free space is read at most every [`CHECK_EVERY`]).
    pub fn writable(&mut self) -> bool {
        let due = self.checked.is_none_or(|t| t.elapsed() >= CHECK_EVERY);
        if due {
            self.checked = Some(Instant::now());
            match stera_book::space::available_bytes(&self.path) {
                Ok(free) => self.observe(free),
                Err(e) => tracing::warn!(error = %e, "cannot read the store's free space"),
            }
        }
        self.writable
    }

    /// Takes `free` bytes on the store's file system into account, with the
    /// hysteresis of [`RESUME_ABOVE_RESERVE`].
    fn observe(&mut self, free: u64) {
        let needed = if self.writable {
            self.reserve
        } else {
            self.resume_at()
        };
        self.set(free >= needed, free, None);
    }

    /// The free space at which a full store takes jobs again.
    fn resume_at(&self) -> u64 {
        self.reserve.saturating_add(RESUME_ABOVE_RESERVE)
    }

    /// A store write failed: one for want of space stops the jobs at once
    /// (the next check resumes them when space is back).
    pub fn write_failed(&mut self, error: &BookError) {
        if matches!(error, BookError::Space(_)) {
            let free = stera_book::space::available_bytes(&self.path).unwrap_or(0);
            self.checked = Some(Instant::now());
            self.set(false, free, Some(error));
        }
    }

    fn set(&mut self, writable: bool, free: u64, error: Option<&BookError>) {
        if writable == self.writable {
            return;
        }
        self.writable = writable;
        self.registry
            .counters
            .store_writable
            .store(u64::from(writable), Ordering::Relaxed);
        let store = self.path.display().to_string();
        if writable {
            tracing::warn!(
                %store,
                free,
                reserve = self.reserve,
                "the store's disk has space again: handing out jobs again"
            );
        } else {
            let message = format!(
                "the store's disk is full: {free} bytes free on the file system of {store}, under the reserve of {} (--store-reserve-mb); no jobs are handed out until {} bytes are free{}",
                self.reserve,
                self.resume_at(),
                error.map_or_else(String::new, |e| format!(" ({e})"))
            );
            tracing::error!(%store, free, reserve = self.reserve, "{message}");
            self.registry
                .record_problem(crate::registry::ProblemKind::StoreFull, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn space(reserve_mb: u64) -> StoreSpace {
        StoreSpace::new(
            PathBuf::from("store"),
            reserve_mb * MIB,
            Arc::new(Registry::default()),
        )
    }

    #[test]
    fn a_reserve_below_the_write_margin_is_raised_to_it() {
        assert_eq!(space(0).reserve, SLED_SLACK);
        assert_eq!(space(1).reserve, SLED_SLACK);
        assert_eq!(space(8).reserve, 8 * MIB);
        assert_eq!(space(64).reserve, 64 * MIB);
        // Free space above the asked reserve but below the margin: full.
        let mut s = space(1);
        s.observe(4 * MIB);
        assert!(!s.writable);
    }

    #[test]
    fn the_full_state_does_not_flap_near_the_reserve() {
        let mut s = space(64);
        let mut changes = 0;
        let mut last = s.writable;
        // Free space wobbling around the reserve as results are written and
        // sled rewrites its segments.
        for free in [65, 63, 65, 64, 63, 66, 70, 71, 63, 64, 65] {
            s.observe(free * MIB);
            if s.writable != last {
                changes += 1;
                last = s.writable;
            }
        }
        assert_eq!(changes, 1, "full once, and staying full");
        assert!(!s.writable);
        assert_eq!(
            s.registry.counters.store_writable.load(Ordering::Relaxed),
            0
        );
        // Space enough above the reserve: jobs again.
        s.observe(72 * MIB);
        assert!(s.writable);
        assert_eq!(
            s.registry.counters.store_writable.load(Ordering::Relaxed),
            1
        );
        s.observe(64 * MIB);
        assert!(s.writable, "at the reserve a writable store stays writable");
    }
}
