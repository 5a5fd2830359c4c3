//! Helpers shared by the integration tests of several crates and by the benchmark
//! tools (`crates/bench-tools`): one copy of each instead of one per test folder
//! or example.
//!
//! - [`fake_worker`]: a worker speaking the gRPC protocol that answers think jobs
//!   at once (or wrongly, on purpose), and the pieces of it the benchmarks reuse
//!   (Hello, connection, instant values).
//! - [`random_mover`]: a [`stera_engine::Player`] playing pseudo-random legal moves.
//! - [`http`]: plain HTTP/1.1 GET over a TCP socket (metrics and dashboard checks).
//! - [`proc`]: memory, threads and open files of a process, from `/proc`.
//! - [`disk`]: a small tmpfs for full-disk tests.
//! - [`pty`]: a process on a pseudo-terminal, and what the terminal shows.
//! - [`books`]: stores written node by node, with the values a test chooses.
//! - [`free_port`]: a loopback port nobody listens on.

// Test support: a failed setup step is a failed test, and a panic with its
// message is the clearest report of it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod books;
pub mod disk;
pub mod fake_worker;
pub mod http;
pub mod proc;
pub mod pty;
pub mod random_mover;

/// A free loopback port (bound and released), or why none could be bound.
pub fn try_free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A free loopback port (bound and released); panics where none can be bound.
pub fn free_port() -> u16 {
    try_free_port().expect("bind a loopback port")
}
