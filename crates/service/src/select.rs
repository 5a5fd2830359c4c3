//! The selection flags: how the positions to think are chosen from the book.
//! The coordinator grows the book with them; `book-tools next` lists what a
//! coordinator with the same flags would hand out, and `book-tools bench select`
//! measures it. One declaration, so the three spell them the same way
//! (`--select`, `--select-temperature`, `--select-seed`,
//! `--select-leaf-discount`).

use stera_book::{DEFAULT_SELECT_SEED, SelectMode, SoftmaxSelect};

use crate::export::MAX_LEAF_DISCOUNT;

/// Default `--select-temperature` of `--select softmax`, in centipawns.
pub const DEFAULT_SELECT_TEMPERATURE: f64 = 50.0;

/// How the positions to think are chosen (`--select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SelectKind {
    /// Super Tera-Shock: the leaf at the end of the principal variation of an
    /// alpha-beta search over the book (the reference method; always the line
    /// the book currently believes best).
    #[default]
    Alphabeta,
    /// MC Softmax: from a root, sample each move with probability proportional
    /// to exp(value / --select-temperature) until a move leaves the book; that position
    /// is thought. Spreads the thinking over near-best lines.
    Softmax,
}

/// Flags that ask for a selection no selector does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectFlagsError {
    #[error("--select-temperature applies only to --select softmax")]
    TemperatureWithoutSoftmax,
    #[error("--select-temperature must be a finite number >= 0, not {0}")]
    Temperature(f64),
}

/// `--select`, `--select-temperature`, `--select-seed` and
/// `--select-leaf-discount`, flattened into a command
/// (`#[command(flatten)]`). `temperature` is `Some` only when the command line
/// gave one, so that `--select alphabeta` can refuse it while `--help` shows
/// its default ([`SelectArgs`] is what clap parses).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectFlags {
    pub select: SelectKind,
    pub temperature: Option<f64>,
    pub select_seed: u64,
    pub leaf_discount: i16,
}

/// The selection flags as clap declares them.
#[derive(Debug, Clone, Copy, PartialEq, clap::Args)]
#[group(skip)]
struct SelectArgs {
    /// How the positions to think are chosen from the book.
    #[arg(long, value_enum, default_value = "alphabeta")]
    select: SelectKind,
    /// Softmax temperature in centipawns for `--select softmax`: a move whose
    /// value is T below another's is sampled e (2.718...) times less often. 0
    /// always takes the best move, which is `--select alphabeta` (as a
    /// temperature of 0 is minimax in exports and the best line in games).
    /// Refused with `--select alphabeta`. Formerly `--temperature`.
    #[arg(long = "select-temperature", alias = "temperature", value_name = "CP",
          default_value_t = DEFAULT_SELECT_TEMPERATURE)]
    temperature: f64,
    /// Seed of the `--select softmax` sampling: the same book, seed and sequence
    /// of selections and results give the same leaves.
    #[arg(long, value_name = "SEED", default_value_t = DEFAULT_SELECT_SEED)]
    select_seed: u64,
    /// Count a move into a position the book has not thought this many
    /// centipawns below its stored evaluation (mates excepted), 0 to 200, so
    /// that selection compares thought and unthought moves on one footing
    /// (thinking a position lowers the move into it by about twice the right
    /// discount on average; `book-tools stats` measures it). 0, the default, is
    /// the reference Super Tera-Shock. Formerly `--leaf-discount`; an export's
    /// is `--export-leaf-discount`.
    #[arg(long = "select-leaf-discount", alias = "leaf-discount", value_name = "CP", default_value_t = 0,
          value_parser = clap::value_parser!(i16).range(0..=i64::from(MAX_LEAF_DISCOUNT)))]
    leaf_discount: i16,
}

impl clap::Args for SelectFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        <SelectArgs as clap::Args>::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        <SelectArgs as clap::Args>::augment_args_for_update(cmd)
    }
}

impl clap::FromArgMatches for SelectFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let args = <SelectArgs as clap::FromArgMatches>::from_arg_matches(matches)?;
        let given =
            matches.value_source("temperature") == Some(clap::parser::ValueSource::CommandLine);
        Ok(Self {
            select: args.select,
            temperature: given.then_some(args.temperature),
            select_seed: args.select_seed,
            leaf_discount: args.leaf_discount,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = <Self as clap::FromArgMatches>::from_arg_matches(matches)?;
        Ok(())
    }
}

impl SelectFlags {
    /// The selection mode the flags ask for.
    ///
    /// # Errors
    /// `--select-temperature` with `--select alphabeta`, or a temperature that is not a
    /// finite number >= 0.
    pub fn mode(&self) -> Result<SelectMode, SelectFlagsError> {
        match self.select {
            SelectKind::Alphabeta => {
                if self.temperature.is_some() {
                    return Err(SelectFlagsError::TemperatureWithoutSoftmax);
                }
                Ok(SelectMode::AlphaBeta)
            }
            SelectKind::Softmax => {
                let temperature = self.temperature.unwrap_or(DEFAULT_SELECT_TEMPERATURE);
                if !(temperature.is_finite() && temperature >= 0.0) {
                    return Err(SelectFlagsError::Temperature(temperature));
                }
                if temperature == 0.0 {
                    // Sampling at 0 follows the best move from the root until
                    // it leaves the book: the principal variation's leaf.
                    return Ok(SelectMode::AlphaBeta);
                }
                Ok(SelectMode::Softmax(SoftmaxSelect {
                    temperature,
                    seed: self.select_seed,
                }))
            }
        }
    }

    /// The flags with `--select softmax --select-temperature T` where a command's
    /// former softmax flag (`next --softmax-temperature`, `bench select
    /// --softmax`) gave `T`.
    #[must_use]
    pub fn with_former_softmax(self, temperature: Option<f64>) -> Self {
        match temperature {
            Some(t) => Self {
                select: SelectKind::Softmax,
                temperature: Some(t),
                ..self
            },
            None => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        select: SelectFlags,
    }

    fn mode(args: &[&str]) -> Result<SelectMode, SelectFlagsError> {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .unwrap()
            .select
            .mode()
    }

    #[test]
    fn alphabeta_is_the_default() {
        assert_eq!(mode(&[]).unwrap(), SelectMode::AlphaBeta);
        assert_eq!(
            mode(&["--select", "alphabeta"]).unwrap(),
            SelectMode::AlphaBeta
        );
    }

    #[test]
    fn softmax_with_temperature_and_seed() {
        assert_eq!(
            mode(&[
                "--select",
                "softmax",
                "--select-temperature",
                "30",
                "--select-seed",
                "9"
            ])
            .unwrap(),
            SelectMode::Softmax(SoftmaxSelect {
                temperature: 30.0,
                seed: 9
            })
        );
        assert_eq!(
            mode(&["--select", "softmax"]).unwrap(),
            SelectMode::Softmax(SoftmaxSelect {
                temperature: DEFAULT_SELECT_TEMPERATURE,
                seed: DEFAULT_SELECT_SEED
            })
        );
    }

    #[test]
    fn nonsense_is_refused() {
        assert_eq!(
            mode(&["--select-temperature", "50"]),
            Err(SelectFlagsError::TemperatureWithoutSoftmax)
        );
        for t in ["-5", "NaN", "inf"] {
            let flag = format!("--temperature={t}");
            assert!(mode(&["--select", "softmax", &flag]).is_err(), "{t}");
        }
    }

    #[test]
    fn a_temperature_of_0_is_the_best_line() {
        assert_eq!(
            mode(&["--select", "softmax", "--select-temperature", "0"]).unwrap(),
            SelectMode::AlphaBeta
        );
    }

    #[test]
    fn a_former_softmax_flag_selects_softmax() {
        let flags = SelectFlags {
            select: SelectKind::Alphabeta,
            temperature: None,
            select_seed: 4,
            leaf_discount: 0,
        };
        assert_eq!(flags.with_former_softmax(None), flags);
        assert_eq!(
            flags.with_former_softmax(Some(20.0)).mode().unwrap(),
            SelectMode::Softmax(SoftmaxSelect {
                temperature: 20.0,
                seed: 4
            })
        );
    }
}
