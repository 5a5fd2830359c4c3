//! The export choice: how a tera-shock book is written (values backed up by
//! minimax or softmax, at which temperature, what each move's count carries,
//! which file format, shrunk or raw). Three front ends ask for it, with one set
//! of flags declared here: `book-tools export` (an offline export of a stopped
//! store), `book-tools remote export` (the Export RPC of a running coordinator)
//! and the coordinator's own `--export-*` flags (its periodic and final exports).
//!
//! It lives in the service crate because two of the three front ends speak the
//! protocol: the choice converts to and from [`ExportRequest`], and to the book
//! crate's [`ExportOptions`], so that "which weights by default" and "what a
//! temperature of 0 means" are decided in one place.
//!
//! Where the front ends differ, each keeps what it accepted before (issue 28
//! will unify the vocabulary): the flags' names (`--backup` or
//! `--export-backup`), which flags exist (the coordinator has no `--shrink`,
//! `--raw` or `--format`: its format follows the path's extension), which
//! formats `--format` accepts (`auto` only for `remote export`), and what a
//! temperature of 0 means (`book-tools export` uses 0 as given; a request of 0
//! asks for the default, [`DEFAULT_TEMPERATURE`]).

use std::marker::PhantomData;
use std::path::Path;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Arg, ArgAction, ArgMatches, Command, ValueEnum};
use stera_book::terashock::{Backup, BookFormat, ExportOptions, Weights};
use stera_proto::v1::{ExportBackup, ExportFormat, ExportRequest, ExportWeights};

/// The softmax temperature (centipawns) of an export that names none: the
/// flags' default, and what a request's 0 means.
pub const DEFAULT_TEMPERATURE: f64 = 50.0;

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
/// anything else DB2016 text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FormatChoice {
    /// By the path's extension: `.ybb` binary, anything else text.
    #[default]
    Auto,
    /// YaneuraOu DB2016 text.
    Db2016,
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
    /// A request's temperature is negative or not a number.
    #[error("the export temperature must be a positive number, not {0}")]
    Temperature(f64),
    /// A temperature flag is negative or not a number (the flag's own name, so
    /// the user knows which to fix).
    #[error("--{flag} must be a finite number >= 0, not {value}")]
    TemperatureFlag { flag: &'static str, value: f64 },
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

impl FormatChoice {
    /// The file format to write at `path`.
    #[must_use]
    pub fn book_format(self, path: &Path) -> BookFormat {
        let ybb = match self {
            Self::Auto => path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("ybb")),
            Self::Db2016 => false,
            Self::Ybb => true,
        };
        if ybb {
            BookFormat::Ybb
        } else {
            BookFormat::Db2016
        }
    }

    #[must_use]
    pub fn to_proto(self) -> ExportFormat {
        match self {
            Self::Auto => ExportFormat::ByExtension,
            Self::Db2016 => ExportFormat::Db2016,
            Self::Ybb => ExportFormat::Ybb,
        }
    }

    /// # Errors
    /// A value the protocol does not define.
    pub fn from_proto(value: i32) -> Result<Self, ExportChoiceError> {
        match ExportFormat::try_from(value) {
            Ok(ExportFormat::ByExtension) => Ok(Self::Auto),
            Ok(ExportFormat::Db2016) => Ok(Self::Db2016),
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
        }
    }

    /// What `request` asks for; a temperature of 0 is [`DEFAULT_TEMPERATURE`].
    ///
    /// # Errors
    /// An unknown backup, weights or format, a negative or non-finite temperature.
    pub fn from_request(request: &ExportRequest) -> Result<Self, ExportChoiceError> {
        let backup = BackupChoice::from_proto(request.backup)?;
        let weights = WeightsChoice::from_proto(request.weights)?;
        let format = FormatChoice::from_proto(request.format)?;
        let temperature = if request.temperature == 0.0 {
            DEFAULT_TEMPERATURE
        } else {
            request.temperature
        };
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(ExportChoiceError::Temperature(request.temperature));
        }
        Ok(Self {
            shrink: request.shrink,
            raw: request.raw,
            backup,
            temperature,
            weights,
            format,
        })
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
        }
    }
}

/// One flag: its clap id (unique within a command), its long name and the name
/// of its value in the help (clap's derive would write the id in capitals).
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub id: &'static str,
    pub long: &'static str,
    pub value_name: &'static str,
}

/// How a front end spells the export flags, and which of them it offers.
#[derive(Debug, Clone, Copy)]
pub struct FlagNames {
    pub backup: Flag,
    pub temperature: Flag,
    pub weights: Flag,
    /// `--shrink` and `--raw`, where the front end offers them.
    pub shrink_raw: Option<(Flag, Flag)>,
    /// `--format` and whether it accepts `auto` (then its default), where the
    /// front end offers it; otherwise the format follows the path's extension.
    pub format: Option<(Flag, bool)>,
    /// Whether a temperature of 0 asks for the default (it travels in a request,
    /// where 0 is "not given") rather than for 0 itself.
    pub zero_temperature_is_default: bool,
}

/// A front end of the export: the spelling of its flags.
pub trait FrontEnd {
    const FLAGS: FlagNames;
}

/// `book-tools export`: plain names, `--format db2016|ybb` (default `db2016`).
#[derive(Debug, Clone, Copy)]
pub struct OfflineExport;

/// `book-tools remote export`: plain names, `--format auto|db2016|ybb` (default
/// `auto`).
#[derive(Debug, Clone, Copy)]
pub struct RemoteExport;

/// The coordinator's `--export-backup`, `--export-temperature` and
/// `--export-weights` (beside its own `--temperature` of selection).
#[derive(Debug, Clone, Copy)]
pub struct CoordinatorExport;

const fn plain(name: &'static str, value_name: &'static str) -> Flag {
    Flag {
        id: name,
        long: name,
        value_name,
    }
}

const PLAIN: FlagNames = FlagNames {
    backup: plain("backup", "BACKUP"),
    temperature: plain("temperature", "TEMPERATURE"),
    weights: plain("weights", "WEIGHTS"),
    shrink_raw: Some((plain("shrink", ""), plain("raw", ""))),
    format: Some((plain("format", "FORMAT"), false)),
    zero_temperature_is_default: false,
};

impl FrontEnd for OfflineExport {
    const FLAGS: FlagNames = PLAIN;
}

impl FrontEnd for RemoteExport {
    const FLAGS: FlagNames = FlagNames {
        format: Some((plain("format", "FORMAT"), true)),
        zero_temperature_is_default: true,
        ..PLAIN
    };
}

impl FrontEnd for CoordinatorExport {
    const FLAGS: FlagNames = FlagNames {
        backup: Flag {
            id: "export_backup",
            long: "export-backup",
            value_name: "EXPORT_BACKUP",
        },
        temperature: Flag {
            id: "export_temperature",
            long: "export-temperature",
            value_name: "EXPORT_TEMPERATURE",
        },
        weights: Flag {
            id: "export_weights",
            long: "export-weights",
            value_name: "EXPORT_WEIGHTS",
        },
        shrink_raw: None,
        format: None,
        zero_temperature_is_default: true,
    };
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
        let raw = names.shrink_raw.map(|(_, raw)| raw.id);
        let mut backup = Arg::new(names.backup.id)
            .long(names.backup.long)
            .value_name(names.backup.value_name)
            .value_parser(clap::value_parser!(BackupChoice))
            .default_value("minimax")
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
        let temperature = Arg::new(names.temperature.id)
            .long(names.temperature.long)
            .value_name(names.temperature.value_name)
            .value_parser(clap::value_parser!(f64))
            // DEFAULT_TEMPERATURE as text (test `each_front_end_keeps_its_defaults`).
            .default_value("50")
            .help(format!(
                "Softmax temperature in centipawns (backup and policy weights); {zero}"
            ));
        let mut weights = Arg::new(names.weights.id)
            .long(names.weights.long)
            .value_name(names.weights.value_name)
            .value_parser(clap::value_parser!(WeightsChoice))
            .help(format!(
                "What each move's `count` carries: `one` (1 everywhere); `policy` (the \
                 softmax policy of the written values at {t}, summing to 10000 per \
                 position; YaneuraOu plays by it with ConsiderBookMoveCount); or `ndf` \
                 (NineDayFever: the probability that a move is the best from the game \
                 results per position, capped at twice its policy weight; positions and \
                 moves without games keep the policy). Default: `policy` with \
                 {backup_flag} softmax, else `one`"
            ));
        if let Some(raw) = raw {
            backup = backup.conflicts_with(raw);
            weights = weights.conflicts_with(raw);
        }
        let mut cmd = cmd.arg(backup).arg(temperature).arg(weights);
        if let Some((shrink, raw)) = names.shrink_raw {
            cmd = cmd
                .arg(
                    Arg::new(shrink.id)
                        .long(shrink.long)
                        .action(ArgAction::SetTrue)
                        .help("Keep only the moves whose propagated value equals the best move's"),
                )
                .arg(
                    Arg::new(raw.id)
                        .long(raw.long)
                        .action(ArgAction::SetTrue)
                        .conflicts_with(shrink.id)
                        .help(
                            "Write the stored values and search depths without minimax: a \
                             book that `import` reads back into the same nodes (`import \
                             --keep-twins` when the store holds a position and its \
                             colour-flipped twin both)",
                        ),
                );
        }
        if let Some((format, auto)) = names.format {
            let (accepted, default, help): (&[FormatChoice], _, _) = if auto {
                (
                    &[FormatChoice::Auto, FormatChoice::Db2016, FormatChoice::Ybb],
                    "auto",
                    "The file's format: `auto` (a path ending in `.ybb` gets a binary book, \
                     anything else DB2016 text), `db2016` or `ybb` (YaneuraOu's binary book)",
                )
            } else {
                (
                    &[FormatChoice::Db2016, FormatChoice::Ybb],
                    "db2016",
                    "The file format: `db2016` (YaneuraOu's text book) or `ybb` (its binary \
                     book, \"YANE-BINBOOK-V1\": moves with value and depth, no ponder and no \
                     count, so --weights does not reach it)",
                )
            };
            let values = accepted.iter().filter_map(ValueEnum::to_possible_value);
            cmd = cmd.arg(
                Arg::new(format.id)
                    .long(format.long)
                    .value_name(format.value_name)
                    .value_parser(
                        PossibleValuesParser::new(values)
                            .try_map(|name| FormatChoice::from_str(&name, false)),
                    )
                    .default_value(default)
                    .help(help),
            );
        }
        cmd
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
        let (shrink, raw) = match names.shrink_raw {
            Some((shrink, raw)) => (matches.get_flag(shrink.id), matches.get_flag(raw.id)),
            None => (false, false),
        };
        let format = match names.format {
            Some((format, _)) => *matches
                .get_one::<FormatChoice>(format.id)
                .ok_or_else(|| missing(format))?,
            None => FormatChoice::Auto,
        };
        Ok(Self {
            choice: ExportChoice {
                shrink,
                raw,
                backup,
                temperature,
                weights,
                format,
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
    fn each_front_end_keeps_its_defaults() {
        let o = offline(&[]).unwrap();
        assert_eq!(
            o,
            ExportChoice {
                format: FormatChoice::Db2016,
                ..ExportChoice::default()
            }
        );
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
        ])
        .unwrap();
        assert_eq!(c.temperature, Some(30.0));
        let choice = c.export.choice();
        assert_eq!(choice.temperature, 20.0);
        assert_eq!(choice.backup, BackupChoice::Softmax);
        assert_eq!(choice.weights, Some(WeightsChoice::Ndf));
        for absent in ["--shrink", "--raw", "--format=ybb", "--backup=softmax"] {
            assert!(
                Coordinator::try_parse_from(["x", absent]).is_err(),
                "{absent}"
            );
        }
    }

    #[test]
    fn only_remote_export_accepts_auto() {
        assert!(offline(&["--format", "auto"]).is_err());
        assert_eq!(
            offline(&["--format", "ybb"]).unwrap().format,
            FormatChoice::Ybb
        );
        assert_eq!(
            remote(&["--format", "auto"]).unwrap().format,
            FormatChoice::Auto
        );
        assert_eq!(
            remote(&["--format", "db2016"]).unwrap().format,
            FormatChoice::Db2016
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
            "ybb",
        ])
        .unwrap();
        let request = choice.to_request("book.bin".into());
        assert_eq!(request.path, "book.bin");
        assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
        assert_eq!(
            choice.format.book_format(Path::new("book.bin")),
            BookFormat::Ybb
        );
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
        let flags = Offline::try_parse_from(["x", "--temperature=-1"]).unwrap();
        assert_eq!(
            flags.export.checked().unwrap_err().to_string(),
            "--temperature must be a finite number >= 0, not -1"
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
