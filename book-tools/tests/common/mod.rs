//! Running the built `book-tools` binary from the integration tests.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `book-tools ARGS` and returns what it did.
pub fn book_tools(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(args)
        .output()
        .expect("run book-tools")
}

/// Runs a command that must succeed; returns its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = book_tools(args);
    assert!(
        out.status.success(),
        "book-tools {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail; returns its standard error.
pub fn fails(args: &[&str]) -> String {
    let out = book_tools(args);
    assert!(!out.status.success(), "book-tools {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}
