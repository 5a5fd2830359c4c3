//! `.ybb` exports from a running coordinator (issue 15, item 3): by the path's
//! extension or the request's format, for the Export RPC and the end-of-run
//! `--export`; each read back equals the text export of the same book.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{Answer, Coord, LONG, fake_worker, runtime};
use stera_formats::db2016::{BookEntry, Db2016Reader};
use stera_formats::ybb::YbbReader;
use stera_proto::v1::{ExportFormat, ExportRequest};

/// Every entry by its SFEN without ply, moves as (move, value, depth).
fn entries(items: impl Iterator<Item = BookEntry>) -> BTreeMap<String, Vec<(String, i32, i32)>> {
    items
        .map(|e| {
            let moves = e
                .moves
                .iter()
                .map(|m| (m.mv.to_string(), m.value, m.depth))
                .collect();
            (e.sfen_without_ply().to_owned(), moves)
        })
        .collect()
}

fn text_book(path: &Path) -> BTreeMap<String, Vec<(String, i32, i32)>> {
    entries(Db2016Reader::open(path).unwrap().map(Result::unwrap))
}

fn binary_book(path: &Path) -> BTreeMap<String, Vec<(String, i32, i32)>> {
    entries(YbbReader::open(path).unwrap().map(Result::unwrap))
}

#[test]
fn the_export_rpc_and_the_final_export_write_ybb_books_equal_to_the_text_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let final_book = out.join("final.ybb");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--export-dir",
            out.to_str().unwrap(),
            "--export",
            final_book.to_str().unwrap(),
        ],
        &[],
    );
    let rt = runtime(2);
    let replies = rt.block_on(async {
        fake_worker(c.url(), None, 4, Answer::Good, 40, LONG)
            .await
            .unwrap();
        // Results the worker sent after its 40th acknowledgement may still be
        // stored: the exports must all see the same book.
        let mut last = u64::MAX;
        let mut same = 0;
        while same < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let nodes = common::status(&c.url(), None).await.nodes;
            same = if nodes == last { same + 1 } else { 0 };
            last = nodes;
        }
        let mut client = common::client(c.url(), None).await.unwrap();
        let mut replies = Vec::new();
        for (name, format) in [
            ("text.db2016", ExportFormat::ByExtension),
            ("by-extension.ybb", ExportFormat::ByExtension),
            ("asked-for.bin", ExportFormat::Ybb),
        ] {
            let request = ExportRequest {
                path: out.join(name).display().to_string(),
                format: format.into(),
                ..ExportRequest::default()
            };
            replies.push(client.export(request).await.unwrap().into_inner());
        }
        let unknown = ExportRequest {
            path: out.join("x.ybb").display().to_string(),
            format: 99,
            ..ExportRequest::default()
        };
        let err = client.export(unknown).await.unwrap_err();
        assert!(err.message().contains("unknown export format"), "{err:?}");
        replies
    });
    c.sigterm();
    assert!(c.wait_exit(LONG).success());

    let text = text_book(&out.join("text.db2016"));
    // Every acknowledged result is in the book; results sent after the 40th
    // acknowledgement may or may not have landed before the worker left.
    assert!(text.len() >= 40, "{} entries", text.len());
    assert_eq!(binary_book(&out.join("by-extension.ybb")), text);
    assert_eq!(binary_book(&out.join("asked-for.bin")), text);
    assert_eq!(binary_book(&final_book), text);
    for r in &replies {
        assert_eq!(r.entries as usize, text.len(), "{r:?}");
    }
    // YaneuraOu's magic, and no text file left beside the binary ones.
    let head = std::fs::read(&final_book).unwrap();
    assert!(head.starts_with(b"YANE-BINBOOK"), "{:?}", &head[..16]);
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "asked-for.bin",
            "by-extension.ybb",
            "final.ybb",
            "text.db2016"
        ]
    );
}
