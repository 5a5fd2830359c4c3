//! A small tmpfs for full-disk tests (the coordinator's and book-tools').

use std::path::PathBuf;
use std::process::Command;

/// A small tmpfs mounted for a full-disk test, unmounted when dropped.
pub struct SmallDisk {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size` (e.g. `"8m"`); `None`, after printing why the
    /// test is skipped, where this machine does not let the test mount (not
    /// root, no permission in a container).
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Self { _dir: dir, path }),
            Ok(o) => {
                eprintln!(
                    "skipped: cannot mount a {size} tmpfs for the full-disk test: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot mount a {size} tmpfs for the full-disk test: {e}");
                None
            }
        }
    }

    /// Fills the disk with a file until at most `leave` bytes are free.
    pub fn fill_leaving(&self, leave: u64) -> PathBuf {
        let filler = self.path.join("filler");
        let free = stera_book::space::available_bytes(&self.path).expect("statvfs");
        let size = free.saturating_sub(leave);
        let data = vec![0x5au8; 1 << 20];
        let mut f = std::fs::File::create(&filler).expect("filler");
        let mut left = size;
        while left > 0 {
            let n = left.min(data.len() as u64) as usize;
            if std::io::Write::write_all(&mut f, &data[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
