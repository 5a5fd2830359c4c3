//! Memory, threads and open files of a process, read from `/proc` (Linux): the
//! benchmarks watch them for leaks.

use std::io;

/// The fields of `/proc/PID/status` the benchmarks watch (sizes in kB).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcStatus {
    pub rss_kb: u64,
    pub rss_anon_kb: u64,
    pub rss_file_kb: u64,
    pub threads: u64,
}

/// `/proc/PID/status` of process `pid` (`"self"` for this one).
pub fn status(pid: &str) -> io::Result<ProcStatus> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| io::Error::other(format!("no {name} in /proc/{pid}/status")))
    };
    Ok(ProcStatus {
        rss_kb: field("VmRSS:")?,
        rss_anon_kb: field("RssAnon:")?,
        rss_file_kb: field("RssFile:")?,
        threads: field("Threads:")?,
    })
}

/// Open file descriptors of process `pid`.
pub fn open_fds(pid: &str) -> io::Result<u64> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64)
}

/// This process's resident set in MB (0 where `/proc` cannot tell).
pub fn self_rss_mb() -> u64 {
    status("self").map_or(0, |s| s.rss_kb / 1024)
}
