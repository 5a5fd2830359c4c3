//! Former flag spellings: every hidden alias of a flag is a spelling it had
//! before (issue 36, "one vocabulary"), accepted for a release with a warning
//! on stderr that names the flag's one name now. The rule for the names is in
//! ARCHITECTURE.md, "One vocabulary".

use std::ffi::OsString;
use std::io::Write;

use clap::{ArgMatches, Command};

/// Parses `argv` as `P` (exiting as clap does on `--help` or an error), and
/// prints `warning: --old is deprecated; use --new` on stderr for every former
/// spelling it used.
pub fn parse_from<P, I, T>(argv: I) -> P
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let mut cmd = P::command();
    let matches = match cmd.clone().try_get_matches_from(argv.iter().cloned()) {
        Ok(matches) => matches,
        Err(e) => exit_bounded(&e),
    };
    // A closed stderr (`2>&-`, a reader gone) is no reason to panic: the
    // warning is dropped and the command goes on.
    let mut stderr = std::io::stderr().lock();
    for warning in warnings(&cmd, &matches, &argv) {
        let _ = writeln!(stderr, "{warning}");
    }
    drop(stderr);
    P::from_arg_matches(&matches).unwrap_or_else(|e| exit_bounded(&e.format(&mut cmd)))
}

/// Exits as clap does for `e`, with its message bounded: a value clap refuses
/// (a URL of 100 KB) is quoted by a few hundred bytes of it. Help and version
/// are printed whole.
fn exit_bounded(e: &clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let _ = write!(
        std::io::stderr().lock(),
        "{}",
        stera_rules::excerpt_message(&text)
    );
    std::process::exit(e.exit_code());
}

/// The warnings for the former spellings among `argv` (its first word, the
/// program, skipped), for the commands `matches` went through.
#[must_use]
pub fn warnings(cmd: &Command, matches: &ArgMatches, argv: &[OsString]) -> Vec<String> {
    let mut chain = vec![cmd];
    let (mut cmd, mut matches) = (cmd, matches);
    while let Some((name, sub)) = matches.subcommand() {
        let Some(next) = cmd.find_subcommand(name) else {
            break;
        };
        chain.push(next);
        (cmd, matches) = (next, sub);
    }
    let mut found = Vec::new();
    for word in argv.iter().skip(1) {
        let Some(word) = word.to_str() else { continue };
        if word == "--" {
            break;
        }
        let Some(flag) = word.strip_prefix("--") else {
            continue;
        };
        let name = flag.split_once('=').map_or(flag, |(name, _)| name);
        let now = chain.iter().rev().find_map(|c| {
            c.get_arguments().find_map(|arg| {
                let hidden_alias = arg.get_long() != Some(name)
                    && arg
                        .get_all_aliases()
                        .is_some_and(|aliases| aliases.contains(&name));
                hidden_alias.then(|| arg.get_long()).flatten()
            })
        });
        if let Some(now) = now {
            found.push(format!("warning: --{name} is deprecated; use --{now}"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser, Subcommand};

    #[derive(Parser)]
    struct Cli {
        #[arg(long, alias = "old-top")]
        top: Option<u32>,
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Subcommand)]
    enum Sub {
        Go {
            #[arg(long, alias = "temperature")]
            select_temperature: Option<f64>,
            #[arg(long)]
            seed: Option<u64>,
            rest: Vec<String>,
        },
    }

    fn warned(args: &[&str]) -> Vec<String> {
        let argv: Vec<OsString> = std::iter::once("x")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let matches = Cli::command().get_matches_from(argv.clone());
        warnings(&Cli::command(), &matches, &argv)
    }

    #[test]
    fn a_former_spelling_is_named_with_its_new_one() {
        assert_eq!(
            warned(&["go", "--temperature", "3", "--seed", "1"]),
            ["warning: --temperature is deprecated; use --select-temperature"]
        );
        assert_eq!(
            warned(&["--old-top=1", "go", "--temperature=3"]),
            [
                "warning: --old-top is deprecated; use --top",
                "warning: --temperature is deprecated; use --select-temperature"
            ]
        );
        assert!(warned(&["go", "--select-temperature", "3"]).is_empty());
        assert!(warned(&["go", "--", "--temperature"]).is_empty());
    }
}
