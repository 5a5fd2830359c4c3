//! Opening stores: an existing store only, never creating one by accident, and a
//! clear error when another process holds it (issue 16).

use stera_book::{BookError, NodeStore, SledStore};

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn open_existing_refuses_what_is_not_a_store_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = SledStore::open_existing(&missing).unwrap_err();
    assert!(matches!(err, BookError::NotAStore { .. }), "{err}");
    assert!(!missing.exists());

    let file = dir.path().join("file");
    std::fs::write(&file, b"hello").unwrap();
    let err = SledStore::open_existing(&file).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    let err = SledStore::open_existing(&other).unwrap_err();
    assert!(err.to_string().contains("is not a book store"), "{err}");
    assert_eq!(listing(&other), ["notes.txt"]);
}

#[test]
fn open_existing_opens_a_store() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = SledStore::open(dir.path()).unwrap();
        store.add_kifu_keys(&[stera_rules::Key(7)]).unwrap();
    }
    let store = SledStore::open_existing(dir.path()).unwrap();
    assert_eq!(store.kifu_keys().unwrap(), [stera_rules::Key(7)]);
}

/// sled locks the store's file; a second opener (the lock is per open file, so a
/// second open in one process conflicts as another process's would) gets `InUse`.
#[test]
fn a_store_in_use_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let _first = SledStore::open(dir.path()).unwrap();
    for second in [
        SledStore::open(dir.path()),
        SledStore::open_existing(dir.path()),
    ] {
        let err = second.unwrap_err();
        assert!(matches!(err, BookError::InUse { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("in use by another process"), "{text}");
        assert!(!text.contains("WouldBlock"), "{text}");
    }
}

/// A store closed a moment ago opens even while sled's threads of the closed handle
/// still hold its lock (sled 0.34 releases it after the drop returns): the open
/// waits for the lock instead of failing. The holder here lets go 100 ms after the
/// open has begun, well inside the wait, so the open must succeed.
#[test]
fn a_lock_released_shortly_after_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let first = SledStore::open(dir.path()).unwrap();
    let (started, wait_for_start) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        wait_for_start.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(first);
    });
    started.send(()).unwrap();
    let second = SledStore::open_existing(dir.path());
    holder.join().unwrap();
    let second = second.unwrap();
    assert_eq!(second.len(), 0);
}
