//! Exports from the live book, so a user gets a fresh book while generation runs
//! for months: on request (the Export RPC), periodically, and at the end of a run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stera_book::terashock::{ExportOptions, NodeExtras, export_db2016};
use stera_book::{Selector, SledStore};
use stera_proto::v1::{ExportReply, ExportRequest};

use crate::dispatcher::ExportFn;

/// The exporter the coordinator runs in its dispatcher thread. Selection pauses
/// while it runs: the book must not change under the analysis. `store` is the
/// store's directory: whatever asked for the export, nothing is written inside it
/// or inside another store.
#[must_use]
pub fn book_exporter(store: PathBuf) -> ExportFn<SledStore> {
    Box::new(
        move |selector: &Selector<SledStore>, request: &ExportRequest| {
            let start = Instant::now();
            stera_book::store_path::check_output_path(Path::new(&request.path), &store)
                .map_err(|e| e.to_string())?;
            let extras =
                NodeExtras::scan(selector.store(), request.raw).map_err(|e| e.to_string())?;
            let options = ExportOptions {
                shrink: request.shrink,
                raw: request.raw,
                ..ExportOptions::default()
            };
            let mut last_log = Instant::now();
            let summary = export_db2016(
                selector.book(),
                &extras,
                Path::new(&request.path),
                &options,
                &mut |phase, done, total| {
                    if last_log.elapsed() >= Duration::from_secs(10) {
                        last_log = Instant::now();
                        tracing::info!(phase, done, total, "exporting");
                    }
                },
            )
            .map_err(|e| e.to_string())?;
            Ok(ExportReply {
                path: request.path.clone(),
                entries: summary.written.entries_written,
                moves: summary.written.moves_written,
                elapsed_ms: u32::try_from(start.elapsed().as_millis()).unwrap_or(u32::MAX),
            })
        },
    )
}
