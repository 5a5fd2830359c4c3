//! The async runtime of a binary's `main`.

use std::time::Duration;

/// How long the runtime waits at the end for blocking threads that still run.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Runs a binary's main future on a multi-threaded runtime; errors are printed with
/// their causes and give a non-zero exit code.
///
/// Generic over the error so that binaries keep `anyhow` while this library does
/// not depend on it: any error whose causes it can walk will do.
pub fn block_on_main<E: AsRef<dyn std::error::Error + Send + Sync + 'static>>(
    main: impl std::future::Future<Output = Result<(), E>>,
) -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(main);
    // A search still running on a blocking thread (a stop that gave its job back)
    // must not keep the process alive: dropping the runtime would wait for it.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", crate::error_text(e.as_ref()));
            std::process::ExitCode::FAILURE
        }
    }
}
