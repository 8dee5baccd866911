//! `clankie-read man`: the one roff man page, printed to stdout (`clankie-read man >
//! clankie-read.1; man -l clankie-read.1`). clap_mangen renders the synopsis and every option of
//! the program and of each subcommand from the clap definitions; the exit status, environment,
//! files and examples are written here. One page: it names no `clankie-read-ls(1)` that is not
//! installed.

use std::io::Write;

use clap::{Args, CommandFactory};

use super::{Cli, EXAMPLES};
use crate::error::{Error, Outcome};

#[derive(Debug, Args)]
pub struct ManArgs {}

/// What the program is, after the one-line summary clap gives (`HARNESSES` is the registry's
/// list).
const DESCRIPTION: &str = r#".SH DESCRIPTION
Reads AI coding agents' session transcripts (HARNESSES) on this machine or on any machine
reachable by SSH, with nothing installed there. A host answers two primitives, each one generated
POSIX\-sh or PowerShell command: list the transcript files under the harnesses' roots, and read a
byte range of one of them. Parsing, redaction, paging, cursors and rendering happen on the reading
side; reading never writes to, locks, renames or deletes anything on the host.
.PP
\fIHOST\fR is \fBlocal\fR, a name from the hosts file, or \fB[\fIuser\fB@]\fIalias\fR for any host
that the SSH configuration or DNS knows. \fISESSION\fR is a session id, or an unambiguous prefix of
at least 6 characters of one, optionally qualified as \fIHARNESS\fB/\fIID\fR.
\fBclankie\-read\fR \fIHOST\fB:\fISESSION\fR is short for \fBclankie\-read read\fR
\fIHOST\fB:\fISESSION\fR, and a bare \fISESSION\fR means \fBlocal:\fISESSION\fR.
.PP
Text output is for people; \fB\-\-format json\fR (or \fB\-\-json\fR) prints NDJSON for scripts,
one object per line, and a read's last line is a \fBpage\fR object whose cursor \fB\-\-since\fR
continues from.
"#;

/// The exit statuses, as SPEC.md states them.
const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
.B 0
Success (also after \fB\-\-help\fR, \fB\-\-version\fR, a closed pipe, and Ctrl\-C ending
\fB\-\-follow\fR).
.TP
.B 1
Any other failure (the state file of \fBcheck\fR, writing the output).
.TP
.B 2
Usage: a bad option or value, an unknown harness, a malformed target or an invalid cursor, a
session prefix shorter than 6 characters.
.TP
.B 3
A host unreachable, authentication or host\-key failure, a reply that breaks the wire format or
a time bound (\fB\-\-timeout\fR, \fB\-\-reply\-timeout\fR); for \fBcheck\fR, any host that failed
(the others are still checked and saved).
.TP
.B 4
No session matches, or a prefix matches several.
.TP
.B 5
A stale cursor, with \fB\-\-strict\fR.
.TP
.B 6
A malformed, oversized or unsupported source (a malformed record only with \fB\-\-strict\fR).
.TP
.B 75
\fBcheck\fR: another run holds the state file's lock for longer than \fB\-\-wait\fR.
"#;

/// The environment; `HARNESS_VARIABLES` stands for the harnesses' own, from the registry.
const ENVIRONMENT: &str = r#".SH ENVIRONMENT
.TP
.B CLANKIE_HOSTS
The hosts file, when \fB\-\-hosts\fR is not given (it must then exist).
.TP
.B CLANKIE_PAGER
The pager for long text output on a terminal; \fBPAGER\fR when unset, else \fBless \-FRX\fR.
.TP
.B PAGER
The pager when \fBCLANKIE_PAGER\fR is unset.
.TP
.B LESS
Left as it is when set; else \fBFRX\fR for the pager (as git does).
.TP
.B NO_COLOR
When set and not empty, \fB\-\-color auto\fR does not colour.
.TP
.B COLUMNS
The width text output wraps to; else the terminal's width; no wrapping when stdout is not a
terminal.
.TP
.B LINES
The screen height beyond which the pager starts; else the terminal's height.
.TP
.B HOME
Where \fB~\fR is: the default hosts file, \fB~/.ssh/config\fR, \fB~/.ssh/known_hosts\fR, and the
harnesses' default roots on this machine.
.TP
.B SSH_AUTH_SOCK
The ssh\-agent that SSH authentication asks first.
HARNESS_VARIABLES
.TP
.B CLANKIE_COMPLETE
Set by the completion scripts (to \fBbash\fR, \fBzsh\fR or \fBfish\fR): the run prints the
completions of the words after \fB\-\-\fR instead of running; with nothing after it, the script
itself.
.PP
A \fB\-\-root\fR \fIHARNESS\fB=\fIDIR\fR replaces the harness's home, whatever its variable says.
"#;

const FILES: &str = r#".SH FILES
.TP
.B ~/.config/clankie/hosts.toml
The hosts file (\fB\-\-hosts\fR, \fBCLANKIE_HOSTS\fR): a table per host with \fBssh\fR,
\fBshell\fR, \fBroots\fR or \fBlocal\fR. A missing default file is no error.
.TP
.B ~/.ssh/config
The SSH configuration (\fB\-\-ssh\-config\fR), read as \fBssh\fR reads it: HostName, User, Port,
IdentityFile, IdentitiesOnly, ProxyJump, UserKnownHostsFile, StrictHostKeyChecking.
.TP
.B ~/.ssh/known_hosts
The known host keys; an unknown or changed key is refused, never accepted silently.
.TP
.I STATE
The state file of \fBcheck \-\-state\fR \fISTATE\fR: the cursors of the last run, replaced
atomically through \fISTATE\fB.tmp\fR while \fISTATE\fB.lock\fR is held.
"#;

const SEE_ALSO: &str = r#".SH "SEE ALSO"
.BR ssh (1),
.BR ssh_config (5),
.BR less (1)
"#;

/// The variables that move a harness's home or database, from the registry: each names the
/// harnesses it moves and their defaults. They are read on the host being read.
fn harness_variables() -> String {
    let mut by_variable: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for harness in clankie_engine::harness::all() {
        let home = harness.default_home();
        let name = roff_escape(harness.name());
        if let Some(variable) = home.env_var {
            let moved = match home.env_relative {
                "" => format!(r"\fB${variable}\fR"),
                rel => format!(r"\fB${variable}/{}\fR", roff_escape(rel)),
            };
            by_variable.entry(variable).or_default().push(format!(
                r"{name}'s home is {moved} (default \fB~/{}\fR)",
                roff_escape(home.home_relative)
            ));
        }
        if let Some(variable) = harness.db_env() {
            by_variable
                .entry(variable)
                .or_default()
                .push(format!("{name}'s database, when it is not in its home"));
        }
    }
    by_variable
        .into_iter()
        .map(|(variable, uses)| {
            format!(
                ".TP\n.B {variable}\nOn the host being read: {}.",
                uses.join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A word or path for roff: backslashes and dashes escaped.
fn roff_escape(text: &str) -> String {
    text.replace('\\', r"\e").replace('-', r"\-")
}

/// Roff for text that is not roff: leading dots and quotes made literal, backslashes and dashes
/// escaped.
fn roff_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = roff_escape(line);
            if line.starts_with('.') || line.starts_with('\'') {
                format!(r"\&{line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// clap_mangen's roff for one part of a command's page, without its `.SH` heading lines, so
/// that it can sit under a heading of ours.
fn without_headings(
    render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<String> {
    let mut out = Vec::new();
    render(&mut out)?;
    let text = String::from_utf8_lossy(&out);
    Ok(text
        .lines()
        .filter(|line| {
            !line.starts_with(".SH ") && !line.starts_with(".ie ") && !line.starts_with(".el ")
        })
        .map(|line| format!("{line}\n"))
        .collect())
}

/// The man page, in roff.
fn page() -> std::io::Result<Vec<u8>> {
    let cli = Cli::command();
    let version = cli.get_version().unwrap_or_default().to_string();
    let man = clap_mangen::Man::new(cli.clone())
        .manual("User Commands")
        .source(format!("clankie-read {version}"));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    let harnesses: Vec<&str> = clankie_engine::harness::all().map(|h| h.name()).collect();
    out.extend_from_slice(
        DESCRIPTION
            .replace("HARNESSES", &harnesses.join(", "))
            .as_bytes(),
    );
    out.extend_from_slice(b".SH \"GLOBAL OPTIONS\"\nThese apply to every command.\n");
    out.extend_from_slice(without_headings(|w| man.render_options_section(w))?.as_bytes());
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        // Standing alone, a subcommand's page leaves out the global options (not built into it)
        // and names it as typed.
        let sub = sub.clone().bin_name(format!("clankie-read {name}"));
        let has_options = sub.get_arguments().next().is_some();
        let after_help = sub.get_after_help().map(|h| h.to_string());
        let man = clap_mangen::Man::new(sub);
        writeln!(out, ".SS \"clankie\\-read {}\"", name.replace('-', r"\-"))?;
        out.extend_from_slice(without_headings(|w| man.render_synopsis_section(w))?.as_bytes());
        writeln!(out, ".PP\n{}", roff_text(&about))?;
        if has_options {
            out.extend_from_slice(without_headings(|w| man.render_options_section(w))?.as_bytes());
        }
        // Kept as written: install commands, one a line.
        if let Some(after_help) = after_help {
            writeln!(out, ".PP\n.nf\n{}\n.fi", roff_text(&after_help))?;
        }
    }
    out.extend_from_slice(EXIT_STATUS.as_bytes());
    out.extend_from_slice(
        ENVIRONMENT
            .replace("HARNESS_VARIABLES", &harness_variables())
            .as_bytes(),
    );
    out.extend_from_slice(FILES.as_bytes());
    let examples = EXAMPLES.strip_prefix("Examples:\n").unwrap_or(EXAMPLES);
    writeln!(out, ".SH EXAMPLES\n.nf\n{}\n.fi", roff_text(examples))?;
    out.extend_from_slice(SEE_ALSO.as_bytes());
    Ok(out)
}

pub(super) fn run(_args: ManArgs) -> Result<Outcome, Error> {
    let page = page()?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&page)?;
    stdout.flush()?;
    Ok(Outcome::Done)
}
