//! The top-level error, how a command ended ([`Outcome`]), and the one function that decides
//! the exit status from them ([`exit_status`], SPEC "Exit codes").

use crate::check::StateError;
use crate::config::ConfigError;
use crate::driver::DriverError;
use clankie_engine::cursor::CursorError;
use clankie_engine::page::PlanError;
use clankie_engine::resolve::ResolveError;
use clankie_host::HostError;
use clankie_model::limits::MAX_READ_BYTES;

/// Exit codes, as SPEC.md lists them.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILURE: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const HOST: u8 = 3;
    pub const NOT_FOUND: u8 = 4;
    pub const STALE: u8 = 5;
    pub const SOURCE: u8 = 6;
    /// `check`: another run holds the state file.
    pub const LOCKED: u8 = 75;
}

/// Anything that ends an invocation with a non-zero status.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Arguments clap refused; clap prints its own message and usage.
    #[error(transparent)]
    Arguments(#[from] clap::Error),
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// `check`'s state file could not be locked, read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The local cache of session bytes (its directory or files).
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    /// The store `sync`, `ls --store` and `grep --store` use.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// Writing the output failed (a closed pipe ends the run quietly, like other filters).
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

/// Arguments or configuration that cannot work: exit 2, before any connection is made. Each
/// message is the one line the user reads.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("expected HOST:SESSION (e.g. local:3f1c2a), got `{target}`")]
    Target { target: String },
    #[error("--root wants HARNESS=DIR, got `{spec}`")]
    RootSyntax { spec: String },
    #[error("--root {harness}= needs a directory")]
    RootWithoutDir { harness: String },
    #[error(
        "unknown harness `{name}` (supported: {})",
        clankie_engine::harness::supported_names()
    )]
    UnknownHarness { name: String },
    #[error(
        "`{target}` follows every session of the host: it needs --follow, and takes none of \
         --head, --all, --since (to list them: clankie-read ls {host})"
    )]
    WholeHostWithoutFollow { target: String, host: String },
    /// `--tail N` or `--head N`, and `--limit` too.
    #[error("{flag} {count} and --limit {limit} both say how many records: give one")]
    PageSizeTwice {
        flag: &'static str,
        count: u16,
        limit: u16,
    },
    /// A bare word that named no session and is close to a subcommand or a read's option.
    #[error("`{word}` is neither a subcommand nor a session; did you mean '{suggestion}'?")]
    DidYouMean { word: String, suggestion: String },
    #[error("--interval wants a positive number of seconds, got {secs}")]
    Interval { secs: f64 },
    #[error("`ui` is an interactive view: its input and output must be a terminal")]
    NotATerminal,
    #[error("--wait wants seconds, got {secs}")]
    Wait { secs: f64 },
    /// `--timeout`, `--reply-timeout`, `--run-timeout`.
    #[error("{flag} wants a positive number of seconds, got {secs}")]
    Timeout { flag: &'static str, secs: f64 },
    /// `resume` of a source no program resumes (a terminal recording).
    #[error(
        "{harness}/{session} is a {harness} recording, not an agent's session: there is nothing to resume"
    )]
    NothingToResume { harness: String, session: String },
    /// `resume` of a subagent, which its harness resumes only through its parent, when the
    /// parent's transcript is gone.
    #[error(
        "{harness}/{session} is a subagent, which {harness} resumes only through the session \
         that started it, and that session's transcript is gone: there is nothing to resume"
    )]
    ParentGone { harness: String, session: String },
    #[error("`script list` takes no --path")]
    ScriptListPath,
    #[error("--path `{path}`: {reason}")]
    ScriptPath { path: String, reason: &'static str },
    #[error("--len is at most {} bytes", MAX_READ_BYTES)]
    ScriptLen,
    /// `--kind`, `--grep`, `--after`, `--before`.
    #[error(transparent)]
    Filter(#[from] clankie_engine::filter::FilterError),
    /// `grep`'s pattern.
    #[error(transparent)]
    Search(#[from] clankie_engine::search::SearchError),
    #[error("{flag} wants a size such as 512M or 2G, got `{text}`")]
    Size { flag: &'static str, text: String },
    #[error("no hosts to search: `--hosts-all` found none in the hosts file")]
    NoHostsToSearch,
    /// `--format json` (or `--json`) given to a subcommand that prints no NDJSON.
    #[error(
        "`{command}` prints no NDJSON: --format json is for read, ls, grep, check, hosts, \
         resume and cache"
    )]
    NoNdjson { command: &'static str },
    /// The hosts file cannot be read or parsed.
    #[error(transparent)]
    HostsFile(#[from] ConfigError),
}

impl From<HostError> for Error {
    fn from(e: HostError) -> Error {
        Error::Driver(DriverError::Host(e))
    }
}

impl From<CursorError> for Error {
    fn from(e: CursorError) -> Error {
        Error::Driver(DriverError::Cursor(e))
    }
}

impl From<ResolveError> for Error {
    fn from(e: ResolveError) -> Error {
        Error::Driver(DriverError::Resolve(e))
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Usage(UsageError::HostsFile(e))
    }
}

impl Error {
    /// Whether the output was closed under us (`| head`): the run ends quietly, with status 0.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// How a command ended when no error stopped it.
#[derive(Debug)]
pub enum Outcome {
    /// Everything asked was done.
    Done,
    /// `ls`: these hosts failed, each reported when it did; the others were listed.
    /// `strict_failures`: sessions that could not be read, counted under `--strict` only (each
    /// was reported; the host went on).
    Listed {
        failed: Vec<Error>,
        strict_failures: usize,
    },
    /// `check` and `hosts --check`: this many hosts failed, each reported when it did; the
    /// others were checked (and, by `check`, saved). `strict_failures` as for `Listed`.
    Checked {
        failed: usize,
        strict_failures: usize,
    },
    /// `check`: another run held the state file for all of `--wait`.
    Locked,
    /// `grep`: whether anything matched, and how many hosts failed (each reported).
    Searched { matched: bool, hosts_failed: usize },
}

/// The exit status of a run: the one place exit codes are decided (SPEC "Exit codes").
pub fn exit_status(result: &Result<Outcome, Error>) -> u8 {
    match result {
        Ok(Outcome::Done) => exit::OK,
        // The highest status of the failed hosts; a session that could not be read is a
        // source error under --strict.
        Ok(Outcome::Listed {
            failed,
            strict_failures,
        }) => failed
            .iter()
            .map(exit_code)
            .chain((*strict_failures > 0).then_some(exit::SOURCE))
            .max()
            .unwrap_or(exit::OK),
        // SPEC: for `check`, 3 when any host failed, whatever the failure; else 6 when a
        // session could not be read under --strict.
        Ok(Outcome::Checked {
            failed: 0,
            strict_failures: 0,
        }) => exit::OK,
        Ok(Outcome::Checked { failed: 0, .. }) => exit::SOURCE,
        Ok(Outcome::Checked { .. }) => exit::HOST,
        Ok(Outcome::Locked) => exit::LOCKED,
        // As grep and rg: 1 when nothing matched; 3 when a host failed, whatever the others
        // found.
        Ok(Outcome::Searched { hosts_failed, .. }) if *hosts_failed > 0 => exit::HOST,
        Ok(Outcome::Searched { matched: true, .. }) => exit::OK,
        Ok(Outcome::Searched { matched: false, .. }) => exit::FAILURE,
        Err(error) => exit_code(error),
    }
}

/// The exit status for an error.
fn exit_code(error: &Error) -> u8 {
    match error {
        Error::Arguments(e) if !e.use_stderr() => exit::OK,
        Error::Arguments(_) | Error::Usage(_) => exit::USAGE,
        Error::Output(_) if error.is_broken_pipe() => exit::OK,
        Error::Store(e) if e.is_usage() => exit::USAGE,
        Error::State(_)
        | Error::Cache(_)
        | Error::Store(_)
        | Error::Runtime(_)
        | Error::Output(_) => exit::FAILURE,
        Error::Driver(e) => match e {
            DriverError::Cursor(_) => exit::USAGE,
            DriverError::Resolve(
                ResolveError::UnknownHarness(_)
                | ResolveError::InvalidId(_)
                | ResolveError::TooShort(_),
            ) => exit::USAGE,
            DriverError::NotFound { .. } => exit::NOT_FOUND,
            DriverError::Resolve(ResolveError::NotFound(_) | ResolveError::Ambiguous { .. }) => {
                exit::NOT_FOUND
            }
            DriverError::Host(h) => host_exit_code(h),
            DriverError::Source { .. } => exit::SOURCE,
            DriverError::Database(_) => exit::SOURCE,
            DriverError::Plan { source, .. } => match source {
                PlanError::Stale { .. } => exit::STALE,
                PlanError::Malformed { .. }
                | PlanError::MalformedRow { .. }
                | PlanError::Oversized { .. }
                | PlanError::Unread { .. }
                | PlanError::NoRecords => exit::SOURCE,
                // Like a database that kept changing while it was copied.
                PlanError::Moving { .. } => exit::SOURCE,
                PlanError::ShortRead { .. } => exit::HOST,
            },
        },
    }
}

fn host_exit_code(error: &HostError) -> u8 {
    match error {
        HostError::Unreachable { .. }
        | HostError::TimedOut { .. }
        | HostError::Auth { .. }
        | HostError::HostKeyUnknown { .. }
        | HostError::HostKeyChanged { .. }
        | HostError::HostKeyRevoked { .. }
        | HostError::SshConfig { .. } => exit::HOST,
        // A reply that breaks the wire format (a wrong nonce, bad framing, invalid or cut-off
        // base64, an unknown ERR code) is the host's fault.
        HostError::ShellNotClean { .. } | HostError::Protocol { .. } => exit::HOST,
        // A reply over a cap (bytes, entries, decoded size) is refused like an oversized source.
        HostError::ReplyTooLarge { .. } => exit::SOURCE,
        HostError::NotFound { .. } => exit::NOT_FOUND,
        HostError::PathRefused { .. } => exit::SOURCE,
        HostError::Io { .. } => exit::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_error(kind: &str) -> Error {
        let (host, path, reason) = ("h".to_string(), "p".to_string(), "r".to_string());
        Error::from(match kind {
            "unreachable" => HostError::Unreachable { host, reason },
            "not found" => HostError::NotFound { host, path },
            _ => HostError::Io { host, path, reason },
        })
    }

    #[test]
    fn usage_messages_are_the_one_line_users_read() {
        let cases = [
            (
                UsageError::Target {
                    target: "bad".into(),
                },
                "expected HOST:SESSION (e.g. local:3f1c2a), got `bad`",
            ),
            (
                UsageError::RootWithoutDir {
                    harness: "claude".into(),
                },
                "--root claude= needs a directory",
            ),
            (
                UsageError::Interval { secs: 0.0 },
                "--interval wants a positive number of seconds, got 0",
            ),
            (UsageError::ScriptLen, "--len is at most 4194304 bytes"),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
            assert_eq!(exit_status(&Err(error.into())), exit::USAGE);
        }
        let unknown = UsageError::UnknownHarness {
            name: "nope".into(),
        };
        assert!(
            unknown
                .to_string()
                .starts_with("unknown harness `nope` (supported: claude, ")
        );
    }

    #[test]
    fn outcomes_decide_the_status() {
        assert_eq!(exit_status(&Ok(Outcome::Done)), exit::OK);
        assert_eq!(exit_status(&Ok(Outcome::Locked)), exit::LOCKED);
        let checked = |failed, strict_failures| Outcome::Checked {
            failed,
            strict_failures,
        };
        assert_eq!(exit_status(&Ok(checked(0, 0))), exit::OK);
        // `check`: any failed host is 3, whatever it failed with.
        assert_eq!(exit_status(&Ok(checked(2, 0))), exit::HOST);
        assert_eq!(exit_status(&Ok(checked(2, 1))), exit::HOST);
        // A session that could not be read, under --strict: 6.
        assert_eq!(exit_status(&Ok(checked(0, 1))), exit::SOURCE);
        // `ls`: the highest status of the failed hosts.
        let listed = |kinds: &[&str]| Outcome::Listed {
            failed: kinds.iter().map(|k| host_error(k)).collect(),
            strict_failures: 0,
        };
        assert_eq!(
            exit_status(&Ok(Outcome::Listed {
                failed: vec![host_error("io")],
                strict_failures: 3,
            })),
            exit::SOURCE
        );
        assert_eq!(exit_status(&Ok(listed(&[]))), exit::OK);
        assert_eq!(exit_status(&Ok(listed(&["io"]))), exit::FAILURE);
        assert_eq!(
            exit_status(&Ok(listed(&["io", "unreachable", "not found"]))),
            exit::NOT_FOUND
        );
    }

    #[test]
    fn bad_replies_are_the_hosts_fault_and_oversized_ones_a_source_error() {
        let (host, reason) = ("h".to_string(), "r".to_string());
        let cases = [
            (
                HostError::ShellNotClean {
                    host: host.clone(),
                    first_bytes: "motd".into(),
                },
                exit::HOST,
            ),
            (
                HostError::Protocol {
                    host: host.clone(),
                    reason: reason.clone(),
                },
                exit::HOST,
            ),
            (
                HostError::ReplyTooLarge {
                    host: host.clone(),
                    reason: reason.clone(),
                },
                exit::SOURCE,
            ),
            (
                HostError::Io {
                    host: host.clone(),
                    path: "p".into(),
                    reason,
                },
                exit::FAILURE,
            ),
        ];
        for (error, code) in cases {
            let line = error.to_string();
            assert_eq!(exit_status(&Err(error.into())), code, "{line}");
        }
        // Through the decoder, as a host's reply reaches it.
        let nonce = "0123456789abcdef0123456789abcdef";
        let range = [clankie_model::ByteRange::new(0, 10)];
        let framed = |body: &str| format!("\n{nonce}:BEGIN Linux\n{body}\n\n{nonce}:END 0\n");
        let decode = |reply: &str| {
            let e = clankie_host::script::decode_read("h", nonce, &range, reply.as_bytes())
                .unwrap_err();
            exit_status(&Err(e.into()))
        };
        assert_eq!(decode("no frame at all"), exit::HOST);
        assert_eq!(decode(&framed("ERR nosuchcode 2f78")), exit::HOST);
        assert_eq!(
            decode(&framed(
                "META size=10 enc=b64\nDATA 0\nMDEyMzQ1Njc4O\nEND-DATA 0"
            )),
            exit::HOST
        );
        let flood = format!(
            "META size=10 enc=hex\nDATA 0\n{}\nEND-DATA 0",
            " 00".repeat(4097)
        );
        assert_eq!(decode(&framed(&flood)), exit::SOURCE);
        assert_eq!(decode(&framed("ERR missing 2f78")), exit::NOT_FOUND);
    }

    #[test]
    fn a_closed_pipe_is_a_quiet_success() {
        let closed = Error::Output(std::io::ErrorKind::BrokenPipe.into());
        assert!(closed.is_broken_pipe());
        assert_eq!(exit_status(&Err(closed)), exit::OK);
        let full = Error::Output(std::io::ErrorKind::StorageFull.into());
        assert_eq!(exit_status(&Err(full)), exit::FAILURE);
    }
}
