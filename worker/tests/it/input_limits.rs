//! Endless input through the built binary: `/dev/zero` as USI commands, as the
//! evaluation file, as the token file. Each fails at once with a clear error
//! (before, each read until memory ran out).

use std::fs::File;
use std::process::{Command, Output, Stdio};

fn worker(args: &[&str], stdin: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worker"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Exit 1 with `needle` in the error, which quotes no more than it must.
fn fails_with(output: &Output, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(needle), "`{needle}` not in {stderr}");
    assert!(stderr.len() < 2_000, "a long error: {stderr}");
    stderr
}

#[test]
fn usi_commands_from_dev_zero_end_with_an_error() {
    let out = worker(&["--usi"], Stdio::from(File::open("/dev/zero").unwrap()));
    let stderr = fails_with(&out, "a USI command longer than 1048576 bytes");
    assert!(stderr.contains("`\\0\\0\\0"), "{stderr}");
    // The GUI reads why on stdout, as an `info string`.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("info string error: a USI command longer"),
        "{stdout}"
    );
}

#[test]
fn an_evaluation_file_from_dev_zero_is_refused_at_its_header() {
    let out = worker(
        &["--usi", "--eval-file", "/dev/zero"],
        Stdio::from(File::open("/dev/null").unwrap()),
    );
    fails_with(&out, "not a YaneuraOu NNUE file");
}

#[test]
fn a_token_file_from_dev_zero_is_refused() {
    let out = worker(
        &[
            "--token-file",
            "/dev/zero",
            "--coordinator",
            "http://127.0.0.1:9",
        ],
        Stdio::null(),
    );
    fails_with(&out, "token file /dev/zero is larger than 65536 bytes");
}

/// Issue 45, point 4: a TLS file is read with a bound, here the worker's CA file.
#[test]
fn a_tls_ca_file_from_dev_zero_is_refused() {
    let out = worker(
        &[
            "--tls-ca",
            "/dev/zero",
            "--coordinator",
            "https://127.0.0.1:9",
        ],
        Stdio::null(),
    );
    fails_with(&out, "TLS CA file /dev/zero is larger than 1048576 bytes");
}

/// Issue 45, point 7: a URL, an engine command or an engine option of 100 KB is
/// quoted by a few hundred bytes in the error (they printed 200 KB and 100 KB).
#[test]
fn long_flag_values_are_quoted_by_an_excerpt() {
    let long = "p".repeat(100_000);
    let url = format!("http://{long}");
    let cmd = format!("/x{long}");
    for args in [
        vec!["--coordinator", url.as_str()],
        vec!["--coordinator", long.as_str()],
        vec!["--engine-option", long.as_str()],
        vec![
            "--engine-cmd",
            cmd.as_str(),
            "--coordinator",
            "http://127.0.0.1:1",
        ],
    ] {
        let out = worker(&args, Stdio::null());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.len() < 2_000,
            "{} bytes for {}: {}…",
            stderr.len(),
            args[0],
            &stderr[..500]
        );
        assert!(stderr.contains("ppp") && stderr.contains('…'), "{stderr}");
    }
}

/// Issue 45, point 9: `worker --usi < /dev/urandom` echoed 532 MB of "unknown
/// command" in 30 s and never ended; binary input now ends the session after
/// MAX_BAD_LINES lines in a row, with the reason, having said little.
#[test]
fn usi_commands_from_dev_urandom_end_with_an_error() {
    let out = worker(&["--usi"], Stdio::from(File::open("/dev/urandom").unwrap()));
    let stderr = fails_with(
        &out,
        "lines in a row that are no USI command (MAX_BAD_LINES)",
    );
    assert!(stderr.contains("the input is not USI"), "{stderr}");
    // One short answer per bad line, and the reason last.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().count() <= 100, "{}", stdout.lines().count());
    assert!(
        stdout.lines().all(|l| l.len() < 1_000),
        "an answer quotes a whole line"
    );
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("info string error: 100 lines"),
        "{stdout}"
    );
}
