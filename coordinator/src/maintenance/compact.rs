//! Compactions of the store: the small node chunks written since the last pass
//! (one per committed batch of results) merged on the maintenance thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use stera_book::{LiveBook, NodeStore, SledStore};

use super::{CompactFn, Job};
use crate::registry::Registry;

/// When the coordinator compacts its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactPolicy {
    /// A pass is due once this many positions were added since the last one;
    /// 0 turns compaction off.
    pub every: u32,
    /// A pass merges the chunks added since the last one into chunks of at least
    /// this many positions.
    pub min_records: u32,
}

/// The coordinator's compactions: every [`CompactPolicy::every`] new positions,
/// when the maintenance thread is idle, the small chunks written since the last
/// pass (one per committed batch of results) are merged on that thread.
#[must_use]
pub fn store_compaction(policy: CompactPolicy, registry: Arc<Registry>) -> CompactFn<SledStore> {
    // Where the next pass starts: every chunk before it is large already.
    let from = Arc::new(AtomicU32::new(0));
    let mut due_at: Option<u32> = None;
    Box::new(move |live: &LiveBook<SledStore>| {
        if policy.every == 0 {
            return None;
        }
        let len = live.store().len();
        // The first pass comes at once: chunks left small by an earlier run (or
        // one without compaction) are merged too.
        let due = *due_at.get_or_insert(0);
        if len < due {
            return None;
        }
        due_at = Some(len.saturating_add(policy.every));
        let compactor = live.store().compactor();
        let (from, registry) = (from.clone(), registry.clone());
        let job: Job<usize> = Box::new(move || {
            let pass = compactor.compact_from(from.load(Ordering::Relaxed), policy.min_records)?;
            from.store(pass.next_from, Ordering::Relaxed);
            registry.record_compaction(pass.removed);
            Ok(pass.removed)
        });
        Some(job)
    })
}
