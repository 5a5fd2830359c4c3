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
            report(format_args!("error: cannot start the async runtime: {e}"));
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(main);
    // A search still running on a blocking thread (a stop that gave its job back)
    // must not keep the process alive: dropping the runtime would wait for it.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match outcome {
        Ok(()) => {
            // The last records out (the log writer queues them), with a bound.
            crate::terminal::flush(LAST_WORDS_GRACE);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            report(format_args!("error: {}", crate::error_text(e.as_ref())));
            std::process::ExitCode::FAILURE
        }
    }
}

/// How long a process's last log records and its error may take to be written:
/// a stderr nobody reads must not keep it from ending.
const LAST_WORDS_GRACE: Duration = Duration::from_secs(2);

/// One line on stderr after the log records queued before it; a closed or
/// unread stderr drops it instead of panicking as `eprintln!` would, or
/// blocking (the exit code still says what happened).
fn report(line: std::fmt::Arguments<'_>) {
    crate::terminal::last_words(&line.to_string(), LAST_WORDS_GRACE);
}
