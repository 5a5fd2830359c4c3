//! The evaluation file loader: the layout of the seed document, and clear errors
//! (field and byte offset) for every kind of damaged or foreign file.

use crate::net;

use std::path::Path;

use net::offsets;
use stera_engine::nnue::{self, NnueError, file};

/// YaneuraOu's hash of the network: AffineTransform(ClippedReLU(AffineTransform(
/// ClippedReLU(AffineTransform(InputSlice[512]))))) with 32, 32, 1 outputs.
fn yaneuraou_network_hash() -> u32 {
    let input_slice = 0xEC42_E90D_u32 ^ 512;
    let affine = |previous: u32, outputs: u32| {
        let mut h = 0xCC03_DAE4_u32.wrapping_add(outputs);
        h ^= previous >> 1;
        h ^= previous << 31;
        h
    };
    let clipped = |previous: u32| 0x538D_24C7_u32.wrapping_add(previous);
    affine(clipped(affine(clipped(affine(input_slice, 32)), 32)), 1)
}

#[test]
fn layout_constants_match_the_seed_table_and_yaneuraou_hashes() {
    assert_eq!(file::FILE_BYTES, 64_217_066);
    assert_eq!(file::ARCHITECTURE.len(), 178);
    assert_eq!(file::ARCHITECTURE, net::ARCHITECTURE);
    // HalfKP(Friend): 0x5D69D5B9 ^ 1, xor the 512 outputs of both halves.
    assert_eq!(file::TRANSFORMER_HASH, (0x5D69_D5B9 ^ 1) ^ 512);
    assert_eq!(file::NETWORK_HASH, yaneuraou_network_hash());
    assert_eq!(file::FILE_HASH, file::TRANSFORMER_HASH ^ file::NETWORK_HASH);
    assert_eq!(file::FILE_HASH, 0x3E5A_A6EE);
    assert_eq!(net::random_net_bytes(1).len(), offsets::END);
}

fn expect_err(bytes: &[u8], what: &str) -> NnueError {
    match file::parse(bytes, Path::new("test.bin")) {
        Ok(_) => panic!("{what}: a damaged file was accepted"),
        Err(e) => e,
    }
}

/// One full-size file, damaged in every way in turn (in memory, restored after
/// each case), then loaded from disk intact.
#[test]
fn damaged_files_are_refused_with_the_field_and_offset() {
    let mut bytes = net::random_net_bytes(7);

    let good = file::parse(&bytes, Path::new("test.bin")).expect("intact file loads");
    assert!(good.description().starts_with("test.bin "));

    // Version.
    bytes[0] ^= 1;
    let e = expect_err(&bytes, "version");
    assert!(
        matches!(e, NnueError::Version { found, .. } if found == net::VERSION ^ 1),
        "{e}"
    );
    assert!(e.to_string().contains("byte 0"), "{e}");
    bytes[0] ^= 1;

    // Whole-file hash: another architecture (e.g. HalfKPE9 or a larger net).
    bytes[4] ^= 0x10;
    let e = expect_err(&bytes, "hash");
    assert!(
        matches!(&e, NnueError::Hash { offset: 4, architecture, .. } if architecture == net::ARCHITECTURE),
        "{e}"
    );
    assert!(e.to_string().contains("HalfKP 256x2-32-32"), "{e}");
    bytes[4] ^= 0x10;

    // Architecture string that disagrees with the hash.
    let at = 12 + file::ARCHITECTURE.find("256x2").expect("in string");
    bytes[at] = b'5';
    let e = expect_err(&bytes, "architecture");
    assert!(
        matches!(&e, NnueError::Architecture { found, .. } if found.contains("556x2")),
        "{e}"
    );
    bytes[at] = b'2';

    // An absurd architecture length.
    bytes[8..12].copy_from_slice(&0x00FF_FFFF_u32.to_le_bytes());
    let e = expect_err(&bytes, "architecture length");
    assert!(matches!(e, NnueError::ArchitectureLength { .. }), "{e}");
    bytes[8..12].copy_from_slice(&178_u32.to_le_bytes());

    // Layer hashes, named with their offsets from the seed's table.
    for (offset, field) in [
        (offsets::TRANSFORMER_HASH, "feature transformer hash"),
        (offsets::NETWORK_HASH, "network hash"),
    ] {
        bytes[offset + 3] ^= 0x80;
        let e = expect_err(&bytes, field);
        assert!(
            matches!(&e, NnueError::Hash { offset: o, field: f, .. } if *o == offset && *f == field),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("byte {offset}")), "{e}");
        bytes[offset + 3] ^= 0x80;
    }

    // Truncated anywhere: inside the header, inside the weights, one byte short.
    for len in [
        0,
        3,
        11,
        100,
        offsets::FT_WEIGHTS + 5,
        offsets::OUT_WEIGHTS,
        offsets::END - 1,
    ] {
        let e = expect_err(&bytes[..len], "truncated");
        match &e {
            NnueError::Truncated { actual, .. } => assert_eq!(*actual, len),
            NnueError::Size {
                expected, actual, ..
            } => assert_eq!((*expected, *actual), (offsets::END, len)),
            other => panic!("length {len}: unexpected error {other}"),
        }
        assert!(e.to_string().contains("test.bin"), "{e}");
    }
    let e = expect_err(&bytes[..offsets::END - 1], "one byte short");
    assert!(e.to_string().contains("truncated"), "{e}");

    // Trailing garbage.
    bytes.push(0);
    let e = expect_err(&bytes, "trailing");
    assert!(e.to_string().contains("trailing"), "{e}");
    bytes.pop();

    // The intact file from disk, shared between loads while it is in use.
    let path = std::env::temp_dir().join(format!("stera-nnue-file-{}.bin", std::process::id()));
    std::fs::write(&path, &bytes).expect("temp file");
    let first = nnue::load_shared(&path).expect("loads");
    let second = nnue::load_shared(&path).expect("loads");
    assert!(
        std::sync::Arc::ptr_eq(&first, &second),
        "one copy per process"
    );
    std::fs::remove_file(&path).expect("cleanup");
}

#[test]
fn missing_file_names_the_path() {
    let path = Path::new("no/such/dir/nn.bin");
    let e = match nnue::load(path) {
        Ok(_) => panic!("a missing file loaded"),
        Err(e) => e,
    };
    assert!(matches!(e, NnueError::Io { .. }), "{e}");
    assert!(e.to_string().contains("no/such/dir/nn.bin"), "{e}");
}

/// The header of a HalfKP 256x2-32-32 file: what makes a reader expect the body.
fn valid_header() -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&file::VERSION.to_le_bytes());
    header.extend_from_slice(&file::FILE_HASH.to_le_bytes());
    let length = u32::try_from(file::ARCHITECTURE.len()).unwrap();
    header.extend_from_slice(&length.to_le_bytes());
    header.extend_from_slice(file::ARCHITECTURE.as_bytes());
    header
}

#[cfg(unix)]
#[test]
fn endless_or_oversized_files_fail_before_their_body_is_read() {
    // `/dev/zero`: no version at byte 0, refused after 12 bytes.
    let e = nnue::load(Path::new("/dev/zero")).err().unwrap();
    assert!(matches!(e, NnueError::Version { found: 0, .. }), "{e}");

    // A file of 8 GiB (sparse) with a valid header: its size is refused from
    // its metadata, nothing of its body is read.
    let dir = std::env::temp_dir().join(format!("stera-nnue-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let huge = dir.join("huge.bin");
    std::fs::write(&huge, valid_header()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let e = nnue::load(&huge).err().unwrap();
    assert!(
        matches!(e, NnueError::Size { expected: file::FILE_BYTES, actual, .. } if actual == 8 << 30),
        "{e}"
    );

    // A pipe that sends a valid header and then never ends: read one byte past
    // the size the header announces, then refused.
    let fifo = dir.join("endless.bin");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut pipe = std::fs::File::options().write(true).open(&fifo).unwrap();
            pipe.write_all(&valid_header()).unwrap();
            let zeros = vec![0u8; 1 << 16];
            // Until the reader closes its end.
            while pipe.write_all(&zeros).is_ok() {}
        })
    };
    let e = nnue::load(&fifo).err().unwrap();
    assert!(
        matches!(
            e,
            NnueError::Longer {
                expected: file::FILE_BYTES,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("endless.bin"), "{e}");
    writer.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
