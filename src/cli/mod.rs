//! Command line: clap definitions (one file per subcommand, `XArgs` + `run`), and the only
//! place that prints to the terminal or exits. Arguments are parsed and validated before any
//! I/O: a bad `--limit` or cursor exits 2 before a connection is made.

mod cache;
mod check;
mod completions;
mod context;
mod grep;
mod help;
mod hosts;
mod ls;
mod man;
mod mcp;
mod read;
mod resume;
mod script;
mod suggest;
mod sync;
pub mod ui;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{Error, Outcome, UsageError, exit_status};
use clankie_model::sanitize::{sanitize, sanitize_line};

pub use context::{GlobalArgs, OutputFormat};

const EXAMPLES: &str = "\
Examples:
  clankie-read ls devbox                         list sessions on a machine you can ssh to
  clankie-read ls --modified-within 2h -n 10     the 10 newest sessions here, of the last 2 hours
  clankie-read devbox:3f1c2a                     the newest 50 records of a session (id prefix)
  clankie-read 3f1c2a --all --kind user --grep deploy
                                                 this machine's session: the prompts that say deploy
  clankie-read devbox:3f1c2a --since 2h          every record of the last 2 hours (also today,
                                                 yesterday, 2026-12-01, RFC 3339)
  clankie-read devbox:3f1c2a --tail 5            its newest 5 records (--head 5: the first 5)
  clankie-read devbox:3f1c2a --follow            keep printing records as the agent works
  clankie-read devbox:3f1c2a --json --limit 200  NDJSON for scripts; ends with a `page` line
  clankie-read devbox:3f1c2a --json --since CURSOR
                                                 the records after a page's cursor
  clankie-read check --state ~/.cache/clankie.json --json
                                                 from cron: what changed on every host
  clankie-read grep -F 'rm -rf' devbox local     which sessions ran it, on two machines
  clankie-read hosts --check                     why a host does not answer
  clankie-read --root claude=./tests/fixtures/claude local:short --all
                                                 read a sample transcript shipped with the source";

/// Read AI coding agents' session transcripts on this machine or over SSH, with nothing
/// installed on the machine being read.
#[derive(Debug, Parser)]
#[command(name = "clankie-read", version, after_help = EXAMPLES, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read a session: `HOST:SESSION` (also the default: `clankie-read HOST:SESSION`).
    Read(read::ReadArgs),
    /// List sessions on hosts (default: local).
    Ls(ls::LsArgs),
    /// Search the records of every session on hosts (default: local); exit 1 when nothing
    /// matched.
    Grep(grep::GrepArgs),
    /// What changed on each host since the last run (for cron): one `activity` line per
    /// changed session.
    Check(check::CheckArgs),
    /// Copy every new record of the hosts into a store (SQLite or PostgreSQL) that `ls
    /// --store`, `grep --store` and `mcp --store` read (docs/store.md).
    Sync(sync::SyncArgs),
    /// The configured hosts; with --check, whether each answers and why not.
    Hosts(hosts::HostsArgs),
    /// Print the harness's own command that resumes a session; runs nothing.
    Resume(resume::ResumeArgs),
    /// Print the exec string and stdin a host would be sent for one primitive (no connection).
    Script(script::ScriptArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff).
    Man(man::ManArgs),
    /// Serve MCP on stdio: agents list, read and check sessions as tools (docs/mcp.md).
    Mcp(mcp::McpArgs),
    /// The local cache of session bytes that grep searches: `cache ls|clear [HOST]`.
    Cache(cache::CacheArgs),
    /// An interactive view: the sessions of hosts (default: `local` and the hosts file's),
    /// newest first; open one, scroll, search, follow it (keys below, and `?` in the view).
    Ui(ui::UiArgs),
}

impl Command {
    /// The name of a subcommand that prints no NDJSON (`--format json` is refused), else
    /// `None`.
    fn text_only(&self) -> Option<&'static str> {
        match self {
            Command::Script(_) => Some("script"),
            Command::Completions(_) => Some("completions"),
            Command::Man(_) => Some("man"),
            Command::Mcp(_) => Some("mcp"),
            Command::Ui(_) => Some("ui"),
            Command::Read(_)
            | Command::Ls(_)
            | Command::Grep(_)
            | Command::Check(_)
            | Command::Sync(_)
            | Command::Hosts(_)
            | Command::Resume(_)
            | Command::Cache(_) => None,
        }
    }
}

const SUBCOMMANDS: &[&str] = &[
    "read",
    "ls",
    "check",
    "sync",
    "grep",
    "hosts",
    "resume",
    "script",
    "completions",
    "man",
    "mcp",
    "cache",
    "ui",
    "help",
];
/// Global options that take a value (so the shorthand scan can skip their values).
const VALUE_OPTIONS: &[&str] = &[
    "--hosts",
    "--ssh-config",
    "--root",
    "--color",
    "--format",
    "--timeout",
    "--reply-timeout",
];

/// Where the first word that is neither a global option nor an option's value is (the
/// subcommand, or the target of the shorthand), if there is one before `--`.
fn first_word(args: &[OsString]) -> Option<usize> {
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].to_string_lossy();
        if arg == "--" {
            return None;
        }
        if !arg.starts_with('-') {
            return Some(i);
        }
        if VALUE_OPTIONS.contains(&arg.as_ref()) {
            i += 1;
        }
        i += 1;
    }
    None
}

/// `clankie-read HOST:SESSION …` is `clankie-read read HOST:SESSION …`, and so is a bare
/// `clankie-read SESSION …` (any first word that is not a subcommand). A read's own options may
/// come first, as `docker logs --tail 5 NAME` has them: `read` goes before the first option that
/// is not a global one (the global options are taken on either side of it).
fn expand_shorthand(mut args: Vec<OsString>) -> Vec<OsString> {
    if let Some(i) = first_word(&args)
        && !SUBCOMMANDS.contains(&args[i].to_string_lossy().as_ref())
    {
        let read_option = (1..i).find(|&j| {
            let word = args[j].to_string_lossy();
            let name = word.split_once('=').map_or(word.as_ref(), |(name, _)| name);
            word.starts_with('-') && !is_global_option(name)
        });
        args.insert(read_option.unwrap_or(i), "read".into());
    }
    args
}

/// Whether `name` (`--hosts`, `-v`) is one of the global options, which every subcommand takes.
fn is_global_option(name: &str) -> bool {
    static NAMES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        use clap::CommandFactory;
        let cli = Cli::command();
        let globals = cli.get_arguments().filter(|a| a.is_global_set());
        globals
            .flat_map(|a| {
                let long = a.get_long().map(|l| format!("--{l}"));
                let short = a.get_short().map(|s| format!("-{s}"));
                long.into_iter().chain(short)
            })
            .collect()
    });
    NAMES.iter().any(|n| n == name)
}

/// A read's `--tail N` and `--head N` spelled `--tail=N` and `--head=N` (clap takes their
/// count only after `=`, so that `--tail SESSION` leaves the session alone). The word after is
/// the count only when it is a number of 1 to 5 digits, which no session is (an id prefix has
/// at least 6 characters); a number outside 1 to 200 is then refused by clap (exit 2). Words
/// after `--` are left alone.
fn counts_joined(args: Vec<OsString>) -> Vec<OsString> {
    let Some(read) = first_word(&args).filter(|&i| args[i] == "read") else {
        return args;
    };
    let is_count = |word: &OsString| {
        word.to_str()
            .is_some_and(|w| (1..=5).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut joined = Vec::with_capacity(args.len());
    let mut words = args.into_iter().enumerate().peekable();
    let mut options_end = false;
    while let Some((i, mut arg)) = words.next() {
        options_end |= arg == "--";
        if !options_end
            && i > read
            && (arg == "--tail" || arg == "--head")
            && let Some((_, count)) = words.next_if(|(_, next)| is_count(next))
        {
            arg.push("=");
            arg.push(count);
        }
        joined.push(arg);
    }
    joined
}

/// `--json` spelled `--format=json`, so that of the two the last given wins, as for any option
/// given twice (clap's overrides between two options stop at a subcommand's level). Words after
/// `--` are left alone.
fn json_as_format(args: Vec<OsString>) -> Vec<OsString> {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.into_iter()
        .enumerate()
        .map(|(i, arg)| {
            if i < end && arg == "--json" {
                "--format=json".into()
            } else {
                arg
            }
        })
        .collect()
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> ExitCode {
    // `CLANKIE_COMPLETE=SHELL`: a completion script asking; answers and exits.
    completions::answer_if_asked();
    let args = counts_joined(json_as_format(expand_shorthand(
        std::env::args_os().collect(),
    )));
    let cli = match help::parse(args) {
        Ok(cli) => cli,
        Err(err) => {
            // A bare first word that made no read (`gerp foo`, `tail X`) is a mistyped
            // subcommand or option.
            if let Some(error) = mistyped_first_word(&std::env::args_os().collect::<Vec<_>>()) {
                return finish(Err(error.into()), false);
            }
            // clap words its own errors (and prints help and the version, which end with 0).
            let _ = err.print();
            return ExitCode::from(exit_status(&Err(err.into())));
        }
    };
    let verbose = cli.global.verbose;
    if cli.global.output_format() == OutputFormat::Json
        && let Some(command) = cli.command.text_only()
    {
        return finish(Err(UsageError::NoNdjson { command }.into()), verbose);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => return finish(Err(Error::Runtime(err)), verbose),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Read(args) => {
                let target = args.target.clone();
                suggest::after_read(&target, read::run(&cli.global, args).await, SUBCOMMANDS)
            }
            Command::Ls(args) => ls::run(&cli.global, args).await,
            Command::Check(args) => check::run(&cli.global, args).await,
            Command::Sync(args) => sync::run(&cli.global, args).await,
            Command::Grep(args) => grep::run(&cli.global, args).await,
            Command::Hosts(args) => hosts::run(&cli.global, args).await,
            Command::Resume(args) => resume::run(&cli.global, args).await,
            Command::Script(args) => script::run(&cli.global, args),
            Command::Completions(args) => completions::run(args),
            Command::Man(args) => man::run(args),
            Command::Mcp(args) => mcp::run(&cli.global, args).await,
            Command::Cache(args) => cache::run(&cli.global, args),
            Command::Ui(args) => ui::run(&cli.global, args).await,
        }
    });
    finish(result, verbose)
}

/// "did you mean" for the first word of `args` when it is not a subcommand and is close to one
/// (or is a read's option without its `--`).
fn mistyped_first_word(args: &[OsString]) -> Option<UsageError> {
    let word = args.get(first_word(args)?)?.to_str()?;
    if SUBCOMMANDS.contains(&word) {
        return None;
    }
    let suggestion = suggest::meant(word, SUBCOMMANDS)?;
    Some(UsageError::DidYouMean {
        word: word.to_string(),
        suggestion,
    })
}

/// Prints the error that ended the run, if any, as one sanitised line, and returns the exit
/// status.
fn finish(result: Result<Outcome, Error>, verbose: bool) -> ExitCode {
    let code = exit_status(&result);
    if let Err(err) = &result
        && !err.is_broken_pipe()
    {
        let message = sanitize(&err.to_string()).replace('\n', " ");
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "clankie-read: error: {message}");
        if verbose {
            let _ = writeln!(stderr, "clankie-read: exit status {code} ({err:?})");
        }
    }
    ExitCode::from(code)
}

/// Waits for every task of one run over several hosts, a step of `progress` as each ends,
/// and returns their results in the order they ended. A task's panic is this run's (as
/// `join_all` would).
pub(crate) async fn join_each<T: 'static>(
    tasks: &mut tokio::task::JoinSet<T>,
    progress: &crate::render::progress::Progress,
) -> Vec<T> {
    let mut results = Vec::with_capacity(tasks.len());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => results.push(result),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
        progress.inc(1);
    }
    progress.finish();
    results
}

/// Prints warnings (one sanitised line each) to stderr.
/// One line of advice on stderr (never an error: the exit status is not touched).
pub(crate) fn hint(line: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "clankie-read: hint: {}",
        sanitize_line(line)
    );
}

pub(crate) fn warn(lines: &[String]) {
    let mut stderr = std::io::stderr().lock();
    for line in lines {
        // One line each: a name in it shows its controls (`\r`, `\n`) instead of acting on them.
        let _ = writeln!(stderr, "clankie-read: warning: {}", sanitize_line(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn expand(args: &[&str]) -> Vec<String> {
        expand_shorthand(args.iter().map(Into::into).collect())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn shorthand() {
        assert_eq!(
            expand(&["c", "local:abc", "--tail"]),
            ["c", "read", "local:abc", "--tail"]
        );
        assert_eq!(
            expand(&["c", "--root", "claude=/x:y", "local:abc"]),
            ["c", "--root", "claude=/x:y", "read", "local:abc"]
        );
        assert_eq!(expand(&["c", "ls"]), ["c", "ls"]);
        assert_eq!(
            expand(&["c", "3f1c2a", "-n", "5"]),
            ["c", "read", "3f1c2a", "-n", "5"]
        );
        assert_eq!(
            expand(&["c", "-v", "3f1c2a"]),
            ["c", "-v", "read", "3f1c2a"]
        );
        assert_eq!(
            expand(&["c", "read", "local:abc"]),
            ["c", "read", "local:abc"]
        );
        // A read's options before the session, as `docker logs --tail 5 NAME` has them.
        assert_eq!(
            expand(&["c", "--tail", "5", "local:abc"]),
            ["c", "read", "--tail", "5", "local:abc"]
        );
        assert_eq!(
            expand(&["c", "-v", "--since", "2h", "--json", "3f1c2a"]),
            ["c", "-v", "read", "--since", "2h", "--json", "3f1c2a"]
        );
        assert_eq!(
            expand(&["c", "--format=json", "-n", "5", "3f1c2a"]),
            ["c", "--format=json", "read", "-n", "5", "3f1c2a"]
        );
    }

    #[test]
    fn a_reads_count_after_tail_or_head_is_joined_to_it_and_a_session_never_is() {
        let joined = |args: &[&str]| -> Vec<String> {
            counts_joined(expand_shorthand(args.iter().map(Into::into).collect()))
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            joined(&["c", "local:abc", "--tail", "5"]),
            ["c", "read", "local:abc", "--tail=5"]
        );
        assert_eq!(
            joined(&["c", "-v", "read", "--head", "200", "x:3f1c2a"]),
            ["c", "-v", "read", "--head=200", "x:3f1c2a"]
        );
        // Out of range, it is still the count, for clap to refuse.
        assert_eq!(
            joined(&["c", "3f1c2a", "--tail", "0"]),
            ["c", "read", "3f1c2a", "--tail=0"]
        );
        assert_eq!(
            joined(&["c", "3f1c2a", "--tail", "99999"]),
            ["c", "read", "3f1c2a", "--tail=99999"]
        );
        // A session is never the count: not a number, or 6 digits and more (an id prefix).
        for session in ["3f1c2a", "123456", "local:12", "5x"] {
            assert_eq!(
                joined(&["c", "read", "--tail", session]),
                ["c", "read", "--tail", session]
            );
        }
        assert_eq!(
            joined(&["c", "read", "--tail=7", "s", "--head"]),
            ["c", "read", "--tail=7", "s", "--head"]
        );
        // Not a read's option, and not after `--`.
        assert_eq!(
            joined(&["c", "ls", "--tail", "5"]),
            ["c", "ls", "--tail", "5"]
        );
        assert_eq!(
            joined(&["c", "read", "s", "--", "--tail", "5"]),
            ["c", "read", "s", "--", "--tail", "5"]
        );
        let parsed = |args: &[&str]| {
            let Command::Read(read) = Cli::try_parse_from(joined(args)).unwrap().command else {
                unreachable!("a read was parsed")
            };
            (read.target, read.tail, read.head)
        };
        assert_eq!(
            parsed(&["c", "s12345", "--tail", "5"]),
            ("s12345".to_string(), Some(Some(5)), None)
        );
        assert_eq!(
            parsed(&["c", "read", "--tail", "s12345"]),
            ("s12345".to_string(), Some(None), None)
        );
        assert_eq!(
            parsed(&["c", "read", "--head=3", "s12345"]),
            ("s12345".to_string(), None, Some(Some(3)))
        );
        for bad in [
            &["c", "s12345", "--tail", "0"][..],
            &["c", "s12345", "--head=201"],
        ] {
            let err = Cli::try_parse_from(joined(bad)).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn json_is_format_json_up_to_a_double_dash() {
        let spelled = |args: &[&str]| -> Vec<String> {
            json_as_format(args.iter().map(Into::into).collect())
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            spelled(&["c", "--json", "ls", "--format", "text"]),
            ["c", "--format=json", "ls", "--format", "text"]
        );
        assert_eq!(
            spelled(&["c", "grep", "--json", "--", "--json"]),
            ["c", "grep", "--format=json", "--", "--json"]
        );
        let last = |args: &[&str]| {
            let cli = Cli::try_parse_from(spelled(args)).unwrap();
            cli.global.output_format()
        };
        assert_eq!(last(&["c", "--json", "ls"]), OutputFormat::Json);
        assert_eq!(
            last(&["c", "--json", "ls", "--format", "text"]),
            OutputFormat::Text
        );
        assert_eq!(
            last(&["c", "--format", "text", "ls", "--json"]),
            OutputFormat::Json
        );
        assert_eq!(
            last(&["c", "ls", "--json", "--format=text"]),
            OutputFormat::Text
        );
    }

    #[test]
    fn clap_definitions_are_consistent() {
        Cli::command().debug_assert();
    }
}
