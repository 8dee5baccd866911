//! The parsed command line's help, per subcommand: its own options first, the global ones after
//! under their headings ([`super::context::HOST_OPTIONS`], [`super::context::OUTPUT_OPTIONS`]),
//! then examples of its own; a global option that does nothing for a subcommand (`--timeout`
//! for `man`) is not shown in its help (it is still accepted, as everywhere).

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use super::Cli;

/// Examples shown after each subcommand's options.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "read",
        "Examples:
  clankie-read read devbox:3f1c2a                 the newest 50 records (the same as devbox:3f1c2a)
  clankie-read read devbox:3f1c2a --tail 5        the newest 5 (--head 5: the first 5)
  clankie-read read devbox:3f1c2a --since 2h      every record of the last 2 hours
  clankie-read read devbox:3f1c2a --kind user     only what the person typed
  clankie-read read devbox:3f1c2a --follow        keep printing records as the agent works
  clankie-read read devbox:3f1c2a --show-cursor   end the page with its cursor, for --since
  clankie-read read 'devbox:*' --follow           every session of the host that changes

On a terminal a page starts with its session header: title, harness and id, directory, model,
started and last activity, records shown and their tokens, and `earlier records not shown
(--head, --all)` when older records exist. The cursor line only with --show-cursor.",
    ),
    (
        "ls",
        "Examples:
  clankie-read ls                                 the sessions on this machine, newest first
  clankie-read ls devbox local                    on two machines, in one table
  clankie-read ls --modified-within 2h -n 10      the 10 newest of the last 2 hours
  clankie-read ls devbox --json                   NDJSON, one `session` line each",
    ),
    (
        "grep",
        "Examples:
  clankie-read grep deploy                        every record that says deploy, here
  clankie-read grep -F 'rm -rf' devbox local      which sessions ran it, on two machines
  clankie-read grep -l TODO devbox                the sessions only
  clankie-read grep --verify TODO devbox          cached copies checked by the host's hash",
    ),
    (
        "check",
        "Examples:
  clankie-read check --state ~/.cache/clankie.json          what changed since the last run
  clankie-read check devbox --records --state ~/.cache/c.json   and their new records
  clankie-read check --json --state ~/.cache/clankie.json   NDJSON `activity` lines, for cron",
    ),
    (
        "sync",
        "Examples:
  clankie-read sync                               this machine and the hosts file into the default store
  clankie-read sync devbox --into sqlite:team.db  one host into a SQLite store
  clankie-read sync --into postgres://clankie@db/history   the fleet into PostgreSQL, from cron
  clankie-read grep --store sqlite:team.db deploy  then search the store, no host contacted",
    ),
    (
        "hosts",
        "Examples:
  clankie-read hosts                              the configured hosts, as a table
  clankie-read hosts --check                      whether each answers, and why not
  clankie-read hosts --check devbox -v            one host, telling each step",
    ),
    (
        "resume",
        "Examples:
  clankie-read resume devbox:3f1c2a               the command that resumes it (runs nothing)
  eval \"$(clankie-read resume 3f1c2a)\"            resume it here",
    ),
    (
        "script",
        "Examples:
  clankie-read script list devbox                 what `ls` would send the host
  clankie-read script read devbox PATH            what a read of PATH would send",
    ),
    (
        "completions",
        "Examples:
  clankie-read completions bash > ~/.local/share/bash-completion/completions/clankie-read
  clankie-read completions zsh > ~/.zfunc/_clankie-read
  clankie-read completions fish > ~/.config/fish/completions/clankie-read.fish",
    ),
    (
        "man",
        "Examples:
  clankie-read man | man -l -                     read it
  clankie-read man > ~/.local/share/man/man1/clankie-read.1",
    ),
    (
        "mcp",
        "Examples:
  clankie-read mcp                                serve MCP on stdio (docs/mcp.md)
  {\"command\": \"clankie-read\", \"args\": [\"mcp\"]}   in an agent's MCP server list",
    ),
    (
        "cache",
        "Examples:
  clankie-read cache ls                           what grep keeps of remote sessions
  clankie-read cache clear devbox                 forget one host's",
    ),
];

/// Subcommands that reach no host and print only text: no global option applies to them.
const LOCAL_TEXT_ONLY: &[&str] = &["man", "completions"];

/// The command line's definition with each subcommand's examples, and the global options
/// hidden where they do nothing.
pub(super) fn command() -> clap::Command {
    let mut cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    for (name, examples) in EXAMPLES {
        cmd = cmd.mut_subcommand(*name, |sub| sub.after_help(*examples));
    }
    // A subcommand that has an argument of a global's id is not given the global: the copy,
    // hidden, parses the same and is not shown.
    for name in LOCAL_TEXT_ONLY {
        cmd = cmd.mut_subcommand(*name, |sub| {
            sub.args(globals.iter().map(|arg| arg.clone().hide(true)))
        });
    }
    cmd
}

/// Parses `args` as clap does, with [`command`]'s help.
pub(super) fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_has_examples() {
        let cmd = command();
        for sub in cmd.get_subcommands() {
            assert!(
                sub.get_after_help().is_some(),
                "{} has no examples",
                sub.get_name()
            );
        }
    }
}
