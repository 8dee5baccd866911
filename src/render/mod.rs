//! Renderers: turn records, pages and listings into text for people or NDJSON for scripts.
//! The output format is chosen once (`Renderer`); text goes through the one sanitiser, NDJSON
//! stays exact (JSON escaping protects it).

pub mod cache;
pub mod diff;
pub mod grep;
pub mod ls;
pub mod ndjson;
pub mod pager;
pub mod progress;
pub mod styled;
pub mod text;
pub mod tool;
pub mod tty;
pub mod wrap;

use std::io::{self, Write};
use std::path::Path;

use crate::cache::{CachedFileInfo, Cleared};
use crate::check::{Activity, Change, SessionError};
use crate::driver::heads::SessionHead;
use clankie_engine::page::Page;
use clankie_engine::session::SessionFile;
use clankie_model::Record;

/// What a page line needs besides the page itself.
#[derive(Debug, Clone)]
pub struct PageInfo<'a> {
    pub host: &'a str,
    pub harness: &'a str,
    pub session: &'a str,
    /// Records a filter (`--kind`, `--grep`, `--after`, `--before`) left out of the page;
    /// `None` when no filter is given.
    pub filtered: Option<usize>,
}

/// What `hosts` reports of one host; the `check` fields are `None` (or empty) without
/// `--check`, or when the check stopped before reaching them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostReport {
    pub name: String,
    /// `local`, or `ssh <destination>`.
    pub transport: String,
    /// `auto`, `posix` or `powershell`.
    pub shell: &'static str,
    pub ok: Option<bool>,
    pub error: Option<String>,
    pub connect_ms: Option<u128>,
    pub exec_ms: Option<u128>,
    pub list_ms: Option<u128>,
    pub uname: Option<String>,
    /// `known` once the host key was checked.
    pub host_key: Option<&'static str>,
    pub auth: Option<String>,
    /// Which way commands go: `master at PATH` (the user's ControlMaster) or `new connection`.
    pub connection: Option<String>,
    pub clean_shell: Option<bool>,
    pub shell_noise: Option<String>,
    pub roots: Vec<RootReport>,
    pub warnings: Vec<String>,
}

/// One host's part of `ls`.
#[derive(Debug, Clone, Copy)]
pub struct LsHost<'a> {
    pub name: &'a str,
    /// The sessions shown, in order.
    pub sessions: &'a [SessionFile],
    /// The title and directory of each shown session, when read (text; NDJSON with `--long`).
    pub heads: Option<&'a [SessionHead]>,
    /// How many of each shown id's characters tell it from every session of the host
    /// ([`ls::unique_prefixes`]).
    pub unique: &'a [usize],
    /// Sources the host's listing left out (NDJSON prints them; text warns on stderr).
    pub errors: &'a [SessionError],
}

/// How `ls` draws, beyond the renderer's own options.
#[derive(Debug, Clone, Copy)]
pub struct LsView {
    /// Several hosts are listed: rows name theirs.
    pub show_host: bool,
    /// stdout is a terminal: a header row, ids cut to fit (piped: whole ids).
    pub terminal: bool,
    /// The present time (Unix seconds), for the modified column.
    pub now: i64,
}

/// What `resume` says of a session: the harness's own command that resumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeReport<'a> {
    pub host: &'a str,
    pub harness: &'a str,
    pub session: &'a str,
    pub command: &'a str,
}

/// One harness root of a checked host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootReport {
    pub harness: String,
    pub dir: String,
    pub exists: bool,
    pub sessions: usize,
}

/// How `check` names a change, in text and NDJSON alike.
fn change_name(change: Change) -> &'static str {
    match change {
        Change::New => "new",
        Change::Grew => "grew",
        Change::Reset => "reset",
        Change::Deleted => "deleted",
    }
}

/// The output format, chosen once per invocation (`--format`): every subcommand prints through
/// it, and none decides how to print. Text output keeps what it has shown of a run (the day,
/// the calls), so it is written through one `Renderer` per run.
#[derive(Debug, Clone)]
pub enum Renderer {
    Text(text::TextPrinter),
    Ndjson,
}

impl Renderer {
    pub fn text(options: text::TextOptions) -> Renderer {
        Renderer::Text(text::TextPrinter::new(options))
    }

    /// Whether this run prints NDJSON: what a run gathers may differ (`ls` lists every session
    /// and reads no heads unless `--long`), how it prints is the renderer's.
    pub fn is_ndjson(&self) -> bool {
        matches!(self, Renderer::Ndjson)
    }

    /// The text options, to adjust for one subcommand; `None` for NDJSON.
    pub fn text_options_mut(&mut self) -> Option<&mut text::TextOptions> {
        match self {
            Renderer::Text(printer) => Some(&mut printer.options),
            Renderer::Ndjson => None,
        }
    }

    /// Records of one host (NDJSON names it on every record).
    pub fn records(
        &mut self,
        out: &mut impl Write,
        host: &str,
        records: &[Record],
    ) -> io::Result<()> {
        match self {
            Renderer::Text(printer) => printer.records(out, records),
            Renderer::Ndjson => ndjson::records(out, host, records),
        }
    }

    pub fn page_end(
        &self,
        out: &mut impl Write,
        info: &PageInfo<'_>,
        page: &Page,
    ) -> io::Result<()> {
        match self {
            Renderer::Text(printer) => text::page_end(out, page, &printer.options, info.filtered),
            Renderer::Ndjson => ndjson::page(out, info, page),
        }
    }

    /// The header of a page on a terminal ([`text::session_header`]); nothing in NDJSON, whose
    /// `page` line and records say it all.
    pub fn session_header(
        &self,
        out: &mut impl Write,
        header: &text::SessionHeader,
    ) -> io::Result<()> {
        match self {
            Renderer::Text(printer) => text::session_header(out, header, &printer.options),
            Renderer::Ndjson => Ok(()),
        }
    }

    /// Records of one session of a host-wide follow: NDJSON as [`Renderer::records`] writes
    /// them (each line names its session); text with every line after `prefix`, the session's
    /// (rendered into `buf` first, which is kept between calls).
    pub fn prefixed_records(
        &mut self,
        out: &mut impl Write,
        host: &str,
        prefix: &str,
        buf: &mut Vec<u8>,
        records: &[Record],
    ) -> io::Result<()> {
        match self {
            Renderer::Text(printer) => {
                buf.clear();
                printer.records(buf, records)?;
                for line in buf.split_inclusive(|&b| b == b'\n') {
                    out.write_all(prefix.as_bytes())?;
                    out.write_all(line)?;
                }
                Ok(())
            }
            Renderer::Ndjson => ndjson::records(out, host, records),
        }
    }

    /// A page end of a host-wide follow: NDJSON's `page` line; in text, where the sessions'
    /// lines run on, only what was not understood, after the session's `prefix`.
    pub fn follow_page_end(
        &self,
        out: &mut impl Write,
        info: &PageInfo<'_>,
        page: &Page,
        prefix: &str,
    ) -> io::Result<()> {
        match self {
            Renderer::Text(printer) => text::unknown_line(out, page, &printer.options, prefix),
            Renderer::Ndjson => ndjson::page(out, info, page),
        }
    }
}

impl Renderer {
    /// One `check` line: a session that changed since the last run.
    pub fn activity(&self, out: &mut impl Write, activity: &Activity) -> io::Result<()> {
        match self {
            Renderer::Text(_) => text::activity(out, activity),
            Renderer::Ndjson => ndjson::activity(out, activity),
        }
    }

    /// What `check` found on one host: one line per changed session and, with `--records`,
    /// their new records. NDJSON: per session its records, then its `activity` line. Text:
    /// the activity lines, then each session's records under a heading as `grep` prints it
    /// (`host:session (harness)`), so that in a cron mail no record reads as another
    /// session's: a blank line after the activity lines and after each group.
    pub fn checked(&mut self, out: &mut impl Write, activity: &[Activity]) -> io::Result<()> {
        match self {
            Renderer::Ndjson => activity.iter().try_for_each(|a| {
                if !a.records.is_empty() {
                    ndjson::records(out, &a.host, &a.records)?;
                }
                ndjson::activity(out, a)
            }),
            Renderer::Text(printer) => {
                for a in activity {
                    text::activity(out, a)?;
                }
                // Records: `--records`; a baseline or a deleted session has none. Each group
                // ends with a blank line, as `grep`'s do, so that the next host's activity
                // lines never run on from a record.
                let mut groups = activity.iter().filter(|a| !a.records.is_empty()).peekable();
                if groups.peek().is_some() {
                    writeln!(out)?;
                }
                for a in groups {
                    let color = printer.options.color;
                    let heading = grep::session_heading(&a.host, &a.harness, &a.session, color);
                    writeln!(out, "{heading}")?;
                    printer.start_session();
                    printer.records(out, &a.records)?;
                    writeln!(out)?;
                }
                Ok(())
            }
        }
    }

    /// A session that could not be read (the caller also warns on stderr).
    pub fn session_error(&self, out: &mut impl Write, error: &SessionError) -> io::Result<()> {
        match self {
            Renderer::Text(_) => Ok(()),
            Renderer::Ndjson => ndjson::session_error(out, error),
        }
    }

    /// `hosts`: text as one aligned table (a header row when `terminal`); NDJSON one line per
    /// host.
    pub fn hosts(
        &self,
        out: &mut impl Write,
        reports: &[HostReport],
        terminal: bool,
    ) -> io::Result<()> {
        match self {
            Renderer::Text(_) => text::hosts(out, reports, terminal),
            Renderer::Ndjson => reports.iter().try_for_each(|r| ndjson::host(out, r)),
        }
    }

    /// `ls`: the shown sessions of every host listed. Text: one table, aligned across the
    /// hosts (a host column when `view.show_host`), a header row on a terminal, each id's
    /// unique prefix bold with colour. NDJSON: per host, a `session` line each (`title` and
    /// `cwd` when its heads are given, `--long`), then an `error` object per source its listing
    /// left out.
    pub fn sessions(
        &self,
        out: &mut impl Write,
        hosts: &[LsHost<'_>],
        view: &LsView,
    ) -> io::Result<()> {
        match self {
            Renderer::Ndjson => hosts.iter().try_for_each(|host| {
                host.sessions.iter().enumerate().try_for_each(|(i, s)| {
                    ndjson::session(out, host.name, s, host.heads.and_then(|h| h.get(i)))
                })?;
                host.errors
                    .iter()
                    .try_for_each(|error| ndjson::session_error(out, error))
            }),
            Renderer::Text(printer) => {
                let empty = SessionHead::default();
                let rows: Vec<ls::LsRow<'_>> = hosts
                    .iter()
                    .flat_map(|host| {
                        host.sessions
                            .iter()
                            .enumerate()
                            .map(|(i, session)| ls::LsRow {
                                host: host.name,
                                session,
                                head: host.heads.and_then(|h| h.get(i)).unwrap_or(&empty),
                                unique: host.unique.get(i).copied().unwrap_or(session.id.len()),
                            })
                    })
                    .collect();
                let options = ls::LsOptions {
                    color: printer.options.color,
                    width: printer.options.width,
                    now: view.now,
                    terminal: view.terminal,
                    show_host: view.show_host,
                };
                ls::rows(out, &rows, &options)
            }
        }
    }

    /// `grep`'s printer for one shape of output, in this run's format.
    pub fn grep(&self, shape: grep::Shape) -> grep::GrepPrinter {
        match self {
            Renderer::Text(printer) => {
                grep::GrepPrinter::text(shape, printer.options.color, printer.options.width)
            }
            Renderer::Ndjson => grep::GrepPrinter::ndjson(shape),
        }
    }

    /// `cache ls`: the cached files.
    pub fn cached(&self, out: &mut impl Write, files: &[CachedFileInfo]) -> io::Result<()> {
        match self {
            Renderer::Text(_) => cache::files(out, files),
            Renderer::Ndjson => ndjson::cached(out, files),
        }
    }

    /// `cache clear`: what was removed from `dir`, of one host or of all.
    pub fn cleared(
        &self,
        out: &mut impl Write,
        host: Option<&str>,
        cleared: &Cleared,
        dir: &Path,
    ) -> io::Result<()> {
        match self {
            Renderer::Text(_) => cache::cleared(out, host, cleared, dir),
            Renderer::Ndjson => ndjson::cleared(out, host, cleared),
        }
    }

    /// `resume`: the command that resumes a session.
    pub fn resume(&self, out: &mut impl Write, report: &ResumeReport<'_>) -> io::Result<()> {
        match self {
            Renderer::Text(_) => text::resume(out, report),
            Renderer::Ndjson => ndjson::resume(out, report),
        }
    }
}

/// RFC 3339 (UTC, seconds) of a Unix time. Outside jiff's range (years -9999..=9999) the time
/// is clamped to it.
pub fn rfc3339(unix: i64) -> String {
    let clamped = unix.clamp(
        jiff::Timestamp::MIN.as_second(),
        jiff::Timestamp::MAX.as_second(),
    );
    let t = jiff::Timestamp::from_second(clamped).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_793_613_600), "2026-11-02T10:00:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
