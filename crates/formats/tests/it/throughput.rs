//! Throughput figures on a large synthetic book (run by hand:
//! `cargo test -p stera-formats --test it -- throughput:: --ignored --nocapture`; the test
//! profile is optimised).

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_formats::db2016::{BookEntry, BookMove, Db2016Reader, SortOptions, SortingWriter};
use stera_rules::Position;

/// Distinct positions from seeded random games (SFEN text and moves as a real export
/// would have them).
fn synthetic_entries(count: usize) -> Vec<BookEntry> {
    let mut rng = StdRng::seed_from_u64(42);
    let mut out = Vec::with_capacity(count);
    let mut seen = std::collections::HashSet::new();
    while out.len() < count {
        let mut pos = Position::startpos();
        for _ in 0..60 {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            if seen.insert(pos.to_sfen()) {
                let mut entry = BookEntry::new(&pos);
                for _ in 0..3 {
                    let mut m = BookMove::new(legal[rng.random_range(0..legal.len())]);
                    m.value = rng.random_range(-500..500);
                    m.depth = rng.random_range(0..30);
                    entry.push_move(m);
                }
                out.push(entry);
                if out.len() == count {
                    break;
                }
            }
            pos.do_move(legal[rng.random_range(0..legal.len())]);
        }
    }
    out
}

#[test]
#[ignore = "throughput measurement, about a minute"]
fn million_entry_sort_write_read() {
    let count = 1_000_000;
    let started = Instant::now();
    let entries = synthetic_entries(count);
    println!("generated {count} entries in {:?}", started.elapsed());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let started = Instant::now();
    let options = SortOptions {
        run_memory_bytes: 64 << 20,
        ..SortOptions::default()
    };
    let mut writer = SortingWriter::create(&path, options).unwrap();
    for e in entries {
        writer.write_entry(e).unwrap();
    }
    let summary = writer.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "sorting writer (64 MiB runs): {} entries, {} runs, {} MB in {:?}",
        summary.entries_written,
        summary.runs_spilled,
        size / 1_000_000,
        started.elapsed()
    );

    let started = Instant::now();
    let read = Db2016Reader::open(&path)
        .unwrap()
        .filter(Result::is_ok)
        .count();
    println!("reader: {read} entries in {:?}", started.elapsed());
    let started = Instant::now();
    let checked = Db2016Reader::open(&path)
        .unwrap()
        .with_legality_check(true)
        .filter(Result::is_ok)
        .count();
    println!(
        "reader with legality check: {checked} entries in {:?}",
        started.elapsed()
    );
    assert_eq!(read as u64, summary.entries_written);
    assert_eq!(checked, read);
}
