//! sled 0.34 panics on some damaged files instead of returning an error (a
//! truncated `db` gives "index out of bounds" while it recovers its log). A panic
//! must not reach the user as a crash with a backtrace hint: the store's reads
//! that recover or walk its files run through [`guarded`], which turns a panic
//! into [`BookError::Damaged`] naming the store, and keeps the panic's own
//! message off stderr (it is part of the error instead).

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Once;

use crate::BookError;

thread_local! {
    /// Set while this thread runs a guarded call: its panic is reported, not printed.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// The message of the last guarded panic on this thread.
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Chains a panic hook (once per process) that keeps quiet about panics of
/// guarded calls, and prints every other panic as the previous hook did.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let location = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(ToString::to_string)
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                MESSAGE.with(|m| *m.borrow_mut() = Some(format!("sled: {payload}{location}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` (sled calls on the store at `path`); a panic inside becomes
/// [`BookError::Damaged`].
pub(crate) fn guarded<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, BookError>,
) -> Result<T, BookError> {
    install_hook();
    let outer = GUARDED.with(|g| g.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(outer));
    match outcome {
        Ok(result) => result,
        Err(_) => Err(BookError::Damaged {
            path: path.display().to_string(),
            detail: MESSAGE
                .with(|m| m.borrow_mut().take())
                .unwrap_or_else(|| "sled panicked".to_owned()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_damaged_store_error() {
        let e = guarded(Path::new("x.db"), || -> Result<(), BookError> {
            let v: Vec<u8> = Vec::new();
            let i = v.len() + 3;
            Err(BookError::Invalid(format!("{}", v[i])))
        })
        .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, BookError::Damaged { .. }), "{text}");
        assert!(
            text.contains("x.db") && text.contains("index out of bounds"),
            "{text}"
        );
        assert!(text.contains("deploy/README.md"), "{text}");
        // Errors and values pass through.
        assert_eq!(guarded(Path::new("x"), || Ok(3)).unwrap(), 3);
    }
}
