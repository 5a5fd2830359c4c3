//! The export choice: how a tera-shock book is written (values backed up by
//! minimax or softmax, at which temperature, what each move's count carries,
//! which file format, shrunk or raw). Three front ends ask for it, with one set
//! of flags declared here: `book-tools export` (an offline export of a stopped
//! store), `book-tools remote export` (the Export RPC of a running coordinator)
//! and the coordinator's own `--export-*` flags (its periodic and final exports).
//!
//! It lives in the service crate because two of the three front ends speak the
//! protocol: the choice converts to and from [`ExportRequest`], and to the book
//! crate's [`ExportOptions`], so that "which weights by default", "what a
//! temperature of 0 means" and "which format a path gets"
//! ([`FormatChoice::resolve`]) are decided in one place.
//!
//! The three front ends offer the same flags, spelled the same
//! (`--export-propagation`, `--export-format`...), and a temperature of 0
//! means the same in all three: minimax (a request without a temperature gets
//! [`DEFAULT_TEMPERATURE`]).

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use stera_book::OpponentSelection;
use stera_book::results::{DEFAULT_PRIOR_GAMES, prior_games_valid};
use stera_book::terashock::{Backup, BookFormat, ExportOptions, Weights};
use stera_proto::v1::{ExportBackup, ExportFormat, ExportRequest, ExportWeights};

mod flags;
#[cfg(test)]
mod tests;

pub use flags::{
    CoordinatorExport, ExportFlags, Flag, FlagNames, FrontEnd, OfflineExport, RemoteExport,
};

/// The softmax temperature (centipawns) of an export that names none: the
/// flags' default, and what a request without one gets.
pub const DEFAULT_TEMPERATURE: f64 = 50.0;

/// The largest leaf discount (centipawns) an export takes: beyond a few tens of
/// centipawns it no longer corrects a bias, it forbids leaving the book's lines.
pub const MAX_LEAF_DISCOUNT: i16 = 200;

/// How values go from the leaves to the roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum BackupChoice {
    #[default]
    Minimax,
    Softmax,
}

/// What each move's `count` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightsChoice {
    One,
    Policy,
    Ndf,
}

/// The file's format; `Auto` goes by the path's extension (`.ybb` a binary book,
/// anything else YaneuraOu's text book). [`FormatChoice::resolve`] is the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FormatChoice {
    /// By the path's extension: `.ybb` binary, anything else text.
    #[default]
    Auto,
    /// YaneuraOu's text book (DB2016, usually `.db`); `db2016` is its former name.
    #[value(alias = "db2016")]
    Text,
    /// YaneuraOu binary book (`.ybb`).
    Ybb,
}

/// A request or a flag that asks for something no export does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExportChoiceError {
    /// A request names a format this build does not know (a newer client, or a
    /// corrupt message).
    #[error("unknown export format {0}")]
    Format(i32),
    #[error("unknown export backup {0}")]
    Backup(i32),
    #[error("unknown export weights {0}")]
    Weights(i32),
    /// A request's leaf discount is outside 0..=MAX_LEAF_DISCOUNT.
    #[error("the export leaf discount must be 0 to {MAX_LEAF_DISCOUNT} centipawns, not {0}")]
    LeafDiscount(i32),
    /// A request's or a flag's prior games are negative or not a number.
    #[error("the export's prior games must be a finite number >= 0, not {0}")]
    PriorGames(f64),
    /// A request's opponent list has an empty item.
    #[error("the export's opponents: {0}")]
    Opponents(String),
    /// A request's temperature is negative or not a number.
    #[error("the export temperature must be a finite number >= 0, not {0}")]
    Temperature(f64),
    /// A temperature flag is negative or not a number (the flag's own name, so
    /// the user knows which to fix).
    #[error("--{flag} must be a finite number >= 0, not {value}")]
    TemperatureFlag { flag: &'static str, value: f64 },
    /// An explicit format that the path's extension contradicts: `text` for a
    /// `.ybb` path, `ybb` for a `.db` or `.db2016` path.
    #[error(
        "the export format `{format}` contradicts the path `{}`, whose extension makes it {}: \
         change the path's extension or leave the format to `auto`",
        path.display(),
        match format { FormatChoice::Ybb => "a text book", _ => "a binary .ybb book" }
    )]
    FormatMismatch { path: PathBuf, format: FormatChoice },
    /// Weights asked for a `.ybb` book, which has no count field to carry them.
    #[error(
        "a .ybb book has no count field, so the weights `{weights}` cannot be written to `{}`: \
         write a text book (`.db`) or leave the weights out",
        path.display()
    )]
    WeightsInBinary {
        path: PathBuf,
        weights: WeightsChoice,
    },
}

/// What an export is asked for, whichever front end asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportChoice {
    /// Keep only the moves whose propagated value equals the best move's.
    pub shrink: bool,
    /// The stored values and depths, without any backup.
    pub raw: bool,
    pub backup: BackupChoice,
    /// Softmax temperature in centipawns (softmax backup, policy and NDF priors).
    pub temperature: f64,
    /// `None`: the default of the backup ([`WeightsChoice::resolve`]).
    pub weights: Option<WeightsChoice>,
    pub format: FormatChoice,
    /// Centipawns a move into an unthought position counts below its stored
    /// evaluation ([`ExportOptions::leaf_discount`]).
    pub leaf_discount: i16,
    /// Value the moves with game results by them ([`ExportOptions::by_results`]).
    pub by_results: bool,
    /// The weight of a move's value against its games, in games.
    pub prior_games: f64,
    /// With `by_results`: whose learning games count (the store resolves it).
    pub opponents: OpponentSelection,
}

impl Default for ExportChoice {
    fn default() -> Self {
        Self {
            shrink: false,
            raw: false,
            backup: BackupChoice::Minimax,
            temperature: DEFAULT_TEMPERATURE,
            weights: None,
            format: FormatChoice::Auto,
            leaf_discount: 0,
            by_results: false,
            prior_games: DEFAULT_PRIOR_GAMES,
            opponents: OpponentSelection::All,
        }
    }
}

impl BackupChoice {
    /// The book crate's backup.
    #[must_use]
    pub fn backup(self) -> Backup {
        match self {
            Self::Minimax => Backup::Minimax,
            Self::Softmax => Backup::Softmax,
        }
    }

    #[must_use]
    pub fn to_proto(self) -> ExportBackup {
        match self {
            Self::Minimax => ExportBackup::Minimax,
            Self::Softmax => ExportBackup::Softmax,
        }
    }

    /// # Errors
    /// A value the protocol does not define.
    pub fn from_proto(value: i32) -> Result<Self, ExportChoiceError> {
        match ExportBackup::try_from(value) {
            Ok(ExportBackup::Minimax) => Ok(Self::Minimax),
            Ok(ExportBackup::Softmax) => Ok(Self::Softmax),
            Err(_) => Err(ExportChoiceError::Backup(value)),
        }
    }
}

impl WeightsChoice {
    /// The weights an export writes: the chosen ones, else the backup's default
    /// (the softmax policy with a softmax backup, where it is the values' own
    /// weighting; 1 with minimax, where YaneuraOu then weighs by values alone).
    #[must_use]
    pub fn resolve(choice: Option<Self>, backup: BackupChoice) -> Weights {
        match (choice, backup) {
            (Some(Self::One), _) | (None, BackupChoice::Minimax) => Weights::One,
            (Some(Self::Policy), _) | (None, BackupChoice::Softmax) => Weights::Policy,
            (Some(Self::Ndf), _) => Weights::Ndf,
        }
    }

    /// The protocol's weights (`Default` for none chosen).
    #[must_use]
    pub fn to_proto(choice: Option<Self>) -> ExportWeights {
        match choice {
            None => ExportWeights::Default,
            Some(Self::One) => ExportWeights::One,
            Some(Self::Policy) => ExportWeights::Policy,
            Some(Self::Ndf) => ExportWeights::Ndf,
        }
    }

    /// # Errors
    /// A value the protocol does not define.
    pub fn from_proto(value: i32) -> Result<Option<Self>, ExportChoiceError> {
        match ExportWeights::try_from(value) {
            Ok(ExportWeights::Default) => Ok(None),
            Ok(ExportWeights::One) => Ok(Some(Self::One)),
            Ok(ExportWeights::Policy) => Ok(Some(Self::Policy)),
            Ok(ExportWeights::Ndf) => Ok(Some(Self::Ndf)),
            Err(_) => Err(ExportChoiceError::Weights(value)),
        }
    }
}

impl std::fmt::Display for WeightsChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::One => "one",
            Self::Policy => "policy",
            Self::Ndf => "ndf",
        })
    }
}

impl std::fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Text => "text",
            Self::Ybb => "ybb",
        })
    }
}

impl FormatChoice {
    /// What a path's extension says of its format, when it says anything:
    /// `.ybb` a binary book, `.db` and `.db2016` a text book (any case).
    #[must_use]
    pub fn of_extension(path: &Path) -> Option<BookFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "ybb" => Some(BookFormat::Ybb),
            "db" | "db2016" => Some(BookFormat::Db2016),
            _ => None,
        }
    }

    /// The file format to write at `path`: the chosen one, or for `Auto` the
    /// extension's (`.ybb` binary, anything else text). It does not check that
    /// the two agree: [`Self::resolve`] does, and every front end calls it
    /// before any work.
    #[must_use]
    pub fn book_format(self, path: &Path) -> BookFormat {
        match self {
            Self::Auto => Self::of_extension(path).unwrap_or(BookFormat::Db2016),
            Self::Text => BookFormat::Db2016,
            Self::Ybb => BookFormat::Ybb,
        }
    }

    /// The file format to write at `path` ([`Self::book_format`]), refusing a
    /// chosen format that the extension contradicts (`text` for `x.ybb`, `ybb`
    /// for `x.db`); an extension that names no format (`x.bin`) takes either.
    ///
    /// # Errors
    /// [`ExportChoiceError::FormatMismatch`].
    pub fn resolve(self, path: &Path) -> Result<BookFormat, ExportChoiceError> {
        let format = self.book_format(path);
        match Self::of_extension(path) {
            Some(by_extension) if by_extension != format => {
                Err(ExportChoiceError::FormatMismatch {
                    path: path.to_owned(),
                    format: self,
                })
            }
            _ => Ok(format),
        }
    }

    #[must_use]
    pub fn to_proto(self) -> ExportFormat {
        match self {
            Self::Auto => ExportFormat::ByExtension,
            Self::Text => ExportFormat::Db2016,
            Self::Ybb => ExportFormat::Ybb,
        }
    }

    /// # Errors
    /// A value the protocol does not define.
    pub fn from_proto(value: i32) -> Result<Self, ExportChoiceError> {
        match ExportFormat::try_from(value) {
            Ok(ExportFormat::ByExtension) => Ok(Self::Auto),
            Ok(ExportFormat::Db2016) => Ok(Self::Text),
            Ok(ExportFormat::Ybb) => Ok(Self::Ybb),
            Err(_) => Err(ExportChoiceError::Format(value)),
        }
    }
}

impl ExportChoice {
    /// The request for an export of this choice to `path` (on the coordinator's
    /// machine).
    #[must_use]
    pub fn to_request(&self, path: String) -> ExportRequest {
        ExportRequest {
            path,
            shrink: self.shrink,
            raw: self.raw,
            backup: self.backup.to_proto().into(),
            temperature: Some(self.temperature),
            weights: WeightsChoice::to_proto(self.weights).into(),
            format: self.format.to_proto().into(),
            leaf_discount: i32::from(self.leaf_discount),
            by_results: self.by_results,
            prior_games: self.prior_games,
            opponents: self.opponents.to_string(),
        }
    }

    /// What `request` asks for; no temperature is [`DEFAULT_TEMPERATURE`], 0
    /// is minimax as for the flags.
    ///
    /// # Errors
    /// An unknown backup, weights or format, a format that the path's extension
    /// contradicts ([`FormatChoice::resolve`]), a negative or non-finite
    /// temperature.
    pub fn from_request(request: &ExportRequest) -> Result<Self, ExportChoiceError> {
        let backup = BackupChoice::from_proto(request.backup)?;
        let weights = WeightsChoice::from_proto(request.weights)?;
        let format = FormatChoice::from_proto(request.format)?;
        refuse_weights_in_binary(
            weights,
            format.resolve(Path::new(&request.path))?,
            Path::new(&request.path),
        )?;
        let temperature = request.temperature.unwrap_or(DEFAULT_TEMPERATURE);
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(ExportChoiceError::Temperature(temperature));
        }
        if !prior_games_valid(request.prior_games) {
            return Err(ExportChoiceError::PriorGames(request.prior_games));
        }
        let opponents = if request.opponents.trim().is_empty() {
            OpponentSelection::All
        } else {
            OpponentSelection::parse(&request.opponents)
                .map_err(|e| ExportChoiceError::Opponents(e.to_string()))?
        };
        Ok(Self {
            shrink: request.shrink,
            raw: request.raw,
            backup,
            temperature,
            weights,
            format,
            leaf_discount: i16::try_from(request.leaf_discount)
                .ok()
                .filter(|d| (0..=MAX_LEAF_DISCOUNT).contains(d))
                .ok_or(ExportChoiceError::LeafDiscount(request.leaf_discount))?,
            by_results: request.by_results,
            prior_games: request.prior_games,
            opponents,
        })
    }

    /// The file format to write at `path`: as [`FormatChoice::resolve`], and
    /// weights chosen for a `.ybb` book (which cannot carry them) refused.
    ///
    /// # Errors
    /// [`ExportChoiceError::FormatMismatch`], [`ExportChoiceError::WeightsInBinary`].
    pub fn format_for(&self, path: &Path) -> Result<BookFormat, ExportChoiceError> {
        let format = self.format.resolve(path)?;
        refuse_weights_in_binary(self.weights, format, path)?;
        Ok(format)
    }

    /// The book crate's options for this choice (the weights resolved).
    #[must_use]
    pub fn options(&self) -> ExportOptions {
        ExportOptions {
            shrink: self.shrink,
            raw: self.raw,
            backup: self.backup.backup(),
            weights: WeightsChoice::resolve(self.weights, self.backup),
            temperature: self.temperature,
            leaf_discount: self.leaf_discount,
            by_results: self.by_results.then_some(self.prior_games),
        }
    }
}

/// Weights chosen (not defaulted) for a binary book are refused: it has no count
/// field, and dropping them silently would write another book than asked for.
fn refuse_weights_in_binary(
    weights: Option<WeightsChoice>,
    format: BookFormat,
    path: &Path,
) -> Result<(), ExportChoiceError> {
    match weights {
        Some(weights) if format == BookFormat::Ybb => Err(ExportChoiceError::WeightsInBinary {
            path: path.to_owned(),
            weights,
        }),
        _ => Ok(()),
    }
}
