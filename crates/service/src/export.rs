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
//! The three front ends offer the same flags. The coordinator prefixes them
//! with `export-` (`--export-backup`, `--export-format`...), because its own
//! `--temperature` is the selection's. They differ in what a temperature of 0
//! means: `book-tools export` uses 0 as given; a request of 0 asks for the
//! default, [`DEFAULT_TEMPERATURE`].

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, ArgMatches, Command, ValueEnum};
use stera_book::results::{DEFAULT_PRIOR_GAMES, prior_games_valid};
use stera_book::terashock::{Backup, BookFormat, ExportOptions, Weights};
use stera_proto::v1::{ExportBackup, ExportFormat, ExportRequest, ExportWeights};

/// The softmax temperature (centipawns) of an export that names none: the
/// flags' default, and what a request's 0 means.
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
    /// A request's temperature is negative or not a number.
    #[error("the export temperature must be a positive number, not {0}")]
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
#[derive(Debug, Clone, Copy, PartialEq)]
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
            temperature: self.temperature,
            weights: WeightsChoice::to_proto(self.weights).into(),
            format: self.format.to_proto().into(),
            leaf_discount: i32::from(self.leaf_discount),
            by_results: self.by_results,
            prior_games: self.prior_games,
        }
    }

    /// What `request` asks for; a temperature of 0 is [`DEFAULT_TEMPERATURE`].
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
        let temperature = if request.temperature == 0.0 {
            DEFAULT_TEMPERATURE
        } else {
            request.temperature
        };
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(ExportChoiceError::Temperature(request.temperature));
        }
        if !prior_games_valid(request.prior_games) {
            return Err(ExportChoiceError::PriorGames(request.prior_games));
        }
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

/// One flag: its clap id (unique within a command), its long name, the name
/// of its value in the help (clap's derive would write the id in capitals), and
/// its former spelling in this front end, a hidden alias that warns
/// ([`crate::deprecated`]).
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub id: &'static str,
    pub long: &'static str,
    pub value_name: &'static str,
    pub former: Option<&'static str>,
}

/// How a front end spells the export flags (every front end offers all of them).
#[derive(Debug, Clone, Copy)]
pub struct FlagNames {
    pub backup: Flag,
    pub temperature: Flag,
    pub weights: Flag,
    pub shrink: Flag,
    pub raw: Flag,
    pub format: Flag,
    pub leaf_discount: Flag,
    pub by_results: Flag,
    pub prior_games: Flag,
    /// Whether a temperature of 0 asks for the default (it travels in a request,
    /// where 0 is "not given") rather than for 0 itself.
    pub zero_temperature_is_default: bool,
}

/// A front end of the export: the spelling of its flags.
pub trait FrontEnd {
    const FLAGS: FlagNames;
}

/// `book-tools export`.
#[derive(Debug, Clone, Copy)]
pub struct OfflineExport;

/// `book-tools remote export`: a temperature of 0 is the default.
#[derive(Debug, Clone, Copy)]
pub struct RemoteExport;

/// The coordinator's `--export-*` (beside its `--select-temperature` of
/// selection and its store backups).
#[derive(Debug, Clone, Copy)]
pub struct CoordinatorExport;

/// An export setting: `--export-NAME` in every front end (ARCHITECTURE.md, "One
/// vocabulary"); `book-tools export` and `remote export` accepted `--NAME`
/// before.
const fn setting(id: &'static str, long: &'static str, value_name: &'static str) -> Flag {
    Flag {
        id,
        long,
        value_name,
        former: None,
    }
}

/// The spellings of every front end; only the former ones differ.
const NAMES: FlagNames = FlagNames {
    backup: setting("export_backup", "export-backup", "BACKUP"),
    temperature: setting("export_temperature", "export-temperature", "CP"),
    weights: setting("export_weights", "export-weights", "WEIGHTS"),
    shrink: setting("export_shrink", "export-shrink", ""),
    raw: setting("export_raw", "export-raw", ""),
    format: setting("export_format", "export-format", "FORMAT"),
    leaf_discount: setting("export_leaf_discount", "export-leaf-discount", "CP"),
    by_results: setting("export_by_results", "export-by-results", ""),
    // One concept with `learn` and `match --book-moves results`, so one name.
    prior_games: setting("prior_games", "prior-games", "GAMES"),
    zero_temperature_is_default: false,
};

const fn formerly(flag: Flag, former: &'static str) -> Flag {
    Flag {
        former: Some(former),
        ..flag
    }
}

/// `book-tools export` and `remote export` before the settings took the
/// `export-` prefix.
const PLAIN_FORMER: FlagNames = FlagNames {
    backup: formerly(NAMES.backup, "backup"),
    temperature: formerly(NAMES.temperature, "temperature"),
    weights: formerly(NAMES.weights, "weights"),
    shrink: formerly(NAMES.shrink, "shrink"),
    raw: formerly(NAMES.raw, "raw"),
    format: formerly(NAMES.format, "format"),
    leaf_discount: formerly(NAMES.leaf_discount, "leaf-discount"),
    by_results: formerly(NAMES.by_results, "by-results"),
    ..NAMES
};

impl FrontEnd for OfflineExport {
    const FLAGS: FlagNames = PLAIN_FORMER;
}

impl FrontEnd for RemoteExport {
    const FLAGS: FlagNames = FlagNames {
        zero_temperature_is_default: true,
        ..PLAIN_FORMER
    };
}

impl FrontEnd for CoordinatorExport {
    const FLAGS: FlagNames = FlagNames {
        prior_games: formerly(NAMES.prior_games, "export-prior-games"),
        zero_temperature_is_default: true,
        ..NAMES
    };
}

/// A flag's argument: its id, long name and former spelling.
fn arg_of(flag: Flag) -> Arg {
    let arg = Arg::new(flag.id).long(flag.long);
    match flag.former {
        Some(former) => arg.alias(former),
        None => arg,
    }
}

/// The export flags of front end `F`, flattened into its command
/// (`#[command(flatten)]`); the choice they make is [`Self::choice`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExportFlags<F> {
    choice: ExportChoice,
    front_end: PhantomData<fn() -> F>,
}

impl<F: FrontEnd> ExportFlags<F> {
    /// What the flags ask for, as given (a temperature of 0 stays 0).
    #[must_use]
    pub fn choice(&self) -> &ExportChoice {
        &self.choice
    }

    /// What the flags ask for, with the temperature checked as an offline
    /// export uses it (0 allowed: the softmax backup then is the minimax one).
    ///
    /// # Errors
    /// A negative or non-finite temperature, named by its flag.
    pub fn checked(&self) -> Result<ExportChoice, ExportChoiceError> {
        let prior = self.choice.prior_games;
        if !prior_games_valid(prior) {
            return Err(ExportChoiceError::PriorGames(prior));
        }
        let t = self.choice.temperature;
        if !(t >= 0.0 && t.is_finite()) {
            return Err(ExportChoiceError::TemperatureFlag {
                flag: F::FLAGS.temperature.long,
                value: t,
            });
        }
        Ok(self.choice)
    }
}

impl<F: FrontEnd> clap::Args for ExportFlags<F> {
    fn augment_args(cmd: Command) -> Command {
        let names = F::FLAGS;
        let t = format!("--{}", names.temperature.long);
        let backup_flag = format!("--{}", names.backup.long);
        let weights_flag = format!("--{}", names.weights.long);
        let (shrink, raw) = (names.shrink, names.raw);
        let backup = arg_of(names.backup)
            .value_name(names.backup.value_name)
            .value_parser(clap::value_parser!(BackupChoice))
            .default_value("minimax")
            .conflicts_with(raw.id)
            .help(format!(
                "How values go from the leaves to the roots: `minimax` (tera-shock: a \
                 position is worth its best move) or `softmax` (a position is worth the \
                 softmax-weighted mean of its moves at {t}; depths stay the best line's)"
            ));
        let zero = if names.zero_temperature_is_default {
            "0 means the default, 50"
        } else {
            "toward 0 the softmax backup becomes the minimax one"
        };
        let temperature = arg_of(names.temperature)
            .value_name(names.temperature.value_name)
            .value_parser(clap::value_parser!(f64))
            // DEFAULT_TEMPERATURE as text (test `each_front_end_has_the_same_defaults`).
            .default_value("50")
            .help(format!(
                "Softmax temperature in centipawns (backup and policy weights); {zero}"
            ));
        let weights = arg_of(names.weights)
            .value_name(names.weights.value_name)
            .value_parser(clap::value_parser!(WeightsChoice))
            .conflicts_with(raw.id)
            .help(format!(
                "What each move's `count` carries: `one` (1 everywhere); `policy` (the \
                 softmax policy of the written values at {t}, summing to 10000 per \
                 position; YaneuraOu plays by it with ConsiderBookMoveCount); or `ndf` \
                 (NineDayFever: the probability that a move is the best from the game \
                 results per position, capped at twice its policy weight; positions and \
                 moves without games keep the policy). Default: `policy` with \
                 {backup_flag} softmax, else `one`"
            ));
        let shrink_arg = arg_of(shrink).action(ArgAction::SetTrue).help(
            "Keep only the moves whose propagated value equals the best move's \
                 (default: every move)",
        );
        let raw_arg = arg_of(raw)
            .action(ArgAction::SetTrue)
            .conflicts_with(shrink.id)
            .help(
                "Write the stored values and search depths without minimax: a book \
                 that `book-tools import` reads back into the same nodes (`import \
                 --keep-twins` when the store holds a position and its colour-flipped \
                 twin both). Default: the backed-up values",
            );
        let format = arg_of(names.format)
            .value_name(names.format.value_name)
            .value_parser(clap::value_parser!(FormatChoice))
            .default_value("auto")
            .help(format!(
                "The file's format: `auto` (by the path's extension: `.ybb` gets \
                 YaneuraOu's binary book, anything else its text book), `text` \
                 (YaneuraOu's text book, DB2016, usually `.db`; `db2016` is accepted \
                 too) or `ybb` (the binary book, \"YANE-BINBOOK-V1\": moves with value \
                 and depth, no count, so {weights_flag} is refused with it). A format \
                 that the extension contradicts (`text` for `.ybb`, `ybb` for `.db` or \
                 `.db2016`) is refused before anything is done"
            ));
        let leaf_discount = arg_of(names.leaf_discount)
            .value_name(names.leaf_discount.value_name)
            .value_parser(clap::value_parser!(i16).range(0..=i64::from(MAX_LEAF_DISCOUNT)))
            .default_value("0")
            .conflicts_with(raw.id)
            .help(format!(
                "Count a move into a position the book has not thought this many \
                 centipawns below its stored evaluation (mates excepted), 0 to \
                 {MAX_LEAF_DISCOUNT}. Thinking a position lowers the value of the move \
                 into it by about twice this on average, so unthought moves look better \
                 than thought ones; half the mean drop, which `book-tools stats` \
                 measures, puts them on one footing. 0 is YaneuraOu's peta_shock"
            ));
        let prior_flag = format!("--{}", names.prior_games.long);
        let by_results = arg_of(names.by_results)
            .action(ArgAction::SetTrue)
            .conflicts_with(raw.id)
            .help(format!(
                "Value every move that has game results by them (`book-tools learn`): its score shrunk towards its value by {prior_flag} pseudo-games, turned back into centipawns (600 ln(p / (1 - p))), the moves ordered by it, so that an engine playing the best value (YaneuraOu with BookEvalDiff 0) plays the move the games chose, as `book-tools match --book-moves results` does. Mates and moves without games keep their values. Default: off, the values of the analysis"
            ));
        let prior_games = arg_of(names.prior_games)
            .value_name(names.prior_games.value_name)
            .value_parser(clap::value_parser!(f64))
            // DEFAULT_PRIOR_GAMES as text (test `each_front_end_has_the_same_defaults`).
            .default_value("4")
            .help(
                "With the results: the weight of a move's value against its games, in games (the same flag as `book-tools learn` and `match`)",
            );
        cmd.arg(backup)
            .arg(temperature)
            .arg(leaf_discount)
            .arg(by_results)
            .arg(prior_games)
            .arg(weights)
            .arg(shrink_arg)
            .arg(raw_arg)
            .arg(format)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<F: FrontEnd> clap::FromArgMatches for ExportFlags<F> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let names = F::FLAGS;
        let missing = |flag: Flag| {
            clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!("--{} has no value", flag.long),
            )
        };
        let backup = *matches
            .get_one::<BackupChoice>(names.backup.id)
            .ok_or_else(|| missing(names.backup))?;
        let temperature = *matches
            .get_one::<f64>(names.temperature.id)
            .ok_or_else(|| missing(names.temperature))?;
        let weights = matches.get_one::<WeightsChoice>(names.weights.id).copied();
        let format = *matches
            .get_one::<FormatChoice>(names.format.id)
            .ok_or_else(|| missing(names.format))?;
        let leaf_discount = *matches
            .get_one::<i16>(names.leaf_discount.id)
            .ok_or_else(|| missing(names.leaf_discount))?;
        let prior_games = *matches
            .get_one::<f64>(names.prior_games.id)
            .ok_or_else(|| missing(names.prior_games))?;
        Ok(Self {
            choice: ExportChoice {
                shrink: matches.get_flag(names.shrink.id),
                raw: matches.get_flag(names.raw.id),
                backup,
                temperature,
                weights,
                format,
                leaf_discount,
                by_results: matches.get_flag(names.by_results.id),
                prior_games,
            },
            front_end: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Offline {
        #[command(flatten)]
        export: ExportFlags<OfflineExport>,
    }

    #[derive(Parser)]
    struct Remote {
        #[command(flatten)]
        export: ExportFlags<RemoteExport>,
    }

    #[derive(Parser)]
    struct Coordinator {
        /// The coordinator's selection temperature, beside the export's.
        #[arg(long)]
        temperature: Option<f64>,
        #[command(flatten)]
        export: ExportFlags<CoordinatorExport>,
    }

    fn offline(args: &[&str]) -> Result<ExportChoice, clap::Error> {
        Offline::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map(|o| *o.export.choice())
    }

    fn remote(args: &[&str]) -> Result<ExportChoice, clap::Error> {
        Remote::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map(|o| *o.export.choice())
    }

    #[test]
    fn each_front_end_has_the_same_defaults() {
        assert_eq!(offline(&[]).unwrap(), ExportChoice::default());
        assert_eq!(remote(&[]).unwrap(), ExportChoice::default());
        let c = Coordinator::try_parse_from(["x"]).unwrap();
        assert_eq!(*c.export.choice(), ExportChoice::default());
        assert_eq!(c.temperature, None);
    }

    #[test]
    fn the_coordinator_spells_its_flags_with_export() {
        let c = Coordinator::try_parse_from([
            "x",
            "--temperature",
            "30",
            "--export-temperature",
            "20",
            "--export-backup",
            "softmax",
            "--export-weights",
            "ndf",
            "--export-shrink",
            "--export-format",
            "ybb",
        ])
        .unwrap();
        assert_eq!(c.temperature, Some(30.0));
        let choice = c.export.choice();
        assert_eq!(choice.temperature, 20.0);
        assert_eq!(choice.backup, BackupChoice::Softmax);
        assert_eq!(choice.weights, Some(WeightsChoice::Ndf));
        assert!(choice.shrink);
        assert_eq!(choice.format, FormatChoice::Ybb);
        let raw = Coordinator::try_parse_from(["x", "--export-raw"]).unwrap();
        assert!(raw.export.choice().raw);
        for absent in ["--shrink", "--raw", "--format=ybb", "--backup=softmax"] {
            assert!(
                Coordinator::try_parse_from(["x", absent]).is_err(),
                "{absent}"
            );
        }
    }

    /// One spelling in every front end; `export` and `remote export` keep
    /// their former plain ones, the coordinator its `--export-prior-games`.
    #[test]
    fn every_front_end_takes_the_export_spellings_and_its_former_ones() {
        let new = [
            "--export-backup=softmax",
            "--export-temperature=20",
            "--export-weights=ndf",
            "--export-shrink",
            "--export-format=text",
            "--export-leaf-discount=3",
            "--export-by-results",
            "--prior-games=2",
        ];
        let coordinator = *Coordinator::try_parse_from(std::iter::once("x").chain(new))
            .unwrap()
            .export
            .choice();
        for parse in [offline, remote] {
            assert_eq!(parse(&new).unwrap(), coordinator);
            let former = parse(&[
                "--backup=softmax",
                "--temperature=20",
                "--weights=ndf",
                "--shrink",
                "--format=text",
                "--leaf-discount=3",
                "--by-results",
                "--prior-games=2",
            ]);
            assert_eq!(former.unwrap(), coordinator);
        }
        let c = Coordinator::try_parse_from(["x", "--export-prior-games=2"]).unwrap();
        assert_eq!(c.export.choice().prior_games, 2.0);
    }

    #[test]
    fn every_front_end_takes_auto_text_and_ybb() {
        for parse in [offline, remote] {
            assert_eq!(
                parse(&["--format", "auto"]).unwrap().format,
                FormatChoice::Auto
            );
            assert_eq!(
                parse(&["--format", "text"]).unwrap().format,
                FormatChoice::Text
            );
            // The former name of `text`.
            assert_eq!(
                parse(&["--format", "db2016"]).unwrap().format,
                FormatChoice::Text
            );
            assert_eq!(
                parse(&["--format", "ybb"]).unwrap().format,
                FormatChoice::Ybb
            );
            assert!(parse(&["--format", "csv"]).is_err());
        }
    }

    #[test]
    fn the_format_follows_the_extension() {
        let cases = [
            (FormatChoice::Auto, "x.ybb", Some(BookFormat::Ybb)),
            (FormatChoice::Auto, "dir.v2/x.YBB", Some(BookFormat::Ybb)),
            (FormatChoice::Auto, "x.db", Some(BookFormat::Db2016)),
            (FormatChoice::Auto, "x.db2016", Some(BookFormat::Db2016)),
            (FormatChoice::Auto, "x", Some(BookFormat::Db2016)),
            (FormatChoice::Auto, "x.ybb.bak", Some(BookFormat::Db2016)),
            (FormatChoice::Text, "x.db", Some(BookFormat::Db2016)),
            (FormatChoice::Ybb, "x.ybb", Some(BookFormat::Ybb)),
            // An extension that names no format takes an explicit one.
            (FormatChoice::Ybb, "x.bin", Some(BookFormat::Ybb)),
            (FormatChoice::Text, "x.txt", Some(BookFormat::Db2016)),
            (FormatChoice::Text, "x.ybb", None),
            (FormatChoice::Ybb, "x.db", None),
            (FormatChoice::Ybb, "x.DB2016", None),
        ];
        for (choice, path, expected) in cases {
            assert_eq!(
                choice.resolve(Path::new(path)).ok(),
                expected,
                "{choice} {path}"
            );
        }
        let err = FormatChoice::Text
            .resolve(Path::new("out/x.ybb"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the export format `text` contradicts the path `out/x.ybb`, whose extension \
             makes it a binary .ybb book: change the path's extension or leave the format \
             to `auto`"
        );
        let err = FormatChoice::Ybb.resolve(Path::new("x.db")).unwrap_err();
        assert!(err.to_string().contains("`ybb`") && err.to_string().contains("a text book"));
    }

    #[test]
    fn a_request_whose_format_contradicts_its_path_is_refused() {
        let request = ExportRequest {
            path: "book.ybb".into(),
            format: ExportFormat::Db2016.into(),
            ..ExportRequest::default()
        };
        assert!(matches!(
            ExportChoice::from_request(&request),
            Err(ExportChoiceError::FormatMismatch { .. })
        ));
        let auto = ExportRequest {
            format: ExportFormat::ByExtension.into(),
            ..request
        };
        assert_eq!(
            ExportChoice::from_request(&auto).unwrap().format,
            FormatChoice::Auto
        );
    }

    #[test]
    fn raw_excludes_shrink_backup_and_weights() {
        assert!(offline(&["--raw"]).unwrap().raw);
        assert!(offline(&["--shrink"]).unwrap().shrink);
        for other in ["--shrink", "--backup=softmax", "--weights=one"] {
            assert!(offline(&["--raw", other]).is_err(), "{other}");
            assert!(remote(&["--raw", other]).is_err(), "{other}");
        }
    }

    #[test]
    fn the_default_weights_follow_the_backup() {
        let minimax = offline(&[]).unwrap().options();
        assert_eq!(
            (minimax.backup, minimax.weights),
            (Backup::Minimax, Weights::One)
        );
        let softmax = offline(&["--backup", "softmax"]).unwrap().options();
        assert_eq!(
            (softmax.backup, softmax.weights),
            (Backup::Softmax, Weights::Policy)
        );
        let chosen = offline(&["--backup", "softmax", "--weights", "one"]).unwrap();
        assert_eq!(chosen.options().weights, Weights::One);
    }

    #[test]
    fn a_request_goes_there_and_back() {
        let choice = remote(&[
            "--backup",
            "softmax",
            "--weights",
            "policy",
            "--temperature",
            "12.5",
            "--shrink",
            "--format",
            "text",
            "--leaf-discount",
            "6",
        ])
        .unwrap();
        assert_eq!(choice.leaf_discount, 6);
        assert_eq!(choice.options().leaf_discount, 6);
        let request = choice.to_request("book.bin".into());
        assert_eq!(request.path, "book.bin");
        assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
        assert_eq!(
            choice.format.book_format(Path::new("book.bin")),
            BookFormat::Db2016
        );
        // The same weights for a binary book: refused, the request as the flags.
        let binary = ExportChoice {
            format: FormatChoice::Ybb,
            ..choice
        };
        let refused = ExportChoice::from_request(&binary.to_request("book.bin".into()));
        assert!(
            matches!(refused, Err(ExportChoiceError::WeightsInBinary { .. })),
            "{refused:?}"
        );
        assert!(binary.format_for(Path::new("book.bin")).is_err());
        assert_eq!(
            FormatChoice::Auto.book_format(Path::new("x.YBB")),
            BookFormat::Ybb
        );
        assert_eq!(
            FormatChoice::Auto.book_format(Path::new("x.db")),
            BookFormat::Db2016
        );
    }

    #[test]
    fn leaf_discounts_out_of_range_are_refused_by_flag_and_by_request() {
        let c = Coordinator::try_parse_from(["x", "--export-leaf-discount", "5"]).unwrap();
        assert_eq!(c.export.choice().leaf_discount, 5);
        for bad in [
            "--export-leaf-discount=201",
            "--export-leaf-discount=-1",
            "--leaf-discount=x",
        ] {
            let err = offline(&[bad]).unwrap_err().to_string();
            assert!(err.contains("--export-leaf-discount"), "{bad}: {err}");
        }
        assert!(offline(&["--leaf-discount", "5", "--raw"]).is_err());
        for bad in [201, -1, i32::MAX] {
            let request = ExportRequest {
                leaf_discount: bad,
                ..ExportRequest::default()
            };
            assert_eq!(
                ExportChoice::from_request(&request).unwrap_err(),
                ExportChoiceError::LeafDiscount(bad)
            );
        }
    }

    #[test]
    fn values_by_results_travel_through_every_front_end() {
        let choice = offline(&["--by-results", "--prior-games", "10"]).unwrap();
        assert!(choice.by_results);
        assert_eq!(choice.options().by_results, Some(10.0));
        assert_eq!(offline(&[]).unwrap().options().by_results, None);
        let request = choice.to_request("book.db".into());
        assert!(request.by_results);
        assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
        let c = Coordinator::try_parse_from(["x", "--export-by-results", "--prior-games", "2"])
            .unwrap();
        assert_eq!(c.export.choice().options().by_results, Some(2.0));
        let r = remote(&["--by-results"]).unwrap();
        assert_eq!(r.options().by_results, Some(DEFAULT_PRIOR_GAMES));
        // Results move values: not for a raw export.
        assert!(offline(&["--by-results", "--raw"]).is_err());
        // A negative or non-finite prior is refused, by flag and by request.
        let flags = Offline::try_parse_from(["x", "--prior-games=-1"]).unwrap();
        assert_eq!(
            flags.export.checked().unwrap_err(),
            ExportChoiceError::PriorGames(-1.0)
        );
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let request = ExportRequest {
                by_results: true,
                prior_games: bad,
                ..ExportRequest::default()
            };
            assert!(matches!(
                ExportChoice::from_request(&request),
                Err(ExportChoiceError::PriorGames(_))
            ));
        }
    }

    #[test]
    fn temperatures_of_0_and_below() {
        // A request's 0 is the default; an offline flag's 0 stays 0.
        let zero = ExportRequest::default();
        assert_eq!(
            ExportChoice::from_request(&zero).unwrap().temperature,
            DEFAULT_TEMPERATURE
        );
        let flags = Offline::try_parse_from(["x", "--temperature", "0"]).unwrap();
        assert_eq!(flags.export.checked().unwrap().temperature, 0.0);
        let negative = ExportRequest {
            temperature: -1.0,
            ..ExportRequest::default()
        };
        assert_eq!(
            ExportChoice::from_request(&negative)
                .unwrap_err()
                .to_string(),
            "the export temperature must be a positive number, not -1"
        );
        // The former spelling parses; the error names the flag's one name.
        let flags = Offline::try_parse_from(["x", "--temperature=-1"]).unwrap();
        assert_eq!(
            flags.export.checked().unwrap_err().to_string(),
            "--export-temperature must be a finite number >= 0, not -1"
        );
    }

    #[test]
    fn unknown_request_values_are_named() {
        for (request, text) in [
            (
                ExportRequest {
                    weights: 9,
                    ..ExportRequest::default()
                },
                "unknown export weights 9",
            ),
            (
                ExportRequest {
                    backup: 7,
                    ..ExportRequest::default()
                },
                "unknown export backup 7",
            ),
            (
                ExportRequest {
                    format: 5,
                    ..ExportRequest::default()
                },
                "unknown export format 5",
            ),
        ] {
            let err = ExportChoice::from_request(&request).unwrap_err();
            assert_eq!(err.to_string(), text);
        }
    }
}
