//! The rules checked on real directories: bound outputs after a swap, paths
//! into stores however spelled, links, unfinished backups, export directories.

use std::path::Path;

use super::*;

fn fake_store(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("conf"), b"x").unwrap();
    std::fs::write(dir.join("db"), b"x").unwrap();
}

/// Outputs bound at open (issue 35): the directory of a bound output swapped
/// for a symbolic link into a store after it was opened does not redirect the
/// writes; the store's `db` and `conf` stay as they were and the lines go into
/// the file opened at start.
#[test]
fn a_directory_swapped_for_a_link_into_a_store_after_open_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("other.db");
    fake_store(&store);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let games = BoundOutput::append(&out_dir.join("conf"), None).unwrap();
    let json = BoundOutput::create(&out_dir.join("db"), None).unwrap();
    games.append_line("first").unwrap();
    // The directory goes away; a link named like it points into the store.
    let moved = tmp.path().join("moved");
    std::fs::rename(&out_dir, &moved).unwrap();
    std::os::unix::fs::symlink(&store, &out_dir).unwrap();
    games.append_line("second").unwrap();
    json.replace(b"{}\n").unwrap();
    assert_eq!(std::fs::read(store.join("conf")).unwrap(), b"x");
    assert_eq!(std::fs::read(store.join("db")).unwrap(), b"x");
    assert_eq!(
        std::fs::read_to_string(moved.join("conf")).unwrap(),
        "first\nsecond\n"
    );
    assert_eq!(std::fs::read_to_string(moved.join("db")).unwrap(), "{}\n");
    // Bound now, the same path is refused.
    assert!(BoundOutput::append(&out_dir.join("conf"), None).is_err());
}

/// A target bound to its directory (exports, backups): a write by rename
/// after the directory was swapped for a link into a store lands in the
/// directory that was checked; the store keeps its files.
#[test]
fn a_bound_target_writes_where_it_was_checked_after_a_swap() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("other.db");
    fake_store(&store);
    let out_dir = tmp.path().join("exports");
    std::fs::create_dir(&out_dir).unwrap();
    let target = BoundTarget::open(&out_dir.join("db"), Some(&tmp.path().join("mine.db"))).unwrap();
    let moved = tmp.path().join("moved");
    std::fs::rename(&out_dir, &moved).unwrap();
    std::os::unix::fs::symlink(&store, &out_dir).unwrap();
    // As the exporters write: a temporary file beside the target, renamed.
    let temporary = target.write_path().with_file_name("db.partial");
    std::fs::write(&temporary, b"book").unwrap();
    std::fs::rename(&temporary, target.write_path()).unwrap();
    assert_eq!(std::fs::read(store.join("db")).unwrap(), b"x");
    assert_eq!(std::fs::read(moved.join("db")).unwrap(), b"book");
    // Messages name the directory as given, not the handle.
    let text = format!("cannot write `{}`", target.write_path().display());
    assert_eq!(
        target.shown(&text),
        format!("cannot write `{}`", out_dir.join("db").display())
    );
    // Bound now, through the link: refused, naming the store.
    let e = BoundTarget::open(&out_dir.join("book.db2016"), None).unwrap_err();
    assert!(matches!(e, OutputPathError::InsideOtherStore { .. }), "{e}");
}

#[test]
fn a_bound_target_needs_a_directory_and_a_name() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("file"), b"x").unwrap();
    let e = BoundTarget::open(&tmp.path().join("file/book.db2016"), None).unwrap_err();
    assert!(e.to_string().contains("file"), "{e}");
    assert!(BoundTarget::open(&tmp.path().join("missing/book.db2016"), None).is_err());
    assert!(BoundTarget::open(Path::new("/"), None).is_err());
    let target = BoundTarget::open(Path::new("relative-name.db2016"), None).unwrap();
    assert_eq!(target.path(), Path::new("relative-name.db2016"));
}

#[test]
fn paths_inside_the_store_are_refused_however_spelled() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("book.db");
    fake_store(&store);
    for out in [
        store.join("db"),
        store.join("conf"),
        store.join("new.db2016"),
        store.join("../book.db/db"),
    ] {
        let e = check_output_path(&out, &store).unwrap_err();
        assert!(
            matches!(e, OutputPathError::InsideStore { .. }),
            "{out:?}: {e}"
        );
        assert!(e.to_string().contains("inside the book store"), "{e}");
    }
    // Through a symbolic link to the store's directory, too.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    assert!(matches!(
        check_output_path(&link.join("db"), &store),
        Err(OutputPathError::InsideStore { .. })
    ));
    // The store directory itself is a directory.
    assert!(matches!(
        check_output_path(&store, &store),
        Err(OutputPathError::IsDirectory { .. })
    ));
    let ok = check_output_path(&tmp.path().join("book.db2016"), &store).unwrap();
    assert_eq!(ok, tmp.path().canonicalize().unwrap().join("book.db2016"));
}

#[test]
fn other_stores_and_missing_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("a.db");
    let other = tmp.path().join("b.db");
    fake_store(&store);
    fake_store(&other);
    assert!(matches!(
        check_output_path(&other.join("blobs/x"), &store),
        Err(OutputPathError::Directory { .. })
    ));
    std::fs::create_dir(other.join("blobs")).unwrap();
    assert!(matches!(
        check_output_path(&other.join("blobs/x"), &store),
        Err(OutputPathError::InsideOtherStore { .. })
    ));
    assert!(matches!(
        check_output_path(&tmp.path().join("nowhere/x"), &store),
        Err(OutputPathError::Directory { .. })
    ));
}

#[test]
fn hard_links_and_dangling_links_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("book.db");
    fake_store(&store);
    let link = tmp.path().join("games.csa");
    std::fs::hard_link(store.join("conf"), &link).unwrap();
    let e = check_output_path(&link, &store).unwrap_err();
    assert!(
        matches!(e, OutputPathError::HardLinkIntoStore { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("hard link"), "{e}");
    // Without the store at hand the file is refused for its extra name.
    assert!(matches!(
        check_output_path_outside_stores(&link),
        Err(OutputPathError::HardLinked { links: 2, .. })
    ));
    // A plain existing file outside is fine.
    let plain = tmp.path().join("plain.txt");
    std::fs::write(&plain, b"x").unwrap();
    assert!(check_output_path(&plain, &store).is_ok());
    // A link to a file that does not exist yet inside the store.
    let dangling = tmp.path().join("dangling");
    std::os::unix::fs::symlink(store.join("new"), &dangling).unwrap();
    assert!(matches!(
        check_output_path_outside_stores(&dangling),
        Err(OutputPathError::DanglingLink { .. })
    ));
}

#[test]
fn an_unfinished_backup_counts_as_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let partial = tmp.path().join("b.db.partial");
    std::fs::create_dir(&partial).unwrap();
    assert!(check_output_path_outside_stores(&partial.join("x")).is_ok());
    std::fs::write(partial.join(INCOMPLETE_MARKER), b"").unwrap();
    assert!(matches!(
        check_output_path_outside_stores(&partial.join("x")),
        Err(OutputPathError::InsideOtherStore { .. })
    ));
}

#[test]
fn export_dirs_outside_stores_only() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("book.db");
    fake_store(&store);
    let other = tmp.path().join("other.db");
    fake_store(&other);
    std::fs::create_dir(store.join("blobs")).unwrap();
    assert!(check_export_dir(tmp.path(), &store).is_ok());
    assert!(matches!(
        check_export_dir(&store.join("blobs"), &store),
        Err(OutputPathError::InsideStore { .. })
    ));
    assert!(matches!(
        check_export_dir(&other, &store),
        Err(OutputPathError::InsideOtherStore { .. })
    ));
    for bad in [tmp.path().join("missing"), store.join("conf")] {
        assert!(matches!(
            check_export_dir(&bad, &store),
            Err(OutputPathError::Directory { .. })
        ));
    }
}

#[test]
fn remote_paths_stay_in_the_export_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("book.db");
    fake_store(&store);
    let exports = tmp.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let ok = resolve_in_export_dir("b.db2016", Some(&exports), &store).unwrap();
    assert_eq!(ok, exports.canonicalize().unwrap().join("b.db2016"));
    let abs = exports.join("c.db2016");
    assert!(resolve_in_export_dir(abs.to_str().unwrap(), Some(&exports), &store).is_ok());
    for bad in ["../x.db2016", "../book.db/conf"] {
        assert!(
            resolve_in_export_dir(bad, Some(&exports), &store).is_err(),
            "{bad}"
        );
    }
    let conf = store.join("conf");
    assert!(matches!(
        resolve_in_export_dir(conf.to_str().unwrap(), Some(&exports), &store),
        Err(OutputPathError::InsideStore { .. })
    ));
    assert!(matches!(
        resolve_in_export_dir("b.db2016", None, &store),
        Err(OutputPathError::NoExportDir)
    ));
}

#[test]
fn a_store_is_created_only_where_nothing_else_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str, files: &[&str]| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        for f in files {
            std::fs::write(d.join(f), b"x").unwrap();
        }
        d
    };
    let missing = tmp.path().join("missing");
    let empty = dir("empty", &[]);
    let fresh_disk = dir("mnt", &[]);
    std::fs::create_dir(fresh_disk.join("lost+found")).unwrap();
    // What is left of a store: the open judges it (and calls it damaged).
    let remains = dir("remains", &["STERA-WHOLE", "notes.txt"]);
    let photos = dir("photos", &["cat.jpg"]);
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for ok in [&missing, &empty, &fresh_disk, &remains] {
        assert!(must_create_store(ok, true).unwrap(), "{}", ok.display());
        assert!(matches!(
            must_create_store(ok, false),
            Err(NoStoreError::NotCreated { .. })
        ));
    }
    let e = must_create_store(&photos, true).unwrap_err();
    assert!(matches!(e, NoStoreError::NotEmpty { .. }), "{e}");
    assert!(e.to_string().contains("holds other files"), "{e}");
    assert!(matches!(
        must_create_store(&file, true),
        Err(NoStoreError::NotADirectory { .. })
    ));
    fake_store(&photos);
    assert!(!must_create_store(&photos, true).unwrap());
}
