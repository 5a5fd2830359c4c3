//! Round trips, order, duplicates and hand-corrupted files.

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use stera_rules::move16::Move16Error;
use stera_rules::packed_sfen::{self, PackedSfenError};
use stera_rules::{Move, Position};

use super::writer::Chunks;
use super::*;
use crate::db2016::{BookEntry, BookMove, clamp_value};

/// Positions from random games (hands, promotions, both sides to move), distinct.
fn random_positions(seed: u64, games: usize) -> Vec<Position> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = Position::startpos();
        for _ in 0..rng.random_range(0..=200) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.do_move(moves[rng.random_range(0..moves.len())]);
        }
        if seen.insert(pos.to_sfen_without_ply()) {
            out.push(pos);
        }
    }
    out
}

/// An entry with a random subset of the legal moves (drops and promotions first,
/// so they are in), values and depths beyond the format's ranges included.
fn random_entry(pos: &Position, rng: &mut StdRng) -> BookEntry {
    let mut entry = BookEntry::new(pos);
    let mut moves = pos.legal_moves();
    moves.sort_by_key(|m| !(m.is_drop() || m.is_promotion()));
    let n = rng.random_range(0..=moves.len().min(12));
    for &mv in &moves[..n] {
        entry.push_move(BookMove {
            mv,
            ponder: None,
            value: rng.random_range(-40_000..=40_000),
            depth: rng.random_range(-5..=70_000),
            count: rng.random_range(0..5),
        });
    }
    entry
}

/// What the reader gives back for `entry`: values clamped to ±32000, depths to
/// 0..=65535 (0 without depths), no ponder, count 0.
fn expected(entry: &BookEntry, with_depth: bool) -> BookEntry {
    let mut e = entry.clone();
    for m in &mut e.moves {
        m.value = clamp_value(i64::from(m.value));
        m.depth = if with_depth {
            m.depth.clamp(0, 65_535)
        } else {
            0
        };
        m.ponder = None;
        m.count = 0;
    }
    e
}

fn write(path: &Path, entries: &[BookEntry], options: YbbOptions) -> crate::db2016::WriteSummary {
    let mut writer = YbbWriter::create(path, options).unwrap();
    for e in entries {
        writer.write_entry(e).unwrap();
    }
    writer.finish().unwrap()
}

fn read_all(path: &Path) -> Vec<BookEntry> {
    YbbReader::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn round_trip_in_packed_sfen_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let positions = random_positions(11, 400);
    let mut entries: Vec<BookEntry> = positions
        .iter()
        .map(|p| random_entry(p, &mut rng))
        .collect();
    let drops = entries
        .iter()
        .flat_map(|e| &e.moves)
        .filter(|m| m.mv.is_drop())
        .count();
    let promotions = entries
        .iter()
        .flat_map(|e| &e.moves)
        .filter(|m| m.mv.is_promotion())
        .count();
    let white = entries.iter().filter(|e| e.sfen().contains(" w ")).count();
    let hands = entries.iter().filter(|e| !e.sfen().contains(" - ")).count();
    assert!(drops > 100 && promotions > 20 && white > 100 && hands > 100);
    entries.shuffle(&mut rng);

    for with_depth in [true, false] {
        let path = dir.path().join(format!("book-{with_depth}.ybb"));
        let summary = write(&path, &entries, YbbOptions { with_depth });
        assert_eq!(summary.entries_written, entries.len() as u64);
        let moves: usize = entries.iter().map(|e| e.moves.len()).sum();
        assert_eq!(summary.moves_written, moves as u64);
        let stride = if with_depth { 6 } else { 4 };
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            32 + 44 * entries.len() as u64 + stride * moves as u64
        );

        let mut want: Vec<BookEntry> = entries.iter().map(|e| expected(e, with_depth)).collect();
        want.sort_by_key(|e| packed_sfen::pack_sfen(e.sfen()).unwrap().0);
        let reader = YbbReader::open(&path).unwrap();
        assert_eq!(reader.has_depth(), with_depth);
        assert_eq!(reader.len(), entries.len() as u64);
        let got: Vec<BookEntry> = reader.collect::<Result<_, _>>().unwrap();
        assert_eq!(got, want);
        // Only the book is left in the directory: the spool and the temporary
        // file are gone.
        assert!(
            files_in(dir.path())
                .iter()
                .all(|p| p.extension().unwrap() == "ybb")
        );
    }
}

#[test]
fn index_is_in_memcmp_order_and_offsets_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.ybb");
    let mut rng = StdRng::seed_from_u64(3);
    let mut entries: Vec<BookEntry> = random_positions(5, 200)
        .iter()
        .map(|p| random_entry(p, &mut rng))
        .collect();
    entries.shuffle(&mut rng);
    write(&path, &entries, YbbOptions::default());
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..16], MAGIC);
    let n = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    assert_eq!(n, entries.len());
    assert_eq!(
        u64::from_le_bytes(bytes[24..32].try_into().unwrap()),
        FLAG_DEPTH
    );
    let mut expected_offset = 0u64;
    let mut previous: Option<&[u8]> = None;
    for i in 0..n {
        let rec = &bytes[32 + 44 * i..32 + 44 * (i + 1)];
        let packed: [u8; 32] = rec[..32].try_into().unwrap();
        if let Some(p) = previous {
            assert!(p < &rec[..32], "record {i} is not after record {}", i - 1);
        }
        previous = Some(&rec[..32]);
        // Moves are laid out in index order.
        assert_eq!(
            u64::from_le_bytes(rec[32..40].try_into().unwrap()),
            expected_offset
        );
        let ply = u16::from_le_bytes([rec[40], rec[41]]);
        let count = u16::from_le_bytes([rec[42], rec[43]]);
        expected_offset += 6 * u64::from(count);
        let sfen = packed_sfen::unpack_sfen(&packed, u32::from(ply)).unwrap();
        let entry = entries.iter().find(|e| e.sfen() == sfen).unwrap();
        assert_eq!(usize::from(count), entry.moves.len());
    }
    assert_eq!(bytes.len() as u64, 32 + 44 * n as u64 + expected_offset);
}

#[test]
fn exact_bytes_of_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.ybb");
    let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 w P 12").unwrap();
    let mut entry = BookEntry::new(&pos);
    let m = |usi: &str, value, depth| BookMove {
        value,
        depth,
        ..BookMove::new(usi.parse::<Move>().unwrap())
    };
    entry.moves = vec![m("5a4b", -7, 3), m("5a5b", 40_000, 70_000)];
    write(&path, &[entry], YbbOptions::default());
    let mut want = Vec::new();
    want.extend_from_slice(b"YANE-BINBOOK-V1\0");
    want.extend_from_slice(&1u64.to_le_bytes());
    want.extend_from_slice(&1u64.to_le_bytes());
    want.extend_from_slice(&pos.to_packed_sfen());
    want.extend_from_slice(&0u64.to_le_bytes());
    want.extend_from_slice(&12u16.to_le_bytes());
    want.extend_from_slice(&2u16.to_le_bytes());
    // 5a4b: to 4b = 3*9+1 = 28, from 5a = 36: 28 + 36*128.
    want.extend_from_slice(&(28u16 + (36 << 7)).to_le_bytes());
    want.extend_from_slice(&(-7i16).to_le_bytes());
    want.extend_from_slice(&3u16.to_le_bytes());
    // 5a5b: to 37; value clamped to 32000, depth to 65535.
    want.extend_from_slice(&(37u16 + (36 << 7)).to_le_bytes());
    want.extend_from_slice(&32_000i16.to_le_bytes());
    want.extend_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(std::fs::read(&path).unwrap(), want);
}

#[test]
fn duplicates_merge_and_the_smallest_ply_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.ybb");
    let m = |usi: &str, value| BookMove {
        value,
        depth: 1,
        ..BookMove::new(usi.parse::<Move>().unwrap())
    };
    let entry = |sfen: &str, moves: Vec<BookMove>| {
        let mut e = BookEntry::from_sfen(sfen).unwrap();
        e.moves = moves;
        e
    };
    let start = stera_rules::STARTPOS_SFEN;
    let later = start.replace(" 1", " 9");
    let other = "4k4/9/9/9/9/9/9/9/4K4 b G 3";
    let summary = write(
        &path,
        &[
            entry(&later, vec![m("1g1f", 5)]),
            entry(start, vec![m("7g7f", 10), m("2g2f", 20)]),
            entry(other, vec![m("G*5b", 1)]),
            entry(start, vec![m("7g7f", 30), m("5g5f", 0)]),
        ],
        YbbOptions::default(),
    );
    assert_eq!(summary.entries_written, 2);
    assert_eq!(summary.duplicates_merged, 1);
    assert_eq!(summary.ply_duplicates_dropped, 1);
    let got = read_all(&path);
    let first = got.iter().find(|e| e.sfen() == start).unwrap();
    let moves: Vec<(String, i32)> = first
        .moves
        .iter()
        .map(|m| (m.mv.to_string(), m.value))
        .collect();
    assert_eq!(
        moves,
        [("7g7f".into(), 30), ("2g2f".into(), 20), ("5g5f".into(), 0)]
    );
}

/// Entries with repeats of the same ply (merged) and of later plies (dropped),
/// some without moves.
fn entries_with_duplicates(rng: &mut StdRng) -> Vec<BookEntry> {
    let positions = random_positions(13, 300);
    let mut entries: Vec<BookEntry> = positions.iter().map(|p| random_entry(p, rng)).collect();
    for p in positions.iter().step_by(4) {
        entries.push(random_entry(p, rng));
    }
    for p in positions.iter().step_by(7) {
        let later = random_entry(p, rng);
        let sfen = later.sfen().rsplit_once(' ').unwrap().0.to_owned();
        let mut e = BookEntry::from_sfen(&format!("{sfen} 999")).unwrap();
        e.moves = later.moves;
        entries.push(e);
    }
    entries.push(BookEntry::new(&positions[0]));
    entries.shuffle(rng);
    entries
}

#[test]
fn the_bytes_do_not_depend_on_how_finish_splits_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(17);
    let entries = entries_with_duplicates(&mut rng);
    let book = |name: &str, chunks: Option<Chunks>| {
        let path = dir.path().join(name);
        let mut writer = YbbWriter::create(&path, YbbOptions::default()).unwrap();
        if let Some(chunks) = chunks {
            writer = writer.with_chunks(chunks);
        }
        for e in &entries {
            writer.write_entry(e).unwrap();
        }
        let summary = writer.finish().unwrap();
        (std::fs::read(&path).unwrap(), summary, path)
    };
    let (bytes, summary, path) = book("default.ybb", None);
    // Many windows of many tasks, tasks of one record, one task a window.
    for (i, (records, per_window)) in [(7, 5), (1, 3), (3, 1), (1, 1)].into_iter().enumerate() {
        let (split, split_summary, _) = book(
            &format!("split-{i}.ybb"),
            Some(Chunks {
                records,
                per_window,
            }),
        );
        assert!(split == bytes, "chunks of {records}, {per_window} a window");
        assert_eq!(split_summary, summary);
    }

    // What the duplicate rule makes of them: per position the smallest ply's
    // entries, merged in the order given.
    let mut want: Vec<BookEntry> = Vec::new();
    for e in &entries {
        let packed = packed_sfen::pack_sfen(e.sfen()).unwrap();
        match want
            .iter_mut()
            .find(|w| packed_sfen::pack_sfen(w.sfen()).unwrap().0 == packed.0)
        {
            Some(w) if packed_sfen::pack_sfen(w.sfen()).unwrap().1 > packed.1 => *w = e.clone(),
            Some(w) if packed_sfen::pack_sfen(w.sfen()).unwrap().1 == packed.1 => {
                for m in &e.moves {
                    w.push_move(*m);
                }
            }
            Some(_) => {}
            None => want.push(e.clone()),
        }
    }
    let mut want: Vec<BookEntry> = want.iter().map(|e| expected(e, true)).collect();
    want.sort_by_key(|e| packed_sfen::pack_sfen(e.sfen()).unwrap().0);
    assert!(summary.duplicates_merged > 50 && summary.ply_duplicates_dropped > 30);
    assert_eq!(summary.entries_written, want.len() as u64);
    assert_eq!(read_all(&path), want);
}

#[test]
fn books_without_moves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.ybb");
    assert_eq!(write(&path, &[], YbbOptions::default()).entries_written, 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 32);
    assert!(read_all(&path).is_empty());
    let no_moves: Vec<BookEntry> = random_positions(19, 20)
        .iter()
        .map(BookEntry::new)
        .collect();
    let summary = write(&path, &no_moves, YbbOptions::default());
    assert_eq!(
        (summary.entries_written, summary.moves_written),
        (no_moves.len() as u64, 0)
    );
    assert_eq!(read_all(&path).len(), no_moves.len());
}

#[test]
fn an_unfinished_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.ybb");
    std::fs::write(&path, b"previous").unwrap();
    let mut writer = YbbWriter::create(&path, YbbOptions::default()).unwrap();
    writer
        .write_entry(&BookEntry::from_sfen(stera_rules::STARTPOS_SFEN).unwrap())
        .unwrap();
    assert_eq!(files_in(dir.path()).len(), 2, "the spool beside the book");
    drop(writer);
    assert_eq!(files_in(dir.path()), std::slice::from_ref(&path));
    assert_eq!(std::fs::read(&path).unwrap(), b"previous");
}

/// A book of three start-like entries, and its bytes.
fn small_book(dir: &Path) -> (PathBuf, Vec<u8>) {
    let path = dir.join("small.ybb");
    let mut entries = Vec::new();
    for line in [&["7g7f"][..], &["2g2f", "8c8d"], &["7g7f", "3c3d", "8h2b+"]] {
        let mut pos = Position::startpos();
        for usi in line {
            let mv = pos.parse_move(usi).unwrap();
            pos.do_move(mv);
        }
        let mut e = BookEntry::new(&pos);
        for mv in pos.legal_moves().into_iter().take(3) {
            e.push_move(BookMove::new(mv));
        }
        entries.push(e);
    }
    write(&path, &entries, YbbOptions::default());
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// Writes `bytes` to a new file and reads it back whole.
fn read_bytes(dir: &Path, bytes: &[u8]) -> (Result<YbbReader, YbbError>, PathBuf) {
    let path = dir.join("corrupt.ybb");
    std::fs::write(&path, bytes).unwrap();
    (YbbReader::open(&path), path)
}

fn record_offset(i: usize) -> usize {
    32 + 44 * i
}

#[test]
fn corrupt_headers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, good) = small_book(dir.path());

    let mut magic = good.clone();
    magic[3] = b'X';
    let err = read_bytes(dir.path(), &magic).0.err().unwrap();
    assert!(matches!(err, YbbError::BadMagic { .. }), "{err}");
    assert!(err.to_string().contains("YANX-BINBOOK-V1\\x00"), "{err}");

    let err = read_bytes(dir.path(), &good[..20]).0.err().unwrap();
    assert!(
        matches!(
            err,
            YbbError::Truncated {
                start: 0,
                end: 32,
                len: 20,
                ..
            }
        ),
        "{err}"
    );

    let mut flags = good.clone();
    flags[24] = 3;
    let err = read_bytes(dir.path(), &flags).0.err().unwrap();
    assert!(matches!(err, YbbError::BadFlags { flags: 3, .. }), "{err}");

    // An index longer than the file (and a count that overflows).
    let err = read_bytes(dir.path(), &good[..record_offset(2) + 10])
        .0
        .err()
        .unwrap();
    assert!(
        matches!(err, YbbError::Truncated { end, .. } if end == record_offset(3) as u64),
        "{err}"
    );
    assert!(err.to_string().contains("the index of 3 records"), "{err}");
    let mut huge = good.clone();
    huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let err = read_bytes(dir.path(), &huge).0.err().unwrap();
    assert!(matches!(err, YbbError::Truncated { .. }), "{err}");
}

#[test]
fn corrupt_records_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = small_book(dir.path());
    let good_entries = read_all(&path);
    assert_eq!(good_entries.len(), 3);
    let results = |bytes: &[u8]| -> Vec<Result<BookEntry, YbbError>> {
        read_bytes(dir.path(), bytes).0.unwrap().collect()
    };

    // Record 1's moves offset beyond the file: that record fails, the others read.
    let mut far = good.clone();
    far[record_offset(1) + 32..record_offset(1) + 40].copy_from_slice(&1_000_000u64.to_le_bytes());
    let got = results(&far);
    assert_eq!(got.len(), 3);
    let err = got[1].as_ref().unwrap_err();
    assert!(err.is_entry_error());
    assert!(
        matches!(
            err,
            YbbError::MovesOutOfRange {
                offset: 1_000_000,
                count: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.record().unwrap().record, 1);
    assert_eq!(err.record().unwrap().offset, record_offset(1) as u64);
    assert_eq!(got[0].as_ref().unwrap(), &good_entries[0]);
    assert_eq!(got[2].as_ref().unwrap(), &good_entries[2]);

    // A file cut in the moves section: the last record's moves are missing.
    let got = results(&good[..good.len() - 2]);
    assert!(matches!(got[2], Err(YbbError::MovesOutOfRange { .. })));

    // A PackedSfen whose king square is 127.
    let mut king = good.clone();
    king[record_offset(2)] |= 0xfe;
    let got = results(&king);
    match &got[2] {
        Err(YbbError::BadPosition {
            source: PackedSfenError::KingSquare { .. },
            at,
            ..
        }) => {
            assert_eq!(at.record, 2);
        }
        other => panic!("{other:?}"),
    }

    // A ply of 0.
    let mut ply = good.clone();
    ply[record_offset(0) + 40..record_offset(0) + 42].copy_from_slice(&0u16.to_le_bytes());
    let got = results(&ply);
    assert!(
        matches!(got[0], Err(YbbError::BadPosition { ply: 0, .. })),
        "{:?}",
        got[0]
    );

    // Moves: the first move of record 0 replaced by a move that is not legal
    // there, then by bits that are no move.
    let moves_start = record_offset(3);
    let mut illegal = good.clone();
    let drop = stera_rules::move16::to_move16("G*5e".parse().unwrap());
    illegal[moves_start..moves_start + 2].copy_from_slice(&drop.to_le_bytes());
    let got = results(&illegal);
    match &got[0] {
        Err(
            e @ YbbError::BadMove {
                index: 0,
                source: Move16Error::Illegal { usi, .. },
                ..
            },
        ) => {
            assert_eq!(usi, "G*5e");
            assert!(e.to_string().contains("record #0"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(got[1].as_ref().unwrap(), &good_entries[1]);
    // Without the legality check the move is read.
    let (reader, _) = read_bytes(dir.path(), &illegal);
    let unchecked: Vec<BookEntry> = reader
        .unwrap()
        .with_legality_check(false)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(unchecked[0].moves[0].mv.to_string(), "G*5e");

    let mut garbage = good.clone();
    garbage[moves_start..moves_start + 2].copy_from_slice(&0u16.to_le_bytes());
    let got = results(&garbage);
    assert!(
        matches!(
            got[0],
            Err(YbbError::BadMove {
                source: Move16Error::NotAMove { .. },
                ..
            })
        ),
        "{:?}",
        got[0]
    );
}

#[test]
fn an_index_out_of_order_ends_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (_, good) = small_book(dir.path());
    let mut swapped = good.clone();
    let (a, b) = (record_offset(0), record_offset(1));
    let first = good[a..a + 44].to_vec();
    swapped[a..a + 44].copy_from_slice(&good[b..b + 44]);
    swapped[b..b + 44].copy_from_slice(&first);
    let got: Vec<_> = read_bytes(dir.path(), &swapped).0.unwrap().collect();
    assert_eq!(got.len(), 2, "the record out of order is the last item");
    assert!(got[0].is_ok());
    let err = got[1].as_ref().unwrap_err();
    assert!(
        matches!(err, YbbError::OutOfOrder { .. }) && !err.is_entry_error(),
        "{err}"
    );
    assert!(err.to_string().contains("record #1"), "{err}");
}

#[test]
fn conversion_of_a_text_book_keeps_every_value_and_depth() {
    let dir = tempfile::tempdir().unwrap();
    let (text, binary) = (dir.path().join("b.db"), dir.path().join("b.ybb"));
    let mut rng = StdRng::seed_from_u64(23);
    let entries: Vec<BookEntry> = random_positions(29, 150)
        .iter()
        .map(|p| random_entry(p, &mut rng))
        .collect();
    let mut writer = crate::db2016::SortingWriter::create(&text, Default::default()).unwrap();
    for e in &entries {
        writer.write_entry(e.clone()).unwrap();
    }
    writer.finish().unwrap();
    convert_db2016(&text, &binary, YbbOptions::default()).unwrap();
    let from_text: Vec<BookEntry> = crate::db2016::Db2016Reader::open(&text)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut from_text: Vec<BookEntry> = from_text.iter().map(|e| expected(e, true)).collect();
    from_text.sort_by_key(|e| packed_sfen::pack_sfen(e.sfen()).unwrap().0);
    assert_eq!(read_all(&binary), from_text);

    // A broken text book converts to nothing.
    std::fs::write(&text, "#YANEURAOU-DB2016 1.00\nsfen bad\n").unwrap();
    let missing = dir.path().join("none.ybb");
    let err = convert_db2016(&text, &missing, YbbOptions::default()).unwrap_err();
    assert!(matches!(err, YbbError::Db2016(_)), "{err}");
    assert!(!missing.exists());
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Any corruption of a book (bytes changed, the file cut) gives entries or
        /// errors, never a panic, and a clean book's entries are never altered
        /// silently: every entry read is a legal position with legal moves.
        #[test]
        fn corrupt_books_never_panic(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in proptest::option::of(any::<prop::sample::Index>()),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (_, mut bytes) = small_book(dir.path());
            for (at, value) in flips {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len()));
            }
            if let Ok(reader) = read_bytes(dir.path(), &bytes).0 {
                let records = reader.len();
                let mut items = 0u64;
                for item in reader {
                    items += 1;
                    if let Ok(entry) = item {
                        let pos = entry.position().unwrap();
                        for m in &entry.moves {
                            prop_assert!(pos.is_legal(m.mv));
                        }
                    }
                }
                prop_assert!(items <= records);
            }
        }
    }
}
