//! `coordinator`: owns the book, selects leaves and hands them to workers.

use std::process::ExitCode;

use stera_coordinator::{CoordinatorArgs, LOCAL_WORKER_ARG};

fn main() -> ExitCode {
    let mut argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some(LOCAL_WORKER_ARG) {
        // Local workers are this executable re-run in worker mode, so the main job
        // needs only `cargo run -p coordinator`.
        argv.remove(1);
        return stera_worker::main_with_args(argv);
    }
    let args: CoordinatorArgs = stera_service::deprecated::parse_from(argv);
    let arenas = limit_malloc_arenas();
    stera_service::logging::init(args.log_format);
    if let Some(arenas) = arenas {
        tracing::info!(
            arenas,
            "malloc arenas capped (set MALLOC_ARENA_MAX to choose)"
        );
    }
    let exporter = stera_coordinator::export::book_exporter(args.db.clone());
    stera_service::block_on_main(stera_coordinator::run(args, Some(exporter)))
}

/// Arenas the coordinator lets glibc's malloc use unless `MALLOC_ARENA_MAX` says
/// otherwise.
///
/// Why: glibc gives each thread that allocates under contention an arena of its
/// own, and the coordinator's positions (a few KB of history each) are made on
/// the dispatcher thread and freed on tokio's threads and vice versa. Spread over
/// many arenas the freed blocks fragment and RSS creeps up by the hour without a
/// single leaked allocation. Measured with the soak (`crates/bench-tools`, 1.1M-node
/// book, 200 workers, same seed): from minute 2 to 15 RSS grew 8.9 MB with the
/// default arenas and 3.8 MB with one arena, the latter what the book's growth
/// explains (BENCHMARKS.md, "Soak"). The coordinator's allocation rate is far
/// below what one arena's lock serialises.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENAS: i32 = 1;

/// Caps glibc's malloc arenas (before any thread is started); returns the cap,
/// or `None` when the operator chose through `MALLOC_ARENA_MAX` or the C library
/// is not glibc.
fn limit_malloc_arenas() -> Option<i32> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            return None;
        }
        // SAFETY: mallopt only sets a malloc tunable; it is called before this
        // process starts any thread. The coordinator's one `unsafe`: glibc has no
        // safe wrapper for this tunable.
        #[allow(unsafe_code)]
        let ok = unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) };
        (ok == 1).then_some(MALLOC_ARENAS)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}
