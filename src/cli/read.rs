//! `clankie-read read HOST:SESSION`: one page of a session (tail, head, all, or since a cursor).

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::context::{Context, GlobalArgs, split_target};
use crate::driver::{DriverError, read_page, resolve_session, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::render::PageInfo;
use crate::render::Renderer;
use clankie_engine::cursor::Cursor;
use clankie_engine::page::Page;
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_engine::session::SessionFile;
use clankie_host::Host;
use clankie_host::{AnyHost, HostError};
use clankie_model::Record;
use clankie_model::limits::MAX_LIMIT;

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The session: `HOST:SESSION`, where SESSION is an id, a unique prefix of at least 6
    /// characters, or `HARNESS/ID`.
    #[arg(value_name = "HOST:SESSION")]
    pub target: String,
    /// The newest --limit records (the default).
    #[arg(long, group = "mode")]
    pub tail: bool,
    /// The first --limit records.
    #[arg(long, group = "mode")]
    pub head: bool,
    /// Every record from the start, streamed (at most 64 MiB of source per run).
    #[arg(long, group = "mode")]
    pub all: bool,
    /// The next --limit records after CURSOR (from a previous page).
    #[arg(long, group = "mode", value_name = "CURSOR")]
    pub since: Option<String>,
    /// Records per page, 1 to 200.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=MAX_LIMIT as i64))]
    pub limit: u16,
    /// NDJSON output: one `record` object per line, then one `page` object.
    #[arg(long)]
    pub json: bool,
    /// Irregular sources fail: a stale cursor exits 5, a malformed record exits 6.
    #[arg(long)]
    pub strict: bool,
    /// Show tool inputs and results whole instead of shortened.
    #[arg(long)]
    pub full: bool,
    /// After the page, keep polling and print new records as they complete (Ctrl-C ends).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Seconds between polls with --follow (fractions allowed).
    #[arg(long, default_value_t = 2.0, value_name = "SECS", requires = "follow")]
    pub interval: f64,
    /// Show secrets as they are: turn off the redaction of API keys, tokens, passwords and
    /// private keys (on by default, in both outputs).
    #[arg(long)]
    pub no_redact: bool,
}

pub(super) async fn run(global: &GlobalArgs, args: ReadArgs) -> Result<Outcome, Error> {
    // Everything is validated before any I/O.
    let (host_name, session_arg) = split_target(&args.target)?;
    let query = SessionQuery::parse(session_arg)?;
    let mode = match (&args.since, args.head, args.all) {
        (Some(cursor), _, _) => Mode::Since(Cursor::decode(cursor)?),
        (None, true, _) => Mode::Head,
        (None, _, true) => Mode::All,
        _ => Mode::Tail,
    };
    let interval = Duration::try_from_secs_f64(args.interval)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(UsageError::Interval {
            secs: args.interval,
        })?;
    let ctx = Context::new(global)?;
    let renderer = ctx.renderer(args.json, args.full);
    let request = PageRequest {
        mode,
        limit: usize::from(args.limit),
        strict: args.strict,
        redact: !args.no_redact,
    };

    let opened = ctx.open(host_name)?;
    let host = opened.host;
    let session = resolve_session(&host, &roots_for(&opened.roots, query.harness), &query).await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut printer = PagePrinter {
        host: &host,
        session: &session,
        renderer: &renderer,
        out: &mut out,
        printed: args.follow.then(HashSet::new),
    };
    let page = printer.print(request, true).await.map_err(Error::from);
    if ctx.verbose() {
        super::warn(&host.take_notes());
    }
    let page = page?;
    if args.follow {
        printer
            .follow(page.cursor, interval, args.strict, !args.no_redact)
            .await?;
    }
    Ok(Outcome::Done)
}

/// Reads pages of one session and prints them as they come.
struct PagePrinter<'a, W: Write> {
    host: &'a AnyHost,
    session: &'a SessionFile,
    renderer: &'a Renderer,
    out: &'a mut W,
    /// With `--follow`, the ids printed so far: a record whose id comes again in a later poll
    /// (a Gemini message re-appended with its result, a replayed Claude line) is not printed
    /// again, as a single read keeps only its first copy.
    printed: Option<HashSet<String>>,
}

impl<W: Write> PagePrinter<'_, W> {
    /// Reads and prints one page; `always_end` prints the page line even for an empty page.
    async fn print(&mut self, request: PageRequest, always_end: bool) -> Result<Page, PrintError> {
        let mut write_error = None;
        let (renderer, out, printed) = (self.renderer, &mut *self.out, &mut self.printed);
        let mut page = read_page(self.host, self.session, request, |mut records| {
            keep_unprinted(printed, &mut records);
            if write_error.is_none()
                && let Err(e) = renderer.records(out, &records).and_then(|_| out.flush())
            {
                write_error = Some(e);
            }
        })
        .await?;
        if let Some(e) = write_error {
            return Err(PrintError::Output(e));
        }
        super::warn(&page.warnings);
        if page.reset
            && let Some(printed) = &mut self.printed
        {
            // A replaced file is read from its start: its records are new, whatever their ids.
            printed.clear();
        }
        keep_unprinted(&mut self.printed, &mut page.records);
        self.renderer.records(self.out, &page.records)?;
        if always_end || !page.records.is_empty() || page.reset {
            let info = PageInfo {
                host: self.host.name(),
                harness: self.session.harness().name(),
                session: &self.session.id,
            };
            self.renderer.page_end(self.out, &info, &page)?;
        }
        self.out.flush()?;
        Ok(page)
    }

    /// `--follow`: poll from `cursor` every `interval` and print what completes, until Ctrl-C.
    /// A dropped connection is reopened with backoff and the read continues from the last
    /// cursor, so nothing is lost or printed twice.
    async fn follow(
        &mut self,
        mut cursor: Cursor,
        interval: Duration,
        strict: bool,
        redact: bool,
    ) -> Result<(), Error> {
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let mut delay = interval;
        let mut outage: Option<Duration> = None;
        loop {
            tokio::select! {
                _ = &mut ctrl_c => return Ok(()),
                _ = tokio::time::sleep(delay) => {}
            }
            let poll = async {
                loop {
                    let request = PageRequest {
                        mode: Mode::Since(cursor.clone()),
                        limit: MAX_LIMIT,
                        strict,
                        redact,
                    };
                    let page = self.print(request, false).await?;
                    cursor = page.cursor;
                    if !page.more {
                        return Ok::<(), PrintError>(());
                    }
                }
            };
            let result = tokio::select! {
                _ = &mut ctrl_c => return Ok(()),
                result = poll => result,
            };
            match result {
                Ok(()) => {
                    if outage.take().is_some() {
                        super::warn(&[format!(
                            "{}: reconnected; continuing from the last cursor",
                            self.host.name()
                        )]);
                    }
                    delay = interval;
                }
                Err(PrintError::Read(DriverError::Host(err))) if is_transient(&err) => {
                    self.host.disconnect().await;
                    let wait = outage.map_or(Duration::from_secs(1), |w| {
                        (w * 2).min(Duration::from_secs(30))
                    });
                    super::warn(&[format!("{err}; retrying in {}s", wait.as_secs())]);
                    outage = Some(wait);
                    delay = wait;
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}

/// Drops the records whose ids were printed before, and notes the others' ids (with `--follow`).
fn keep_unprinted(printed: &mut Option<HashSet<String>>, records: &mut Vec<Record>) {
    if let Some(printed) = printed {
        records.retain(|r| printed.insert(r.id.clone()));
    }
}

/// Errors of a host that a later attempt may not see (the connection, not the file).
fn is_transient(err: &HostError) -> bool {
    !matches!(
        err,
        HostError::PathRefused { .. }
            | HostError::HostKeyChanged { .. }
            | HostError::HostKeyRevoked { .. }
            | HostError::HostKeyUnknown { .. }
            | HostError::Auth { .. }
            | HostError::SshConfig { .. }
    )
}

/// Reading or printing failed.
#[derive(Debug)]
enum PrintError {
    Read(DriverError),
    Output(std::io::Error),
}

impl From<DriverError> for PrintError {
    fn from(e: DriverError) -> PrintError {
        PrintError::Read(e)
    }
}

impl From<std::io::Error> for PrintError {
    fn from(e: std::io::Error) -> PrintError {
        PrintError::Output(e)
    }
}

impl From<PrintError> for Error {
    fn from(e: PrintError) -> Error {
        match e {
            PrintError::Read(e) => Error::Driver(e),
            PrintError::Output(e) => Error::Output(e),
        }
    }
}
