//! Exports from the live book, so a user gets a fresh book while generation runs
//! for months: on request (the Export RPC), periodically, and at the end of a run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stera_book::store_path::BoundTarget;
use stera_book::terashock::{BookFormat, ExportOptions, NodeExtras, export_book};
use stera_book::{
    Book, ExportLedger, FileFingerprint, LiveBook, NodeStore, OpponentId, OpponentSelection,
    SledReader, SledStore,
};
use stera_proto::v1::{ExportReply, ExportRequest};
use stera_service::export::{ExportChoice, FormatChoice};

use super::{ExportFn, ExportJob, MaintenanceError};

/// An export request that names a choice this coordinator does not know (a
/// client newer than it, or a corrupt message), or a temperature out of range.
pub use stera_service::export::ExportChoiceError as ExportRequestError;

/// The softmax temperature an export request without one gets.
pub use stera_service::export::DEFAULT_TEMPERATURE as DEFAULT_EXPORT_TEMPERATURE;

/// The file a request asks for: by its format, or by the path's extension when
/// it names none (`.ybb` a binary book, anything else text).
///
/// # Errors
/// An unknown format value.
pub fn format_of(request: &ExportRequest) -> Result<BookFormat, ExportRequestError> {
    Ok(FormatChoice::from_proto(request.format)?.book_format(Path::new(&request.path)))
}

/// The export options a request asks for.
///
/// # Errors
/// An unknown backup, weights or format value, a negative or non-finite
/// temperature.
pub fn options_of(request: &ExportRequest) -> Result<ExportOptions, ExportRequestError> {
    Ok(ExportChoice::from_request(request)?.options())
}

/// The exporter of the coordinator. On the dispatcher thread it only checks the
/// request and takes a snapshot of the book (a clone that shares the node tables,
/// see [`stera_book::Book`]) and a reader of the store; the job it returns runs on
/// the export thread while selection and result intake go on. `store` is the
/// store's directory: whatever asked for the export, nothing is written inside
/// it or inside another store.
#[must_use]
pub fn book_exporter(store: PathBuf) -> ExportFn<SledStore> {
    Box::new(move |live: &LiveBook<SledStore>, request: &ExportRequest| {
        // Bound now, on the dispatcher thread: the export thread writes into
        // the directory checked here, whatever becomes of its path meanwhile.
        let target = BoundTarget::open(Path::new(&request.path), Some(&store))?;
        // A file there that this store did not write (a book of another store,
        // anything a user keeps) is never replaced, as at start (`--export`).
        let ledger = live.store().export_ledger();
        if let Some(why) = not_ours(&ledger, &target.write_path()) {
            return Err(MaintenanceError::NotOurExport {
                path: target.path().to_path_buf(),
                why,
            });
        }
        let choice = ExportChoice::from_request(request)?;
        let options = choice.options();
        let format = format_of(request)?;
        // Resolved here, against the store as it is: a listed opponent it does
        // not know is refused with the ones it knows, before anything is written.
        let opponents = if options.needs_learning() {
            choice
                .opponents
                .resolve(&live.store().opponents()?)
                .map_err(MaintenanceError::Opponents)?
        } else {
            Vec::new()
        };
        let book = live.book().clone();
        let reader = live.store().reader();
        let request = request.clone();
        let job: ExportJob = Box::new(move || {
            let learning = Learning {
                opponents: &opponents,
                named: &choice.opponents,
            };
            let reply = export_snapshot(
                &book, &reader, &request, &target, format, &options, learning,
            )?;
            record_export(&ledger, &target);
            Ok(reply)
        });
        Ok(job)
    })
}

/// Notes in the store's ledger that it wrote the file at `target`, so that a
/// later start with `--export` there may replace it (see [`check_export_owned`]).
/// A failure leaves the file unrecorded: said, since the next start refuses it.
fn record_export(ledger: &ExportLedger, target: &BoundTarget) {
    let written = target.write_path();
    // Through the directory's handle: the real path of the file written.
    let recorded = written
        .canonicalize()
        .and_then(|resolved| FileFingerprint::of_file(&written).map(|print| (resolved, print)));
    let result = recorded
        .map_err(|e| e.to_string())
        .and_then(|(resolved, print)| ledger.record(&resolved, print).map_err(|e| e.to_string()));
    if let Err(e) = result {
        tracing::warn!(
            path = %target.path().display(),
            error = %e,
            "the export is written but the store could not note that it wrote it: a coordinator started later with this --export will refuse to replace it (move it away then)"
        );
    }
}

/// Why a start with `--export` is refused: a file is there that this store did
/// not write (or that changed since).
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to start: --export `{}` exists and is not a book this store (`{}`) wrote{why}; every export replaces that file, so it would be lost. If it is a book to keep (check --db: a typo starts another store), move it away or give another --export path; if it is an old export of this book you no longer need, delete it",
    path.display(),
    store.display()
)]
pub struct NotOurExport {
    path: PathBuf,
    store: PathBuf,
    why: String,
}

/// Refuses `--export` when `path` (as given; `resolved` by the output path
/// checks) is an existing file that the store's ledger does not list as its
/// last export there, byte for byte. Nothing there is fine.
///
/// # Errors
/// [`NotOurExport`], or the ledger or the file cannot be read (also a refusal:
/// what cannot be checked is not replaced).
pub fn check_export_owned(
    ledger: Option<&ExportLedger>,
    store: &Path,
    path: &Path,
    resolved: &Path,
) -> anyhow::Result<()> {
    let refuse = |why: String| NotOurExport {
        path: path.to_path_buf(),
        store: store.to_path_buf(),
        why: format!(" ({why})"),
    };
    match std::fs::symlink_metadata(resolved) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(refuse(format!("it cannot be examined: {e}")).into());
        }
        Ok(_) => {}
    }
    let Some(ledger) = ledger else {
        return Err(refuse("the store is new".to_owned()).into());
    };
    match not_ours(ledger, resolved) {
        None => Ok(()),
        Some(why) => Err(refuse(why).into()),
    }
}

/// Why the file at `path` (nothing there is fine) is not the book the store
/// whose ledger is `ledger` last wrote there, byte for byte; `None` when it is.
/// What cannot be checked counts as not ours: it is not replaced.
pub(crate) fn not_ours(ledger: &ExportLedger, path: &Path) -> Option<String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("it cannot be examined: {e}")),
        Ok(_) => {}
    }
    // The ledger keeps real paths (a bound target's is a handle's).
    let resolved = match path.canonicalize() {
        Ok(r) => r,
        Err(e) => return Some(format!("it cannot be examined: {e}")),
    };
    let recorded = match ledger.wrote(&resolved) {
        Ok(Some(recorded)) => recorded,
        Ok(None) => return Some("it wrote no book there".to_owned()),
        Err(e) => return Some(format!("its ledger cannot be read: {e}")),
    };
    match FileFingerprint::of_file(&resolved) {
        Err(e) => Some(format!("it cannot be read: {e}")),
        Ok(found) if found != recorded => Some(format!(
            "it is {} bytes with other contents than the {} bytes this store last wrote there: changed since",
            found.len, recorded.len
        )),
        Ok(_) => None,
    }
}

/// The learning opponents whose games an export by results reads.
struct Learning<'a> {
    opponents: &'a [OpponentId],
    /// As the request named them, for the log.
    named: &'a OpponentSelection,
}

/// Exports a snapshot of `book` whose extras and game counters are read from
/// `reader` (nodes past the snapshot are skipped; game counters are read as the
/// export finds them).
fn export_snapshot(
    book: &Book,
    reader: &SledReader,
    request: &ExportRequest,
    target: &BoundTarget,
    format: BookFormat,
    options: &ExportOptions,
    learning: Learning<'_>,
) -> Result<ExportReply, MaintenanceError> {
    let start = Instant::now();
    let mut extras =
        NodeExtras::scan_first(|visit| reader.for_each_node(visit), book.len(), request.raw)?;
    if options.needs_games() {
        extras
            .scan_games(|f| reader.for_each_game_count(f), book)
            .map_err(MaintenanceError::GameResults)?;
    }
    if options.needs_learning() {
        tracing::debug!(opponents = %learning.named, "export valued by learning results");
        for &opponent in learning.opponents {
            extras
                .scan_learning(|f| reader.for_each_learning_count(opponent, f))
                .map_err(MaintenanceError::GameResults)?;
        }
    }
    let mut last_log = Instant::now();
    let mut progress = |phase: &'static str, done: u64, total: u64| {
        if last_log.elapsed() >= Duration::from_secs(10) {
            last_log = Instant::now();
            tracing::info!(phase, done, total, "exporting");
        }
    };
    let summary = export_book(
        book,
        &extras,
        &target.write_path(),
        format,
        options,
        &mut progress,
    )
    .map_err(|e| MaintenanceError::Write {
        path: target.path().to_path_buf(),
        detail: target.shown(&format!("{:#}", anyhow::Error::from(e))),
    })?;
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
    use stera_book::terashock::{Backup, Weights};
    use stera_proto::v1::{ExportBackup, ExportWeights};

    fn request(backup: ExportBackup, weights: ExportWeights, temperature: f64) -> ExportRequest {
        ExportRequest {
            path: "x".into(),
            backup: backup.into(),
            weights: weights.into(),
            temperature: Some(temperature),
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
        // 0 asks for minimax, as the flags' 0 does, not for the default.
        assert!(o.temperature == 0.0, "{}", o.temperature);
        let err =
            options_of(&request(ExportBackup::Minimax, ExportWeights::One, -1.0)).unwrap_err();
        assert!(err.to_string().contains("temperature"), "{err}");
        let unknown = ExportRequest {
            weights: 9,
            ..ExportRequest::default()
        };
        assert!(
            options_of(&unknown)
                .unwrap_err()
                .to_string()
                .contains("unknown export weights 9")
        );
    }
}
