//! The dashboard's `/api/status` and the Prometheus text exposition, read over the
//! test kit's plain HTTP/1.1 GET.

use std::time::{Duration, Instant};

pub use stera_testkit::http::{get, get_ok};

/// The `/api/status` JSON.
pub fn api_status(addr: &str) -> serde_json::Value {
    let r = get_ok(addr, "/api/status", Duration::from_secs(30));
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", r.body))
}

/// Waits until `cond` holds on `/api/status`, returning that status.
pub fn wait_status(
    addr: &str,
    timeout: Duration,
    what: &str,
    cond: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = api_status(addr);
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < timeout,
            "/api/status never showed {what} in {timeout:?}: {s}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The value of an unlabelled sample `name` (or `name{labels}` verbatim) in a
/// Prometheus text exposition.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (n, v) = l.rsplit_once(' ')?;
        (n == name).then(|| v.parse().ok()).flatten()
    })
}
