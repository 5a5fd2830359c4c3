//! The status page as a person sees it: headless Chromium loads it from a live
//! coordinator, runs its script, and the rendered DOM must show the live numbers.
//!
//! Needs Chromium (Debian package `chromium`); skipped with a note when missing
//! unless STERA_REQUIRE_BROWSER=1.

use crate::common;
use crate::web;

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Answer, Coord, LONG, fake_worker, free_port};

pub(crate) fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("STERA_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "STERA_REQUIRE_BROWSER=1 but chromium is not installed (apt-get install chromium)"
        );
        eprintln!("note: chromium not installed; skipping (set STERA_REQUIRE_BROWSER=1 to fail)");
    }
    found
}

/// The DOM after the page's scripts ran (a fresh profile each time).
pub(crate) fn dump_dom(chromium: &PathBuf, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `attribute` on the element with `id` in serialised HTML.
fn attribute_of(dom: &str, id: &str, attribute: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let tag_start = dom[..at].rfind('<')?;
    let tag_end = at + dom[at..].find('>')?;
    let tag = &dom[tag_start..tag_end];
    let key = format!("{attribute}=\"");
    let v = tag.find(&key)? + key.len();
    Some(tag[v..v + tag[v..].find('"')?].to_owned())
}

/// The text inside the element with `id` (up to its first child tag or end tag).
pub(crate) fn text_of(dom: &str, id: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let open_end = at + dom[at..].find('>')? + 1;
    let close = open_end + dom[open_end..].find('<')?;
    Some(dom[open_end..close].to_owned())
}

pub(crate) fn number(dom: &str, id: &str) -> u64 {
    attribute_of(dom, id, "data-value")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number in #{id}: {dom}"))
}

#[test]
fn dom_attribute_reader() {
    let dom = r#"<div class="value" id="nodes" data-value="1234">1,234</div><span id="x">a<b>"#;
    assert_eq!(number(dom, "nodes"), 1234);
    assert_eq!(text_of(dom, "nodes").as_deref(), Some("1,234"));
    assert_eq!(text_of(dom, "x").as_deref(), Some("a"));
    assert_eq!(attribute_of(dom, "missing", "data-value"), None);
}

#[test]
fn status_page_renders_live_numbers_in_a_browser() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    // One root: its line is there after the first search. With the 31 default
    // roots taking turns of 100 leaves, the start position's turn could come
    // after minutes on a loaded machine.
    {
        use stera_book::NodeStore;
        let mut store = stera_book::SledStore::open(&dir.path().join("book.db")).unwrap();
        store
            .save_config(&stera_book::RunConfig {
                roots: vec!["startpos".into()],
                ..stera_book::RunConfig::default()
            })
            .unwrap();
    }
    let c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &["--metrics", &http],
        &[],
    );
    let rt = common::runtime(1);
    // One bad answer first, so the problems list has something to show.
    rt.block_on(fake_worker(c.url(), None, 1, Answer::MissingMove, 1, LONG))
        .unwrap();
    // A fake worker that keeps answering, slowly enough to last through both page
    // loads: one slot, a result as soon as a job comes, for a long while.
    let url = c.url();
    let worker =
        rt.spawn(async move { fake_worker(url, None, 1, Answer::Good, usize::MAX, LONG).await });
    web::wait_status(&http, LONG, "a connected worker and positions", |s| {
        s["workers_connected"] == 1
            && s["nodes"].as_u64().unwrap_or(0) >= 5
            // The start position's line, which the page must show.
            && s["roots"]
                .as_array()
                .is_some_and(|r| r.iter().any(|l| l["root"] == "startpos"))
    });

    let page = format!("http://{http}/");
    let before = web::api_status(&http)["nodes"].as_u64().unwrap();
    let dom = dump_dom(&chromium, &page);
    let after = web::api_status(&http)["nodes"].as_u64().unwrap();
    let shown = number(&dom, "nodes");
    assert!(
        (before..=after).contains(&shown),
        "page shows {shown} positions, the coordinator had {before}..={after}"
    );
    assert_eq!(text_of(&dom, "state").as_deref(), Some("live"), "{dom}");
    assert_eq!(number(&dom, "workers-connected"), 1);
    // The one worker's one slot: the page reads the status document's keys (a
    // key it names that the document lacks would show as NaN or `undefined`).
    assert_eq!(
        text_of(&dom, "workers-connected").as_deref(),
        Some("1 (1)"),
        "{dom}"
    );
    assert!(
        !dom.contains("NaN") && !dom.contains(">undefined<"),
        "{dom}"
    );
    assert_eq!(number(&dom, "rejected"), 1);
    assert!(number(&dom, "leaf-edges") > shown, "{dom}");
    // The workers table, the PV from the root and the problem are rendered.
    assert!(dom.contains("<td>fake</td>"), "{dom}");
    assert!(dom.contains(">startpos</td>"), "{dom}");
    assert!(dom.contains(">rejected</td>"), "{dom}");
    assert_eq!(
        text_of(&dom, "version").as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );

    // Numbers move: a second load shows more positions.
    web::wait_status(&http, LONG, "more positions", |s| {
        s["nodes"].as_u64().unwrap_or(0) > after
    });
    let dom2 = dump_dom(&chromium, &page);
    let shown2 = number(&dom2, "nodes");
    assert!(shown2 > shown, "first load {shown}, second {shown2}");
    worker.abort();
}
