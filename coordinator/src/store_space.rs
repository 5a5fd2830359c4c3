//! Whether the store can take results: the free space of its file system.
//!
//! A coordinator whose disk filled kept handing out jobs and rejected every
//! result (10,884 rejections in 110 s, issue 26): sled cannot store on a full
//! disk, and once it has met one it fails until the store is reopened. So the
//! dispatcher asks [`StoreSpace::writable`] before it hands out work: below the
//! reserve (`--store-reserve-mb`) it hands out no think or play jobs (clients'
//! searches store nothing and go on), says so once in the log and the
//! dashboard's problems, shows `stera_coordinator_store_writable 0`, and
//! resumes by itself when space is back. Results of jobs already out are
//! still stored: the reserve is there for them, and the store refuses a write
//! it has no room for before sled sees it (`stera_book::space`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stera_book::BookError;

use crate::registry::Registry;

/// How often the free space is read (a `statvfs`, a few microseconds).
const CHECK_EVERY: Duration = Duration::from_secs(1);

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
    /// less than `reserve` bytes are free.
    #[must_use]
    pub fn new(path: PathBuf, reserve: u64, registry: Arc<Registry>) -> Self {
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
                Ok(free) => self.set(free >= self.reserve, free, None),
                Err(e) => tracing::warn!(error = %e, "cannot read the store's free space"),
            }
        }
        self.writable
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
                "the store's disk is full: {free} bytes free on the file system of {store}, under the reserve of {} (--store-reserve-mb); no jobs are handed out until space is freed{}",
                self.reserve,
                error.map_or_else(String::new, |e| format!(" ({e})"))
            );
            tracing::error!(%store, free, reserve = self.reserve, "{message}");
            self.registry
                .record_problem(crate::registry::ProblemKind::StoreFull, message);
        }
    }
}
