//! The export's bytes: independent of threads and chunks, equal to a plain
//! reference writer, and the softmax and by-results variants.

use super::*;

/// The export's bytes depend neither on the number of threads nor on how the
/// entries are split into formatting tasks, and every entry of the file is the
/// one `node_lines` gives for the position its SFEN names.
#[test]
fn export_bytes_do_not_depend_on_threads_or_chunks() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut b = Builder::new(noise);
    b.random_lines(&mut rng, 120, 9, 6);
    let book = &b.book;
    assert!(book.len() > 300, "{}", book.len());
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; book.len()];
    extras.timestamps = vec![0; book.len()];
    let dir = tempfile::tempdir().unwrap();
    for options in [
        ExportOptions::default(),
        ExportOptions {
            shrink: true,
            ..ExportOptions::default()
        },
        ExportOptions {
            raw: true,
            ..ExportOptions::default()
        },
    ] {
        let run_as = |format, threads: usize, chunk: usize, window: usize, name: &str| {
            let path = dir.path().join(name);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let summary = pool
                .install(|| {
                    export::export_in_chunks(
                        book,
                        &extras,
                        &path,
                        &options,
                        &mut |_, _, _| {},
                        chunk,
                        window,
                        format,
                    )
                })
                .unwrap();
            assert_eq!(summary.written.entries_written, book.len() as u64);
            std::fs::read(&path).unwrap()
        };
        let run = |threads, chunk, window, name: &str| {
            run_as(export::BookFormat::Db2016, threads, chunk, window, name)
        };
        let one = run(1, 1 << 20, 1 << 20, "one.db");
        let many = run(3, 7, 20, "many.db");
        assert!(one == many, "bytes differ (options {options:?})");

        // The .ybb export is the text export converted, byte for byte, however
        // the work is split.
        let ybb_one = run_as(export::BookFormat::Ybb, 1, 1 << 20, 1 << 20, "one.ybb");
        let ybb_many = run_as(export::BookFormat::Ybb, 3, 7, 20, "many.ybb");
        let converted = dir.path().join("converted.ybb");
        stera_formats::ybb::convert_db2016(
            dir.path().join("one.db"),
            &converted,
            stera_formats::ybb::YbbOptions::default(),
        )
        .unwrap();
        let converted = std::fs::read(&converted).unwrap();
        assert!(
            ybb_one == converted,
            ".ybb differs from the conversion ({options:?})"
        );
        assert!(ybb_one == ybb_many, ".ybb bytes differ ({options:?})");

        // Read the file back: each entry is node_lines of its position.
        let (graph, solution) = analyse(book);
        let solution = (!options.raw).then_some(&solution);
        let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(dir.path().join("one.db"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(entries.len(), book.len());
        assert!(entries.windows(2).all(|w| w[0].sfen() < w[1].sfen()));
        let mut moves = Vec::new();
        for entry in &entries {
            let pos = entry.position().unwrap();
            let id = book.get(pos.key()).unwrap();
            let mut lines =
                node_lines(book, &graph, solution, Some(&extras), id, &pos, &mut moves).unwrap();
            if options.shrink {
                let best = lines[0].value;
                lines.retain(|l| l.value == best);
            }
            let expected: Vec<(Move, Option<Move>, i32, i32)> = book_moves(&lines, !options.raw)
                .map(|m| (m.mv, m.ponder, m.value, m.depth))
                .collect();
            let got: Vec<(Move, Option<Move>, i32, i32)> = entry
                .moves
                .iter()
                .map(|m| (m.mv, m.ponder, m.value, m.depth))
                .collect();
            assert_eq!(got, expected, "{}", entry.sfen());
        }
    }
}

/// The export equals a plain reference writer byte for byte: every node's SFEN
/// as the rules core prints it (the stored ply, or the walk's where none is
/// stored), sorted as strings, its moves from `node_lines`. The book comes from
/// games of random moves, so positions have pieces in hand and promoted pieces,
/// and most of them are far from the few sampled for the SFEN code's dictionary.
#[test]
fn export_equals_a_reference_writer_on_a_book_of_random_games() {
    let mut rng = StdRng::seed_from_u64(91);
    let mut b = Builder::new(noise);
    for _ in 0..60 {
        let mut pos = Position::startpos();
        let mut line = Vec::new();
        for _ in 0..rng.random_range(1..70) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let mv = moves[rng.random_range(0..moves.len())];
            line.push(mv.to_string());
            pos.do_move(mv);
        }
        let refs: Vec<&str> = line.iter().map(String::as_str).collect();
        b.line(stera_rules::STARTPOS_SFEN, &refs);
    }
    let book = &b.book;
    let mut extras = NodeExtras::default();
    extras.plies = (0..book.len())
        .map(|i| if i % 3 == 0 { 0 } else { 40 + (i % 7) as u16 })
        .collect();
    extras.timestamps = vec![0; book.len()];
    let mut nodes: Vec<(String, NodeId, Position)> = (0..book.len())
        .map(|i| {
            let id = NodeId(u32::try_from(i).unwrap());
            // The root's ply is stored as 0, so the walk counts from 1.
            let pos = book.position_of(id).unwrap();
            let sfen = match extras.plies[i] {
                0 => pos.to_sfen(),
                ply => format!("{} {ply}", pos.to_sfen_without_ply()),
            };
            (sfen, id, pos)
        })
        .collect();
    assert!(
        nodes
            .iter()
            .any(|(s, _, _)| s.split(' ').nth(2) != Some("-"))
    );
    assert!(nodes.iter().any(|(s, _, _)| s.contains('+')));
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let (graph, solution) = analyse(book);
    let mut want = Vec::new();
    let mut moves = Vec::new();
    for (sfen, id, pos) in &nodes {
        want.extend_from_slice(format!("sfen {sfen}\r\n").as_bytes());
        let lines = node_lines(
            book,
            &graph,
            Some(&solution),
            Some(&extras),
            *id,
            pos,
            &mut moves,
        )
        .unwrap();
        for m in book_moves(&lines, true) {
            stera_formats::db2016::format_move_line(&mut want, &m);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    export_db2016(
        book,
        &extras,
        &path,
        &ExportOptions::default(),
        &mut |_, _, _| {},
    )
    .unwrap();
    let file = std::fs::read(&path).unwrap();
    let body = &file[file.windows(5).position(|w| w == b"sfen ").unwrap()..];
    assert!(
        body == want.as_slice(),
        "the export differs from the reference"
    );
}

#[test]
fn softmax_export_at_temperature_toward_zero_is_the_minimax_export_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, book) in sample_books() {
        let minimax = export_bytes(&book, &ExportOptions::default(), dir.path(), "minimax");
        for t in [1e-3, 0.0] {
            let options = ExportOptions {
                backup: Backup::Softmax,
                temperature: t,
                ..ExportOptions::default()
            };
            let softmax = export_bytes(&book, &options, dir.path(), "softmax");
            assert!(softmax == minimax, "{name}: T={t} differs from minimax");
        }
        // A real temperature changes values (the test can fail).
        let warm = ExportOptions {
            backup: Backup::Softmax,
            temperature: 200.0,
            ..ExportOptions::default()
        };
        if name == "random" {
            assert!(export_bytes(&book, &warm, dir.path(), "warm") != minimax);
        }
    }
}

/// `--by-results`: moves with games are written at their [`results_value`] and
/// ordered by it, into thought positions and leaves alike; the others keep
/// their values.
#[test]
fn an_export_by_results_values_moves_by_their_games() {
    use crate::results::results_value;
    let start = Position::startpos();
    let index = |usi: &str| {
        start
            .legal_moves()
            .iter()
            .position(|m| m.to_string() == usi)
            .unwrap()
    };
    let (i2g, i5g) = (index("2g2f"), index("5g5f"));
    let start_key = start.key();
    let mut b = Builder::new(move |pos, i| {
        if pos.key() != start_key {
            0
        } else if i == i2g {
            10
        } else if i == i5g {
            5
        } else {
            -50
        }
    });
    // 7g7f leads into a thought position whose replies are all worth 0.
    let line = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let after =
        |usi: &str| Position::from_position_command(&format!("startpos moves {usi}")).unwrap();
    let leaf = after("2g2f");
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; b.book.len()];
    extras.timestamps = vec![0; b.book.len()];
    // From the side to move's view (White): 7g7f won 70 of 100 for Black, the
    // leaf 2g2f 20 of 100; the leaf's counters under the smaller of its keys.
    extras.learned = std::collections::HashMap::from([
        (b.book.key(line[1]), counts(30, 0, 70)),
        (leaf.key().min(leaf.flipped_key()), counts(80, 0, 20)),
    ]);
    // Self-play counters that say the opposite are never read by `--by-results`.
    extras.counts = std::collections::HashMap::from([
        (b.book.key(line[1]), counts(100, 0, 0)),
        (leaf.key().min(leaf.flipped_key()), counts(0, 0, 100)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let read = |options: &ExportOptions, name: &str| {
        let path = dir.path().join(name);
        export_db2016(&b.book, &extras, &path, options, &mut |_, _, _| {}).unwrap();
        let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let entry = entries
            .into_iter()
            .find(|e| e.position().unwrap().key() == start_key)
            .unwrap();
        entry
            .moves
            .iter()
            .map(|m| (m.mv.to_string(), m.value))
            .collect::<Vec<_>>()
    };
    let plain = read(&ExportOptions::default(), "plain.db");
    assert_eq!(plain[0], ("2g2f".to_owned(), 10));
    let by_results = read(
        &ExportOptions {
            by_results: Some(4.0),
            ..ExportOptions::default()
        },
        "results.db",
    );
    let won = results_value(counts(70, 0, 30), 0, 4.0);
    let lost = results_value(counts(20, 0, 80), 10, 4.0);
    assert!(won > 400 && lost < -400, "{won} {lost}");
    assert_eq!(by_results[0], ("7g7f".to_owned(), won));
    assert_eq!(by_results[1], ("5g5f".to_owned(), 5));
    assert_eq!(by_results.last().unwrap(), &("2g2f".to_owned(), lost));
    // Every other move as before, in the same order.
    let others = |list: &[(String, i32)]| {
        list.iter()
            .filter(|(m, _)| !["7g7f", "2g2f", "5g5f"].contains(&m.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(others(&plain), others(&by_results));
    assert_eq!(plain.len(), by_results.len());
}
