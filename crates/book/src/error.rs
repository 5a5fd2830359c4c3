//! The book's error type.

use thiserror::Error;

/// Everything that can go wrong in the store, the book and the selector.
#[derive(Debug, Error)]
pub enum BookError {
    /// The storage engine failed (I/O, a damaged database).
    #[error("store `{path}`: {source}")]
    Store {
        path: String,
        #[source]
        source: sled::Error,
    },
    /// The store's files are damaged so that sled cannot read them (a truncated
    /// or overwritten file: sled panics on some of these, and the panic is
    /// caught and reported as this).
    #[error(
        "the book store `{path}` is damaged and cannot be read ({detail}); restore it from a backup (deploy/README.md, \"Back up and restore the store\")"
    )]
    Damaged { path: String, detail: String },
    /// Not enough free space for a write (checked before sled meets a full disk).
    #[error(transparent)]
    Space(#[from] crate::space::SpaceError),
    /// Another process holds the store (sled admits one process per store).
    #[error("the store `{path}` is in use by another process (a running coordinator?)")]
    InUse { path: String },
    /// A path opened as an existing store that is not one.
    #[error("`{path}` is not a book store directory: {reason}")]
    NotAStore { path: String, reason: String },
    /// Stored bytes that cannot be decoded.
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// A value handed in that breaks the book's rules (wrong move count, key...).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// A root that is not a valid position command.
    #[error("root {index} (`{text}`): {source}")]
    Root {
        index: usize,
        text: String,
        #[source]
        source: stera_rules::RulesError,
    },
    /// A leaf handed back that the selector did not hand out (or already took back).
    #[error("leaf {0} is not in flight")]
    NotInFlight(stera_rules::Key),
    /// The in-memory book ran out of its index range (over 4G stored move values).
    #[error("the in-memory book is full: {0}")]
    Full(String),
}
