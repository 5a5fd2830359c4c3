//! The export flags: one set, spelled the same by the three front ends
//! (`book-tools export`, `book-tools remote export`, the coordinator), each
//! front end differing only in the former spellings it still accepts.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Command};
use stera_book::OpponentSelection;
use stera_book::results::prior_games_valid;

use super::{
    BackupChoice, ExportChoice, ExportChoiceError, FormatChoice, MAX_LEAF_DISCOUNT, WeightsChoice,
};

/// One flag: its clap id (unique within a command), its long name, the name
/// of its value in the help (clap's derive would write the id in capitals), and
/// its former spellings in this front end, hidden aliases that warn
/// ([`crate::deprecated`]).
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub id: &'static str,
    pub long: &'static str,
    pub value_name: &'static str,
    pub former: &'static [&'static str],
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
    pub opponents: Flag,
}

/// A front end of the export: the spelling of its flags.
pub trait FrontEnd {
    const FLAGS: FlagNames;
}

/// `book-tools export`.
#[derive(Debug, Clone, Copy)]
pub struct OfflineExport;

/// `book-tools remote export`.
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
        former: &[],
    }
}

/// The spellings of every front end; only the former ones differ.
const NAMES: FlagNames = FlagNames {
    // How values go to the roots: not `--export-backup`, which read like the
    // store backups of `--backup-dir` (issue 43).
    backup: setting("export_propagation", "export-propagation", "PROPAGATION"),
    temperature: setting("export_temperature", "export-temperature", "CP"),
    weights: setting("export_weights", "export-weights", "WEIGHTS"),
    shrink: setting("export_shrink", "export-shrink", ""),
    raw: setting("export_raw", "export-raw", ""),
    format: setting("export_format", "export-format", "FORMAT"),
    leaf_discount: setting("export_leaf_discount", "export-leaf-discount", "CP"),
    by_results: setting("export_by_results", "export-by-results", ""),
    // One concept with `learn` and `match --book-moves results`, so one name.
    prior_games: setting("prior_games", "prior-games", "GAMES"),
    // One concept with `match --book-moves results`, so one name.
    opponents: setting("opponents", "opponents", "LIST"),
};

const fn formerly(flag: Flag, former: &'static [&'static str]) -> Flag {
    Flag { former, ..flag }
}

/// `book-tools export` and `remote export` before the settings took the
/// `export-` prefix.
const PLAIN_FORMER: FlagNames = FlagNames {
    backup: formerly(NAMES.backup, &["backup", "export-backup"]),
    temperature: formerly(NAMES.temperature, &["temperature"]),
    weights: formerly(NAMES.weights, &["weights"]),
    shrink: formerly(NAMES.shrink, &["shrink"]),
    raw: formerly(NAMES.raw, &["raw"]),
    format: formerly(NAMES.format, &["format"]),
    leaf_discount: formerly(NAMES.leaf_discount, &["leaf-discount"]),
    by_results: formerly(NAMES.by_results, &["by-results"]),
    ..NAMES
};

impl FrontEnd for OfflineExport {
    const FLAGS: FlagNames = PLAIN_FORMER;
}

impl FrontEnd for RemoteExport {
    const FLAGS: FlagNames = PLAIN_FORMER;
}

impl FrontEnd for CoordinatorExport {
    const FLAGS: FlagNames = FlagNames {
        backup: formerly(NAMES.backup, &["export-backup"]),
        prior_games: formerly(NAMES.prior_games, &["export-prior-games"]),
        ..NAMES
    };
}

/// A flag's argument: its id, long name and former spelling.
fn arg_of(flag: Flag) -> Arg {
    Arg::new(flag.id).long(flag.long).aliases(flag.former)
}

/// The export flags of front end `F`, flattened into its command
/// (`#[command(flatten)]`); the choice they make is [`Self::choice`].
#[derive(Debug, Clone, PartialEq)]
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

    /// What the flags ask for, with the temperature checked (0 allowed: the
    /// softmax backup then is the minimax one).
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
        Ok(self.choice.clone())
    }
}

/// The flags of what the file holds: the count field, which moves, raw values,
/// the format.
fn file_args(names: FlagNames) -> [Arg; 4] {
    let t = format!("--{}", names.temperature.long);
    let backup_flag = format!("--{}", names.backup.long);
    let weights_flag = format!("--{}", names.weights.long);
    let (shrink, raw) = (names.shrink, names.raw);
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
    [weights, shrink_arg, raw_arg, format]
}

/// The flags of values by learning results.
fn results_args(names: FlagNames) -> [Arg; 3] {
    let raw = names.raw;
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
                "The weight of a move's value against its games, in games: in the values by results and, where learning games are played, in the learner's estimates (the same flag as `book-tools learn` and `match`)",
            );
    let by_results_flag = format!("--{}", names.by_results.long);
    let opponents = arg_of(names.opponents)
        .value_name(names.opponents.value_name)
        .value_parser(|text: &str| OpponentSelection::parse(text).map_err(|e| e.to_string()))
        .default_value("all")
        .help(format!(
            "With {by_results_flag}: whose learning games value the moves: `all` (every \
                 learning opponent of the store, their games added: the pooled estimate) or a \
                 comma-separated list of opponent numbers or identities as `book-tools stats` \
                 lists them. Self-play games (the coordinator's self-play games) never count here"
        ));
    [by_results, prior_games, opponents]
}

impl<F: FrontEnd> clap::Args for ExportFlags<F> {
    fn augment_args(cmd: Command) -> Command {
        let names = F::FLAGS;
        let t = format!("--{}", names.temperature.long);
        let raw = names.raw;
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
        let temperature = arg_of(names.temperature)
            .value_name(names.temperature.value_name)
            .value_parser(clap::value_parser!(f64))
            // DEFAULT_TEMPERATURE as text (test `each_front_end_has_the_same_defaults`).
            .default_value("50")
            .help(
                "Softmax temperature in centipawns (softmax propagation and policy \
                 weights); 0 is minimax: the softmax propagation at 0 is the minimax one \
                 and the policy weights go to the best moves",
            );
        let [weights, shrink_arg, raw_arg, format] = file_args(names);
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
        let [by_results, prior_games, opponents] = results_args(names);
        cmd.arg(backup)
            .arg(temperature)
            .arg(leaf_discount)
            .arg(by_results)
            .arg(prior_games)
            .arg(opponents)
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
        let opponents = matches
            .get_one::<OpponentSelection>(names.opponents.id)
            .cloned()
            .ok_or_else(|| missing(names.opponents))?;
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
                opponents,
            },
            front_end: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
