//! Exports from the live book, so a user gets a fresh book while generation runs
//! for months: on request (the Export RPC), periodically, and at the end of a run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use stera_book::NodeStore;
use stera_book::terashock::{Backup, BookFormat, ExportOptions, NodeExtras, Weights, export_book};
use stera_book::{Book, Selector, SledReader, SledStore};
use stera_proto::v1::{
    BackupReply, ExportBackup, ExportFormat, ExportReply, ExportRequest, ExportWeights,
};

use crate::dispatcher::{ExportFn, ExportJob, Job};
use crate::registry::Registry;

/// The coordinator's backups. On the dispatcher thread: the path check and a
/// snapshot of the store (its node count and a copy of the small trees, see
/// [`SledStore::backup_snapshot`]); on the maintenance thread: the copy, while
/// results keep being stored. `store` is the store's directory, which a backup
/// must not land in.
#[must_use]
pub fn store_backup(store: PathBuf) -> crate::dispatcher::BackupFn<SledStore> {
    Box::new(move |selector: &Selector<SledStore>, path: &Path| {
        let start = Instant::now();
        stera_book::store_path::check_output_path(path, &store).map_err(|e| e.to_string())?;
        if path.exists() {
            return Err(format!("backup target `{}` exists already", path.display()));
        }
        let snapshot = selector
            .store()
            .backup_snapshot()
            .map_err(|e| e.to_string())?;
        let path = path.to_owned();
        let job: Job<BackupReply> = Box::new(move || {
            let summary = snapshot.write_to(&path).map_err(|e| e.to_string())?;
            Ok(BackupReply {
                path: path.display().to_string(),
                entries: summary.entries,
                nodes: summary.nodes,
                elapsed_ms: u32::try_from(start.elapsed().as_millis()).unwrap_or(u32::MAX),
            })
        });
        Ok(job)
    })
}

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
pub fn store_compaction(
    policy: CompactPolicy,
    registry: Arc<Registry>,
) -> crate::dispatcher::CompactFn<SledStore> {
    // Where the next pass starts: every chunk before it is large already.
    let from = Arc::new(AtomicU32::new(0));
    let mut due_at: Option<u32> = None;
    Box::new(move |selector: &Selector<SledStore>| {
        if policy.every == 0 {
            return None;
        }
        let len = selector.store().len();
        // The first pass comes at once: chunks left small by an earlier run (or
        // one without compaction) are merged too.
        let due = *due_at.get_or_insert(0);
        if len < due {
            return None;
        }
        due_at = Some(len.saturating_add(policy.every));
        let compactor = selector.store().compactor();
        let (from, registry) = (from.clone(), registry.clone());
        let job: Job<usize> = Box::new(move || {
            let pass = compactor
                .compact_from(from.load(Ordering::Relaxed), policy.min_records)
                .map_err(|e| e.to_string())?;
            from.store(pass.next_from, Ordering::Relaxed);
            registry.record_compaction(pass.removed);
            Ok(pass.removed)
        });
        Some(job)
    })
}

/// The file a request asks for: by its format, or by the path's extension when
/// it names none (`.ybb` a binary book, anything else text).
///
/// # Errors
/// An unknown format value.
pub fn format_of(request: &ExportRequest) -> Result<BookFormat, String> {
    let ybb = match ExportFormat::try_from(request.format) {
        Ok(ExportFormat::ByExtension) => Path::new(&request.path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ybb")),
        Ok(ExportFormat::Db2016) => false,
        Ok(ExportFormat::Ybb) => true,
        Err(_) => return Err(format!("unknown export format {}", request.format)),
    };
    Ok(if ybb {
        BookFormat::Ybb
    } else {
        BookFormat::Db2016
    })
}

/// The softmax temperature an export request of 0 gets.
pub const DEFAULT_EXPORT_TEMPERATURE: f64 = 50.0;

/// The export options a request asks for.
///
/// # Errors
/// An unknown backup or weights value, a negative or non-finite temperature.
pub fn options_of(request: &ExportRequest) -> Result<ExportOptions, String> {
    let backup = match ExportBackup::try_from(request.backup) {
        Ok(ExportBackup::Minimax) => Backup::Minimax,
        Ok(ExportBackup::Softmax) => Backup::Softmax,
        Err(_) => return Err(format!("unknown export backup {}", request.backup)),
    };
    let weights = match ExportWeights::try_from(request.weights) {
        Ok(ExportWeights::Default) if backup == Backup::Softmax => Weights::Policy,
        Ok(ExportWeights::Default | ExportWeights::One) => Weights::One,
        Ok(ExportWeights::Policy) => Weights::Policy,
        Ok(ExportWeights::Ndf) => Weights::Ndf,
        Err(_) => return Err(format!("unknown export weights {}", request.weights)),
    };
    let temperature = if request.temperature == 0.0 {
        DEFAULT_EXPORT_TEMPERATURE
    } else {
        request.temperature
    };
    if !(temperature.is_finite() && temperature > 0.0) {
        return Err(format!(
            "the export temperature must be a positive number, not {}",
            request.temperature
        ));
    }
    Ok(ExportOptions {
        shrink: request.shrink,
        raw: request.raw,
        backup,
        weights,
        temperature,
    })
}

/// The exporter of the coordinator. On the dispatcher thread it only checks the
/// request and takes a snapshot of the book (a clone that shares the node tables,
/// see [`stera_book::Book`]) and a reader of the store; the job it returns runs on
/// the export thread while selection and result intake go on. `store` is the
/// store's directory: whatever asked for the export, nothing is written inside
/// it or inside another store.
#[must_use]
pub fn book_exporter(store: PathBuf) -> ExportFn<SledStore> {
    Box::new(
        move |selector: &Selector<SledStore>, request: &ExportRequest| {
            stera_book::store_path::check_output_path(Path::new(&request.path), &store)
                .map_err(|e| e.to_string())?;
            let options = options_of(request)?;
            let format = format_of(request)?;
            let book = selector.book().clone();
            let reader = selector.store().reader();
            let request = request.clone();
            let job: ExportJob =
                Box::new(move || export_snapshot(&book, &reader, &request, format, &options));
            Ok(job)
        },
    )
}

/// Exports a snapshot of `book` whose extras and game counters are read from
/// `reader` (nodes past the snapshot are skipped; game counters are read as the
/// export finds them).
fn export_snapshot(
    book: &Book,
    reader: &SledReader,
    request: &ExportRequest,
    format: BookFormat,
    options: &ExportOptions,
) -> Result<ExportReply, String> {
    let start = Instant::now();
    let mut extras =
        NodeExtras::scan_first(|visit| reader.for_each_node(visit), book.len(), request.raw)
            .map_err(|e| e.to_string())?;
    if options.weights == Weights::Ndf {
        extras
            .scan_games(|f| reader.for_each_game_count(f), book)
            .map_err(|e| format!("cannot read the game results: {e}"))?;
    }
    let out = Path::new(&request.path);
    let mut last_log = Instant::now();
    let mut progress = |phase: &'static str, done: u64, total: u64| {
        if last_log.elapsed() >= Duration::from_secs(10) {
            last_log = Instant::now();
            tracing::info!(phase, done, total, "exporting");
        }
    };
    let summary = export_book(book, &extras, out, format, options, &mut progress)
        .map_err(|e| e.to_string())?;
    let written = summary.written;
    Ok(ExportReply {
        path: request.path.clone(),
        entries: written.entries_written,
        moves: written.moves_written,
        elapsed_ms: u32::try_from(start.elapsed().as_millis()).unwrap_or(u32::MAX),
        nodes: book.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(backup: ExportBackup, weights: ExportWeights, temperature: f64) -> ExportRequest {
        ExportRequest {
            path: "x".into(),
            backup: backup.into(),
            weights: weights.into(),
            temperature,
            ..ExportRequest::default()
        }
    }

    #[test]
    fn a_request_asks_for_its_backup_weights_and_temperature() {
        let o = options_of(&ExportRequest::default()).unwrap();
        assert_eq!((o.backup, o.weights), (Backup::Minimax, Weights::One));
        assert!((o.temperature - DEFAULT_EXPORT_TEMPERATURE).abs() < f64::EPSILON);
        let o = options_of(&request(
            ExportBackup::Softmax,
            ExportWeights::Default,
            20.0,
        ))
        .unwrap();
        assert_eq!((o.backup, o.weights), (Backup::Softmax, Weights::Policy));
        assert!((o.temperature - 20.0).abs() < f64::EPSILON);
        let o = options_of(&request(ExportBackup::Minimax, ExportWeights::Ndf, 0.0)).unwrap();
        assert_eq!(o.weights, Weights::Ndf);
        let err =
            options_of(&request(ExportBackup::Minimax, ExportWeights::One, -1.0)).unwrap_err();
        assert!(err.contains("temperature"), "{err}");
        let unknown = ExportRequest {
            weights: 9,
            ..ExportRequest::default()
        };
        assert!(
            options_of(&unknown)
                .unwrap_err()
                .contains("unknown export weights 9")
        );
    }
}
