//! Reading and checking a HalfKP 256x2-32-32 evaluation file (`nn.bin`).
//!
//! Layout (all values little-endian; 64 217 066 bytes with the usual 178-byte
//! architecture string):
//!
//! | offset | field |
//! |---|---|
//! | 0 | version `u32` = 0x7AF32F16 |
//! | 4 | hash `u32` = 0x3E5AA6EE (feature transformer hash ^ network hash) |
//! | 8 | architecture string length `u32` (N) |
//! | 12 | architecture string (N bytes) |
//! | 12+N | feature transformer hash `u32` = 0x5D69D7B8 |
//! | +4 | feature transformer biases: 256 `i16` |
//! | +512 | feature transformer weights: 125 388 x 256 `i16`, one 256-column per feature |
//! | | network hash `u32` = 0x63337156 |
//! | | hidden layer 1: 32 `i32` biases, 32 x 512 `i8` weights (row-major) |
//! | | hidden layer 2: 32 `i32` biases, 32 x 32 `i8` weights |
//! | | output layer: 1 `i32` bias, 32 `i8` weights |

use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::features::INPUT_DIMENSIONS;
use super::network::Network;
use super::transformer::{HALF_DIMENSIONS, HIDDEN1_INPUTS, HIDDEN1_OUTPUTS, HIDDEN2_OUTPUTS};

/// The file format version YaneuraOu writes.
pub const VERSION: u32 = 0x7AF3_2F16;
/// Hash of the whole architecture (feature transformer hash ^ network hash).
pub const FILE_HASH: u32 = 0x3E5A_A6EE;
/// Hash of the HalfKP(Friend)[125388->256x2] feature transformer.
pub const TRANSFORMER_HASH: u32 = 0x5D69_D7B8;
/// Hash of the 512->32->32->1 network with clipped ReLUs.
pub const NETWORK_HASH: u32 = 0x6333_7156;
/// The architecture string YaneuraOu writes for this layout.
pub const ARCHITECTURE: &str = "Features=HalfKP(Friend)[125388->256x2],Network=AffineTransform[1<-32](ClippedReLU[32](AffineTransform[32<-32](ClippedReLU[32](AffineTransform[32<-512](InputSlice[512(0:512)])))))";

/// Bytes after the architecture string.
pub const BODY_BYTES: usize = 4
    + HALF_DIMENSIONS * 2
    + INPUT_DIMENSIONS * HALF_DIMENSIONS * 2
    + 4
    + HIDDEN1_OUTPUTS * 4
    + HIDDEN1_OUTPUTS * HIDDEN1_INPUTS
    + HIDDEN2_OUTPUTS * 4
    + HIDDEN2_OUTPUTS * HIDDEN1_OUTPUTS
    + 4
    + HIDDEN2_OUTPUTS;

/// The size of a file with the usual architecture string: 64 217 066 bytes.
pub const FILE_BYTES: usize = 12 + ARCHITECTURE.len() + BODY_BYTES;

/// Longest architecture string accepted (real ones are a few hundred bytes; a
/// larger length means the file is something else).
const MAX_ARCHITECTURE_BYTES: u32 = 4096;

/// Why an evaluation file cannot be used.
#[derive(Debug, Error)]
pub enum NnueError {
    #[error("cannot read evaluation file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "evaluation file {} ends at byte {actual} inside the {field} (at byte {offset}, {needed} bytes needed)",
        path.display()
    )]
    Truncated {
        path: PathBuf,
        field: &'static str,
        offset: usize,
        needed: usize,
        actual: usize,
    },
    #[error(
        "evaluation file {} has {actual} bytes; a HalfKP 256x2-32-32 file with this header has {expected}{}",
        path.display(),
        if actual > expected { " (trailing bytes)" } else { " (truncated)" }
    )]
    Size {
        path: PathBuf,
        expected: usize,
        actual: usize,
    },
    #[error(
        "evaluation file {} has version {found:#010x} at byte 0, expected {VERSION:#010x} (not a YaneuraOu NNUE file)",
        path.display()
    )]
    Version { path: PathBuf, found: u32 },
    #[error(
        "evaluation file {} has {field} {found:#010x} at byte {offset}, expected {expected:#010x}: \
         not a HalfKP 256x2-32-32 network (architecture: `{architecture}`)",
        path.display()
    )]
    Hash {
        path: PathBuf,
        field: &'static str,
        offset: usize,
        found: u32,
        expected: u32,
        architecture: String,
    },
    #[error(
        "evaluation file {} declares architecture `{found}` (at byte 12), only `{ARCHITECTURE}` is supported",
        path.display()
    )]
    Architecture { path: PathBuf, found: String },
    #[error(
        "evaluation file {} declares an architecture string of {length} bytes at byte 8 (at most {MAX_ARCHITECTURE_BYTES})",
        path.display()
    )]
    ArchitectureLength { path: PathBuf, length: u32 },
    #[error(
        "evaluation file {} is longer than {expected} bytes, the size of a HalfKP 256x2-32-32 file with its header (endless input?)",
        path.display()
    )]
    Longer { path: PathBuf, expected: usize },
}

/// Reads the evaluation file at `path`.
///
/// # Errors
/// An unreadable file, a wrong version, hash or architecture, a wrong size.
///
/// Nothing past the size the header announces is read: the header (version,
/// hashes, architecture string of at most 4,096 bytes) is checked first, then
/// the file's size (from its metadata, before the body is allocated, or, for a
/// pipe or device, by reading one byte past it), so that `/dev/zero` or a
/// file of another size fails at once.
pub fn load(path: &Path) -> Result<Network, NnueError> {
    let io_error = |source| NnueError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io_error)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(12)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    let length = match bytes.get(8..12) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        // Too short for a header: `parse` says where it ends.
        _ => return parse(&bytes, path),
    };
    if length <= MAX_ARCHITECTURE_BYTES {
        (&mut file)
            .take(u64::from(length))
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
    }
    let (expected, _) = header(&mut Reader {
        bytes: &bytes,
        offset: 0,
        path,
    })?;
    let metadata = file.metadata().map_err(io_error)?;
    if metadata.is_file() && metadata.len() != expected as u64 {
        return Err(NnueError::Size {
            path: path.to_owned(),
            expected,
            actual: usize::try_from(metadata.len()).unwrap_or(usize::MAX),
        });
    }
    bytes.reserve_exact(expected.saturating_sub(bytes.len()) + 1);
    let rest = (expected + 1).saturating_sub(bytes.len());
    file.take(rest as u64)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() > expected {
        return Err(NnueError::Longer {
            path: path.to_owned(),
            expected,
        });
    }
    parse(&bytes, path)
}

/// A bounds-checked little-endian reader that names the field it is reading.
struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &'static str, needed: usize) -> Result<&'a [u8], NnueError> {
        let end = self.offset.checked_add(needed);
        match end.and_then(|end| self.bytes.get(self.offset..end)) {
            Some(slice) => {
                self.offset += needed;
                Ok(slice)
            }
            None => Err(NnueError::Truncated {
                path: self.path.to_owned(),
                field,
                offset: self.offset,
                needed,
                actual: self.bytes.len(),
            }),
        }
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, NnueError> {
        let b = self.take(field, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i32s(&mut self, field: &'static str, n: usize) -> Result<Vec<i32>, NnueError> {
        let b = self.take(field, n * 4)?;
        Ok(b.chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn i16s(&mut self, field: &'static str, n: usize) -> Result<Vec<i16>, NnueError> {
        let b = self.take(field, n * 2)?;
        Ok(b.chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    fn i8s(&mut self, field: &'static str, n: usize) -> Result<Vec<i8>, NnueError> {
        let b = self.take(field, n)?;
        Ok(b.iter().map(|&x| x as i8).collect())
    }

    fn expect_hash(
        &mut self,
        field: &'static str,
        expected: u32,
        architecture: &str,
    ) -> Result<(), NnueError> {
        let offset = self.offset;
        let found = self.u32(field)?;
        if found == expected {
            Ok(())
        } else {
            Err(NnueError::Hash {
                path: self.path.to_owned(),
                field,
                offset,
                found,
                expected,
                architecture: architecture.to_owned(),
            })
        }
    }
}

/// Whitespace-insensitive comparison, since trainers differ in spacing only.
fn same_architecture(found: &str) -> bool {
    found
        .chars()
        .filter(|c| !c.is_whitespace())
        .eq(ARCHITECTURE.chars())
}

/// Checks the header (version, hash, architecture string) and returns the size
/// the file must have, with the architecture string.
fn header(r: &mut Reader<'_>) -> Result<(usize, String), NnueError> {
    let version = r.u32("version")?;
    if version != VERSION {
        return Err(NnueError::Version {
            path: r.path.to_owned(),
            found: version,
        });
    }
    let hash = r.u32("hash")?;
    let length = r.u32("architecture string length")?;
    if length > MAX_ARCHITECTURE_BYTES {
        return Err(NnueError::ArchitectureLength {
            path: r.path.to_owned(),
            length,
        });
    }
    let architecture =
        String::from_utf8_lossy(r.take("architecture string", length as usize)?).into_owned();
    if hash != FILE_HASH {
        return Err(NnueError::Hash {
            path: r.path.to_owned(),
            field: "hash",
            offset: 4,
            found: hash,
            expected: FILE_HASH,
            architecture,
        });
    }
    if !same_architecture(&architecture) {
        return Err(NnueError::Architecture {
            path: r.path.to_owned(),
            found: architecture,
        });
    }
    Ok((12 + length as usize + BODY_BYTES, architecture))
}

/// Parses the bytes of an evaluation file (`path` only names it in errors).
///
/// # Errors
/// As [`load`], except I/O.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Network, NnueError> {
    let mut r = Reader {
        bytes,
        offset: 0,
        path,
    };
    let (expected, architecture) = header(&mut r)?;
    if bytes.len() != expected {
        return Err(NnueError::Size {
            path: path.to_owned(),
            expected,
            actual: bytes.len(),
        });
    }
    r.expect_hash("feature transformer hash", TRANSFORMER_HASH, &architecture)?;
    let ft_biases = r.i16s("feature transformer biases", HALF_DIMENSIONS)?;
    let ft_weights = r.i16s(
        "feature transformer weights",
        INPUT_DIMENSIONS * HALF_DIMENSIONS,
    )?;
    r.expect_hash("network hash", NETWORK_HASH, &architecture)?;
    let l1_biases = r.i32s("hidden layer 1 biases", HIDDEN1_OUTPUTS)?;
    let l1_weights = r.i8s("hidden layer 1 weights", HIDDEN1_OUTPUTS * HIDDEN1_INPUTS)?;
    let l2_biases = r.i32s("hidden layer 2 biases", HIDDEN2_OUTPUTS)?;
    let l2_weights = r.i8s("hidden layer 2 weights", HIDDEN2_OUTPUTS * HIDDEN1_OUTPUTS)?;
    let out_bias = r.i32s("output layer bias", 1)?;
    let out_weights = r.i8s("output layer weights", HIDDEN2_OUTPUTS)?;
    Ok(Network::from_parts(
        ft_biases,
        ft_weights,
        l1_biases,
        l1_weights,
        l2_biases,
        l2_weights,
        out_bias[0],
        out_weights,
        describe(path, bytes),
    ))
}

/// A short name for the network: the file name and a fingerprint of the content
/// (an FNV-style multiplicative hash over 8-byte words; fast on 64 MB), so
/// evaluations record which net produced them.
fn describe(path: &Path, bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h ^= u64::from_le_bytes(word);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let name = path
        .file_name()
        .map_or_else(|| "nn.bin".to_owned(), |n| n.to_string_lossy().into_owned());
    format!("{name} {:08x}", h >> 32)
}
