//! One parsed context per run, like ripgrep's `HiArgs` and jj's `CommandHelper`: the global
//! options, then — parsed and loaded once — the `--root` overrides, the hosts file and the SSH
//! config path, and what subcommands ask of them: the renderer, and a host opened by name with
//! its roots and what its SSH connection is lent (`-v`'s story, a passphrase prompt). Also
//! `HOST:SESSION` parsing, which `read` and `resume` share.

use std::ffi::OsString;
use std::io::IsTerminal;
#[cfg(unix)]
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::config::HostsFile;
use crate::error::{Error, UsageError};
use crate::render::Renderer;
use crate::render::text::TextOptions;
use clankie_host::ssh::{
    ConfigSource, ConnectOptions, ConnectionLog, DEFAULT_IDLE_TIMEOUT, PassphrasePrompt,
    ReplyTimeouts,
};
#[cfg(windows)]
use clankie_host::windows_shims::OsStringExt;
use clankie_host::{AnyHost, Dialect, HostConfig, Transport};
use clankie_model::RootSpec;
use clankie_model::sanitize::sanitize;

/// The built-in name of this machine (the hosts file cannot define it).
const LOCAL: &str = "local";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset.
    Auto,
    Always,
    Never,
}

/// How a run prints: the one choice every subcommand's output follows (a [`Renderer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// For people: coloured on a terminal, wrapped to its width.
    #[default]
    Text,
    /// NDJSON: one JSON object per line, each with a `type`.
    Json,
}

/// The heading of the global options that say which hosts and how to reach them: every
/// subcommand's help lists them after its own.
pub(super) const HOST_OPTIONS: &str = "Global host options";
/// The heading of the global options that say how to print.
pub(super) const OUTPUT_OPTIONS: &str = "Global output options";

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Hosts file [default: $CLANKIE_HOSTS, else ~/.config/clankie/hosts.toml].
    #[arg(long, global = true, help_heading = HOST_OPTIONS, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// SSH configuration file, like `ssh -F` [default: ~/.ssh/config].
    #[arg(long, global = true, help_heading = HOST_OPTIONS, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    // Its help names every harness, from the registry (`root_help`).
    #[arg(long = "root", global = true, help_heading = HOST_OPTIONS, value_name = "HARNESS=DIR", help = root_help())]
    pub roots: Vec<String>,
    /// When to colour text output.
    #[arg(long, global = true, help_heading = OUTPUT_OPTIONS, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Output: text for people, or NDJSON for scripts (docs/ndjson.md). `script`,
    /// `completions`, `man` and `mcp` print text only.
    #[arg(
        long,
        global = true, help_heading = OUTPUT_OPTIONS,
        value_enum,
        default_value_t = OutputFormat::Text,
        overrides_with = "format"
    )]
    pub format: OutputFormat,
    /// The same as --format json.
    // `main` spells it `--format=json` before clap parses the line, so that the last of the two
    // wins wherever each stands (clap's `overrides_with` does not reach across a subcommand's
    // level); declared here for --help, the man page and completion.
    #[arg(long, global = true, help_heading = OUTPUT_OPTIONS)]
    pub json: bool,
    /// Say more on stderr.
    #[arg(short, long, global = true, help_heading = OUTPUT_OPTIONS)]
    pub verbose: bool,
    /// Give up on a host whose reply to a command has sent no byte for SECS (fractions
    /// allowed); exit 3.
    #[arg(
        long,
        global = true, help_heading = HOST_OPTIONS,
        value_name = "SECS",
        default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64()
    )]
    pub timeout: f64,
    /// Give up on a host whose reply to one command is not complete after SECS, however
    /// steadily it arrives [default: 10 × --timeout, so 300].
    #[arg(long, global = true, help_heading = HOST_OPTIONS, value_name = "SECS")]
    pub reply_timeout: Option<f64>,
}

/// The help of `--root`: what it does, and every harness's name.
fn root_help() -> String {
    let names: Vec<&str> = clankie_engine::harness::all().map(|h| h.name()).collect();
    format!(
        "A harness's home directory on the addressed host, replacing its default \
         (e.g. `claude=/srv/agent/.claude`). Repeatable. HARNESS is one of: {}",
        names.join(", ")
    )
}

impl GlobalArgs {
    /// `--format`, or `--json` (on a line parsed without `main`'s spelling of it as
    /// `--format=json`).
    pub fn output_format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.format
        }
    }

    /// The output of a run that reaches no host (no hosts file is read).
    pub(super) fn renderer(&self) -> Renderer {
        renderer(self.output_format(), self.color_enabled(), false)
    }

    /// Parses the `--root HARNESS=DIR` options (no I/O). An unknown harness is a usage error
    /// naming the supported ones.
    pub fn root_overrides(&self) -> Result<Vec<RootSpec>, UsageError> {
        self.roots.iter().map(|spec| parse_root(spec)).collect()
    }

    /// The time bounds of each command's reply (no I/O): `--timeout` for silence, and
    /// `--reply-timeout` (else ten times `--timeout`) for the whole reply.
    pub fn reply_timeouts(&self) -> Result<ReplyTimeouts, UsageError> {
        let idle = positive_secs("--timeout", self.timeout)?;
        let total = match self.reply_timeout {
            Some(secs) => positive_secs("--reply-timeout", secs)?,
            None => idle.saturating_mul(REPLY_TIMEOUT_FACTOR),
        };
        Ok(ReplyTimeouts { idle, total })
    }

    pub(super) fn color_enabled(&self) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// The one place a run's output is chosen: NDJSON, or text coloured (or not) and wrapped to the
/// terminal's width.
fn renderer(format: OutputFormat, color: bool, full: bool) -> Renderer {
    match format {
        OutputFormat::Json => Renderer::Ndjson,
        OutputFormat::Text => Renderer::text(TextOptions {
            full,
            color,
            width: crate::render::tty::stdout_width(),
            ..TextOptions::default()
        }),
    }
}

/// `--reply-timeout` when not given: this many times `--timeout` (30 s → 300 s).
const REPLY_TIMEOUT_FACTOR: u32 = 10;

/// A time bound given in seconds: positive and finite, else a usage error naming the flag.
pub(super) fn positive_secs(flag: &'static str, secs: f64) -> Result<Duration, UsageError> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(UsageError::Timeout { flag, secs }),
    }
}

fn parse_root(spec: &str) -> Result<RootSpec, UsageError> {
    let (name, dir) = spec.split_once('=').ok_or_else(|| UsageError::RootSyntax {
        spec: spec.to_string(),
    })?;
    let harness =
        clankie_engine::harness::by_name(name).ok_or_else(|| UsageError::UnknownHarness {
            name: name.to_string(),
        })?;
    if dir.is_empty() {
        return Err(UsageError::RootWithoutDir {
            harness: name.to_string(),
        });
    }
    Ok(RootSpec {
        harness,
        dir: Some(OsString::from(dir).into_vec()),
    })
}

/// What a subcommand that reaches hosts works from: the global options parsed, the hosts file
/// loaded.
#[derive(Debug)]
pub(super) struct Context {
    verbose: bool,
    /// `--format` (or `--json`).
    format: OutputFormat,
    color: bool,
    /// `--root`: each replaces the hosts file's root of its harness, on every host.
    roots: Vec<RootSpec>,
    hosts: HostsFile,
    ssh_config: Option<PathBuf>,
    /// `--timeout`, `--reply-timeout`: given to every host opened.
    timeouts: ReplyTimeouts,
    /// Lent to every SSH host opened: `-v`'s connection story, the passphrase prompt.
    connect: ConnectOptions,
    /// Whether the run said already that the built-in SSH config parser stands in for `ssh`.
    warned_builtin_parser: AtomicBool,
}

/// A host as the user addressed it, opened (not yet connected), with its roots: `--root`
/// replaces the hosts file's roots, which replace the harnesses' defaults.
#[derive(Debug)]
pub(super) struct OpenHost {
    pub host: AnyHost,
    pub roots: Vec<RootSpec>,
}

impl Context {
    /// Parses the global options and loads the hosts file. A subcommand builds its context
    /// once its own arguments are validated, so that a bad cursor or target is reported before
    /// any file is read.
    pub(super) fn new(global: &GlobalArgs) -> Result<Context, Error> {
        let roots = global.root_overrides()?;
        let timeouts = global.reply_timeouts()?;
        let hosts = HostsFile::load(global.hosts.as_deref())?;
        Ok(Context {
            verbose: global.verbose,
            format: global.output_format(),
            color: global.color_enabled(),
            roots,
            hosts,
            ssh_config: global.ssh_config.clone(),
            timeouts,
            connect: connect_options(global.verbose),
            warned_builtin_parser: AtomicBool::new(false),
        })
    }

    /// This context with nothing said or asked on the terminal: no passphrase prompt, no
    /// notice, no warning about the SSH config parser. Completion runs under a Tab key press,
    /// where a prompt would hang the shell and a line on stderr would garble the command line.
    pub(super) fn quiet(mut self) -> Context {
        self.verbose = false;
        self.connect = ConnectOptions::default();
        self.warned_builtin_parser = AtomicBool::new(true);
        self
    }

    /// `-v`: say more on stderr.
    pub(super) fn verbose(&self) -> bool {
        self.verbose
    }

    pub(super) fn hosts_file(&self) -> &HostsFile {
        &self.hosts
    }

    /// The hosts a command that names none goes over (`check`, MCP's `check`): `local`, then
    /// every host of the hosts file.
    pub(super) fn default_hosts(&self) -> Vec<String> {
        let mut names = vec!["local".to_string()];
        names.extend(
            self.hosts
                .names()
                .filter(|name| *name != "local")
                .map(String::from),
        );
        names
    }

    /// The output of this run (`--format`); `full` is `read --full`.
    pub(super) fn renderer(&self, full: bool) -> Renderer {
        renderer(self.format, self.color, full)
    }

    /// How the host named `name` is reached: `local`, a host of the hosts file, or else
    /// `[user@]alias` for the SSH config.
    pub(super) fn host_config(&self, name: &str) -> HostConfig {
        self.lookup(name).0
    }

    /// Opens the host named `name` with its roots. Nothing is connected yet.
    pub(super) fn open(&self, name: &str) -> Result<OpenHost, Error> {
        let (config, file_roots) = self.lookup(name);
        let mut host = clankie_host::open(&config, self.ssh_config.as_deref())?;
        host.set_reply_timeouts(self.timeouts);
        if let AnyHost::Ssh(ssh) = &mut host {
            ssh.set_connect_options(self.connect.clone());
            if let Some(ConfigSource::BuiltIn { why, .. }) = ssh.target().map(|t| &t.config_source)
                && !self.warned_builtin_parser.swap(true, Ordering::Relaxed)
            {
                super::warn(&[format!(
                    "{why}: reading the SSH configuration with the built-in parser (no system \
                     file; Match on host, originalhost, user and localuser only, any other \
                     Match is refused)"
                )]);
            }
        }
        let mut roots = self.roots.clone();
        roots.extend(
            file_roots
                .iter()
                .filter(|r| !self.roots.iter().any(|c| c.harness == r.harness))
                .cloned(),
        );
        Ok(OpenHost { host, roots })
    }

    /// A host's config and its hosts-file roots.
    fn lookup(&self, name: &str) -> (HostConfig, &[RootSpec]) {
        if name == LOCAL {
            let config = HostConfig {
                name: LOCAL.to_string(),
                transport: Transport::Local,
                // Runs no script; `hosts` has always shown this machine as `posix`.
                shell: Some(Dialect::Posix),
            };
            return (config, &[]);
        }
        match self.hosts.get(name) {
            Some(entry) => (entry.config.clone(), &entry.roots),
            None => (HostConfig::ssh(name), &[]),
        }
    }
}

/// What every SSH connection of the run is lent: with `-v`, its story on stderr (one sanitised
/// `debug:` line per step); always, what `ssh` says without `-v`, and our own warnings; when stdin and stderr are a terminal, a passphrase prompt on the
/// terminal (echo off). Without a terminal (cron) nothing is ever asked.
fn connect_options(verbose: bool) -> ConnectOptions {
    let log = if verbose {
        ConnectionLog::to(|line| {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr().lock(),
                "clankie-read: debug: {}",
                sanitize(line)
            );
        })
    } else {
        ConnectionLog::default()
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    // rpassword writes the prompt to and reads from /dev/tty with echo off.
    let passphrase = terminal
        .then(|| PassphrasePrompt::new(|prompt| rpassword::prompt_password(sanitize(prompt)).ok()));
    // What ssh says on stderr even without -v (a key added under accept-new), in its words.
    let notices = ConnectionLog::to(|line| {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), "{}", sanitize(line));
    });
    ConnectOptions {
        log,
        notices,
        warnings: ConnectionLog::to(|line| super::warn(&[line.to_string()])),
        passphrase,
    }
}

/// `HOST:SESSION`, split at the first `:`; a bare `SESSION` (ids never hold a `:`) is on
/// `local`.
pub(super) fn split_target(target: &str) -> Result<(&str, &str), UsageError> {
    match target.split_once(':') {
        Some((host, session)) if !host.is_empty() && !session.is_empty() => Ok((host, session)),
        None if !target.is_empty() => Ok((LOCAL, target)),
        _ => Err(UsageError::Target {
            target: target.to_string(),
        }),
    }
}

/// The session part of `HOST:*` or `HOST:HARNESS/*`: every session of the host (of one
/// harness), for a host-wide `--follow`. `Some(None)` is every harness; `None` is one session.
pub(super) fn whole_host(session: &str) -> Option<Option<&str>> {
    match session {
        "*" => Some(None),
        _ => session.strip_suffix("/*").map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostsFile;
    use clankie_host::Host;
    use std::path::Path;

    fn context(roots: &[&str], hosts: &str) -> Context {
        let global = GlobalArgs {
            format: OutputFormat::Text,
            json: false,
            hosts: None,
            ssh_config: None,
            roots: roots.iter().map(|r| r.to_string()).collect(),
            color: ColorChoice::Never,
            verbose: false,
            timeout: 30.0,
            reply_timeout: None,
        };
        Context {
            verbose: false,
            format: OutputFormat::Text,
            color: false,
            roots: global.root_overrides().unwrap(),
            hosts: HostsFile::parse(hosts, Path::new("h.toml")).unwrap(),
            ssh_config: None,
            timeouts: global.reply_timeouts().unwrap(),
            connect: ConnectOptions::default(),
            warned_builtin_parser: AtomicBool::new(false),
        }
    }

    fn dirs(open: &OpenHost) -> Vec<(clankie_model::Harness, String)> {
        open.roots
            .iter()
            .map(|r| {
                let dir = String::from_utf8(r.dir.clone().unwrap()).unwrap();
                (r.harness, dir)
            })
            .collect()
    }

    #[test]
    fn root_overrides_replace_the_hosts_file_roots_of_their_harness() {
        let file =
            "[hosts.here]\nlocal = true\nroots = { claude = \"/file/c\", codex = \"/file/x\" }\n";
        let ctx = context(&["claude=/cli/c"], file);
        let here = ctx.open("here").unwrap();
        assert_eq!(here.host.name(), "here");
        assert_eq!(
            dirs(&here),
            [
                (
                    clankie_engine::harness::by_name("claude").unwrap(),
                    "/cli/c".to_string()
                ),
                (
                    clankie_engine::harness::by_name("codex").unwrap(),
                    "/file/x".to_string()
                )
            ]
        );
        let local = ctx.open("local").unwrap();
        assert!(matches!(local.host, AnyHost::Local(_)));
        assert_eq!(
            dirs(&local),
            [(
                clankie_engine::harness::by_name("claude").unwrap(),
                "/cli/c".to_string()
            )]
        );
    }

    #[test]
    fn names_the_hosts_file_does_not_define_are_ssh_destinations() {
        let ctx = context(&[], "[hosts.pc]\nssh = \"me@pc\"\nshell = \"powershell\"\n");
        let pc = ctx.host_config("pc");
        assert_eq!(pc.transport, Transport::Ssh("me@pc".into()));
        assert_eq!(pc.shell, Some(Dialect::PowerShell));
        assert_eq!(ctx.host_config("me@box"), HostConfig::ssh("me@box"));
        assert_eq!(ctx.host_config("local").shell_name(), "posix");
    }

    #[test]
    fn the_whole_reply_bound_is_ten_times_the_silence_bound_unless_given() {
        let args = |timeout: f64, reply_timeout: Option<f64>| GlobalArgs {
            format: OutputFormat::Text,
            json: false,
            hosts: None,
            ssh_config: None,
            roots: Vec::new(),
            color: ColorChoice::Never,
            verbose: false,
            timeout,
            reply_timeout,
        };
        let secs = Duration::from_secs_f64;
        assert_eq!(
            args(30.0, None).reply_timeouts().unwrap(),
            ReplyTimeouts::default()
        );
        assert_eq!(
            args(0.5, None).reply_timeouts().unwrap(),
            ReplyTimeouts {
                idle: secs(0.5),
                total: secs(5.0)
            }
        );
        assert_eq!(
            args(2.0, Some(4.0)).reply_timeouts().unwrap(),
            ReplyTimeouts {
                idle: secs(2.0),
                total: secs(4.0)
            }
        );
    }

    #[test]
    fn bad_roots_and_targets_are_usage_errors() {
        let global = |root: &str| GlobalArgs {
            format: OutputFormat::Text,
            json: false,
            hosts: None,
            ssh_config: None,
            roots: vec![root.to_string()],
            color: ColorChoice::Auto,
            verbose: false,
            timeout: 30.0,
            reply_timeout: None,
        };
        for (root, message) in [
            ("claude", "--root wants HARNESS=DIR, got `claude`"),
            ("claude=", "--root claude= needs a directory"),
        ] {
            let err = global(root).root_overrides().unwrap_err();
            assert_eq!(err.to_string(), message);
        }
        assert!(matches!(
            global("nope=/x").root_overrides(),
            Err(UsageError::UnknownHarness { .. })
        ));
        for (timeout, reply_timeout, message) in [
            (
                0.0,
                None,
                "--timeout wants a positive number of seconds, got 0",
            ),
            (
                -1.0,
                None,
                "--timeout wants a positive number of seconds, got -1",
            ),
            (
                f64::NAN,
                None,
                "--timeout wants a positive number of seconds, got NaN",
            ),
            (
                1.0,
                Some(0.0),
                "--reply-timeout wants a positive number of seconds, got 0",
            ),
        ] {
            let args = GlobalArgs {
                timeout,
                reply_timeout,
                ..global("claude=/x")
            };
            assert_eq!(args.reply_timeouts().unwrap_err().to_string(), message);
        }
        assert_eq!(split_target("a:b:c").unwrap(), ("a", "b:c"));
        assert_eq!(split_target("3f1c2a").unwrap(), ("local", "3f1c2a"));
        for bad in ["", ":b", "a:"] {
            assert!(matches!(split_target(bad), Err(UsageError::Target { .. })));
        }
    }

    #[test]
    fn a_star_is_the_whole_host() {
        assert_eq!(whole_host("*"), Some(None));
        assert_eq!(whole_host("codex/*"), Some(Some("codex")));
        assert_eq!(whole_host("3f1c2a"), None);
        assert_eq!(whole_host("claude/3f1c2a"), None);
    }
}
