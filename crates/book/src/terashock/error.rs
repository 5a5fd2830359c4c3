//! The export's error type.

use thiserror::Error;

use crate::BookError;

/// What can stop an analysis or an export.
#[derive(Debug, Error)]
pub enum TeraShockError {
    /// The book is damaged (a broken origin chain, a node whose value count does
    /// not match its position) or its store failed.
    #[error(transparent)]
    Book(#[from] BookError),
    /// Writing the DB2016 file failed.
    #[error(transparent)]
    Format(#[from] stera_formats::db2016::FormatError),
    /// Writing the `.ybb` file failed (boxed: the error is large and rare).
    #[error(transparent)]
    Binary(Box<stera_formats::ybb::YbbError>),
    /// Inputs that do not belong together (e.g. extras of another book).
    #[error("{0}")]
    Invalid(String),
}

impl From<stera_formats::ybb::YbbError> for TeraShockError {
    fn from(e: stera_formats::ybb::YbbError) -> Self {
        Self::Binary(Box::new(e))
    }
}
