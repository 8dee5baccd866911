//! `clankie-read read HOST:SESSION`: one page of a session (tail, head, all, since a cursor), or
//! every record since a time.

use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::context::{Context, GlobalArgs, split_target, whole_host};
use crate::driver::follow::{
    FeedError, FeedSink, FollowOptions, HostFeed, HostFeedSink, SessionFeed, TokioClock,
};
use crate::driver::request::{Pages, ReadRequest};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::render::PageInfo;
use crate::render::Renderer;
use crate::render::pager::PagedStdout;
use crate::render::progress::Progress;
use crate::render::text::SessionHeader;
use crate::render::tty;
use clankie_engine::filter::{RecordFilter, Since, parse_since};
use clankie_engine::harness;
use clankie_engine::page::Mode;
use clankie_engine::page::Page;
use clankie_engine::resolve::SessionQuery;
use clankie_engine::session::SessionFile;
use clankie_host::Host;
use clankie_model::Record;
use clankie_model::limits::{FIRST_TAIL_WINDOW_BYTES, MAX_LIMIT, MAX_SOURCE_BYTES};
use clankie_model::sanitize::sanitize_line;
use jiff::ZonedDateTime;

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The session: `HOST:SESSION`, where SESSION is an id, a unique prefix of at least 6
    /// characters, `HARNESS/ID`, or `@latest`, the host's newest session (the one `ls` lists
    /// first; `@latest/HARNESS` within one harness); a bare `SESSION` is `local:SESSION`. With --follow,
    /// `HOST:*` (or `HOST:HARNESS/*`) follows every session of the host that changes.
    #[arg(value_name = "HOST:SESSION")]
    pub target: String,
    /// The newest records (the default): N of them with `--tail N` or `--tail=N` (1 to 200),
    /// else --limit. A word after --tail is its N only when it is a number of 1 to 5 digits,
    /// so `--tail SESSION` still names the session.
    #[arg(long, group = "mode", value_name = "N", num_args = 0..=1, require_equals = true, value_parser = clap::value_parser!(u16).range(1..=MAX_LIMIT as i64))]
    pub tail: Option<Option<u16>>,
    /// The first records: N of them with `--head N` or `--head=N` (1 to 200), else --limit.
    #[arg(long, group = "mode", value_name = "N", num_args = 0..=1, require_equals = true, value_parser = clap::value_parser!(u16).range(1..=MAX_LIMIT as i64))]
    pub head: Option<Option<u16>>,
    /// Every record from the start, streamed (at most 64 MiB of source per run); with
    /// --since CURSOR, every record after CURSOR.
    #[arg(long, conflicts_with_all = ["tail", "head"])]
    pub all: bool,
    /// A cursor or a time. CURSOR (a page's `cursor`): the next --limit records after it.
    /// TIME (2h, 30m, today, yesterday, 2026-12-01, RFC 3339; days begin at local midnight):
    /// every record at or after it, read from the session's start, streamed (as --all --after
    /// TIME; --limit does not apply).
    #[arg(long, conflicts_with_all = ["tail", "head"], value_name = "CURSOR|TIME")]
    pub since: Option<String>,
    /// Records per page, 1 to 200 (default 50).
    #[arg(long, short = 'n', value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_LIMIT as i64))]
    pub limit: Option<u16>,
    /// Irregular sources fail: a stale cursor exits 5, a malformed record exits 6.
    #[arg(long)]
    pub strict: bool,
    /// Show tool inputs, results and thinking whole instead of shortened.
    #[arg(long)]
    pub full: bool,
    /// End a text page with its cursor (`-- cursor …`), to pass to --since for the next page.
    /// NDJSON's `page` line always holds it.
    #[arg(long)]
    pub show_cursor: bool,
    /// Leave the model's thinking out of the text output.
    #[arg(long)]
    pub no_thinking: bool,
    /// Never pipe text output through a pager. Without it, a page longer than the terminal
    /// goes through $CLANKIE_PAGER, else $PAGER, else `less -FRX` (never with --json or
    /// --follow, nor when stdout is not a terminal).
    #[arg(long)]
    pub no_pager: bool,
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
    /// Columns of the terminal a recording (`terminal/ID`) is replayed on when its header gives
    /// no size (default 80).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub cols: Option<u16>,
    /// Rows of that terminal (default 24).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub rows: Option<u16>,
    #[command(flatten)]
    pub filters: FilterArgs,
}

/// Which records a page holds. Filters apply before paging: `-n 5` is the five newest (with
/// `--head`, first) records they keep, read further back within the 64 MiB bound of one read;
/// the page's cursor continues after the last record examined, and the page line counts the
/// records examined and left out (`"filtered": N`).
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Only records of these kinds: user, assistant, tool_call, tool_result, notice, terminal,
    /// or `tools` for both tool kinds (comma-separated, repeatable).
    #[arg(long, value_name = "KIND[,KIND…]")]
    pub kind: Vec<String>,
    /// Only records whose text matches REGEX (a tool call's name and input, a result's output);
    /// matched after redaction.
    #[arg(long, value_name = "REGEX")]
    pub grep: Option<String>,
    /// Only records at or after TIME: an age (30m, 2h, 3d), today, yesterday, a date
    /// (2026-12-01; days begin at local midnight) or RFC 3339 (2026-11-02T10:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub after: Option<String>,
    /// Only records before TIME (the same forms as --after).
    #[arg(long, value_name = "TIME")]
    pub before: Option<String>,
}

impl FilterArgs {
    /// The filter these options ask for, with times read at `now` in its time zone; a bad
    /// kind, regex or time is a usage error.
    fn parse(&self, now: &ZonedDateTime) -> Result<RecordFilter, UsageError> {
        RecordFilter::parse(
            &self.kind,
            self.grep.as_deref(),
            self.after.as_deref(),
            self.before.as_deref(),
            now,
        )
        .map_err(UsageError::from)
    }
}

pub(super) async fn run(global: &GlobalArgs, args: ReadArgs) -> Result<Outcome, Error> {
    // Everything is validated before any I/O.
    let (host_name, session_arg) = split_target(&args.target)?;
    if let Some(harness) = whole_host(session_arg) {
        return follow_host(global, &args, host_name, harness).await;
    }
    let request = read_request(host_name, session_arg, &args, &now_for(&args))?;
    let interval = interval(&args)?;
    let ctx = Context::new(global)?;
    let mut renderer = ctx.renderer(args.full);
    let on_terminal = tty::stdout_is_terminal();
    if let Some(text) = renderer.text_options_mut() {
        text.thinking = !args.no_thinking;
        // The page-end line is for a person at a terminal (or who asked for the cursor); between
        // polls it is noise, and scripts use --json.
        text.cursor_line = (on_terminal || args.show_cursor) && !args.follow;
        text.show_cursor = args.show_cursor;
        text.screen = !args.follow;
    }
    let out = if on_terminal && !renderer.is_ndjson() && !args.follow && !args.no_pager {
        PagedStdout::paged()
    } else {
        PagedStdout::direct()
    };
    if request.page.redact {
        // Built on a thread of their own, the redaction's automata are ready by the first
        // text, and their millisecond overlaps opening the host and resolving the session.
        std::thread::spawn(clankie_engine::redact::prepare);
    }

    // A read still going after half a second (a database copied and queried, a large --all)
    // shows a line on a terminal's stderr, erased before the first output to a terminal.
    let progress = Progress::records_if_slow(&format!("reading {}", args.target));
    let opened = ctx.open(host_name)?;
    let host = opened.host;
    // One reader for the run: the database copy it keeps serves resolving, the first page and
    // every poll.
    // `--all --json`'s batches are redacted on the thread that writes them (`PrintSink`); a
    // filter's `--grep` matches redacted text, so a filtered read redacts them as it reads.
    let redact_streamed =
        request.page.redact && matches!(renderer, Renderer::Ndjson) && !request.filter.is_active();
    let mut reader = Reader::new(&host).with_filter(&request.filter);
    if redact_streamed {
        reader = reader.with_streamed_batches_unredacted();
    }
    if matches!(renderer, Renderer::Ndjson) {
        reader = reader.with_texts_as_json_tokens();
    }
    if matches!(request.page.mode, Mode::Tail) {
        // One read for a page of a few KiB a record (over SSH: one exec for the session's
        // resolution and its page).
        reader = reader.with_tail_window(FIRST_TAIL_WINDOW_BYTES);
    }
    if args.cols.is_some() || args.rows.is_some() {
        reader = reader.with_terminal_size(
            usize::from(args.cols.unwrap_or(80)),
            usize::from(args.rows.unwrap_or(24)),
        );
    }
    // Resolving reads the session's first range in the same round trip when it can.
    let session = request.resolve(&reader, &opened.roots).await?;
    let header = if on_terminal && !renderer.is_ndjson() {
        Some(session_header(&reader, host.name(), &session).await)
    } else {
        None
    };
    let mut sink = PrintSink {
        header,
        held: None,
        streamed: matches!(request.page.mode, Mode::All),
        renderer,
        out,
        info: PageInfo {
            host: host.name(),
            harness: session.harness().name(),
            session: &session.id,
            filtered: None,
        },
        filtering: request.filter.is_active(),
        following: false,
        progress,
        on_terminal,
        pipeline: None,
        redact_streamed,
        version_hinted: false,
    };
    let mut feed = SessionFeed::new(&reader, &session, args.follow);
    let page = request.read(&mut feed, &mut sink).await;
    sink.following = args.follow;
    sink.progress.finish();
    // The page is whole: held output goes out, or the pager is waited for, before anything
    // else is said.
    let finished = sink.out.finish();
    if ctx.verbose() {
        super::warn(&host.take_notes());
        super::warn(&reader.take_notes());
    }
    let page = page?;
    finished?;
    if matches!(request.page.mode, Mode::All) && page.more {
        // The 64 MiB bound of one run stopped the read: say how to go on.
        super::warn(&[format!(
            "stopped at the {} MiB bound of one run; continue with: clankie-read {}:{} --all --since {}",
            MAX_SOURCE_BYTES >> 20,
            host.name(),
            session.id,
            page.cursor.encode()
        )]);
    }
    if args.follow {
        let options = FollowOptions {
            interval,
            strict: args.strict,
            redact: !args.no_redact,
            polls: None,
        };
        feed.follow(page.cursor, &options, &mut sink, &mut TokioClock, stopped())
            .await?;
    }
    Ok(Outcome::Done)
}

/// The time the arguments' times are read at: now in the system's time zone when they hold a
/// time (`--since TIME`, `--after`, `--before`), else now in UTC, which nothing reads (finding
/// the system's zone walks the zone database, a few milliseconds of a read's start).
fn now_for(args: &ReadArgs) -> ZonedDateTime {
    let f = &args.filters;
    if args.since.is_some() || f.after.is_some() || f.before.is_some() {
        ZonedDateTime::now()
    } else {
        jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::UTC)
    }
}

/// The read `args` ask for of `session` on `host`, made by the driver's request builder (as the
/// MCP server's `read_session` makes its own); times are read at `now`, in its time zone. The
/// session is checked first, then the filters, then --since, then the page's size: the first
/// that is wrong is the one reported.
///
/// `--since TIME` is `--all --after TIME`: every record at or after TIME, from the session's
/// start (with an `--after` too, the later of the two holds).
///
/// [`now_for`] gives `now`.
fn read_request(
    host: &str,
    session: &str,
    args: &ReadArgs,
    now: &ZonedDateTime,
) -> Result<ReadRequest, Error> {
    let query = SessionQuery::parse(session)?;
    let mut filter = args.filters.parse(now)?;
    let since = args
        .since
        .as_deref()
        .map(|text| parse_since(text, now))
        .transpose()
        .map_err(UsageError::from)?;
    let pages = match (since, args.head.is_some(), args.all) {
        (Some(Since::Cursor(cursor)), _, true) => Pages::AllSince(cursor),
        (Some(Since::Cursor(cursor)), _, false) => Pages::Since(cursor),
        (Some(Since::Time(time)), _, _) => {
            filter = filter.at_or_after(time);
            Pages::All
        }
        (None, true, _) => Pages::Head,
        (None, _, true) => Pages::All,
        _ => Pages::Tail,
    };
    let limit = page_size(args)?;
    let request = ReadRequest::new(host, query, pages, usize::from(limit), filter);
    Ok(request.strict(args.strict).redacted(!args.no_redact))
}

/// Records a page: the N of `--tail N`/`--head N`, else `--limit`, else 50. Both an N and
/// `--limit` is a usage error.
fn page_size(args: &ReadArgs) -> Result<u16, UsageError> {
    let counted = [("--tail", args.tail), ("--head", args.head)]
        .into_iter()
        .find_map(|(flag, count)| Some((flag, count.flatten()?)));
    match (counted, args.limit) {
        (Some((flag, count)), Some(limit)) => Err(UsageError::PageSizeTwice { flag, count, limit }),
        (Some((_, count)), None) => Ok(count),
        (None, limit) => Ok(limit.unwrap_or(DEFAULT_PAGE_SIZE)),
    }
}

/// Records a page when neither `--limit` nor a count after `--tail`/`--head` says.
const DEFAULT_PAGE_SIZE: u16 = 50;

/// What ends a follow, with exit 0: Ctrl-C (or a failure to listen for it), or stdout's reader
/// gone (`--follow | head -1`, as `tail -f` ends), noticed while nothing is written too.
async fn stopped() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    tokio::select! {
        () = ctrl_c => {}
        () = stdout_closed() => {}
    }
}

/// Resolves once stdout is a pipe or socket whose reader has gone: a write would fail, and a
/// follow that writes nothing for hours would otherwise never learn it. Looked at every 100 ms.
async fn stdout_closed() {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if stdout_reader_gone() {
            return;
        }
    }
}

/// Whether stdout's reader has gone: `poll` reports an error (a pipe with no reader) or a
/// hang-up on it, which it does whatever events are asked for. A terminal, a file or
/// `/dev/null` never reports either while usable.
#[cfg(unix)]
fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::os::fd::AsFd;
    let stdout = std::io::stdout();
    let fd = stdout.as_fd();
    let mut fds = [PollFd::new(&fd, PollFlags::empty())];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(1..))
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// Elsewhere the follow learns it from the first write that fails.
#[cfg(not(unix))]
fn stdout_reader_gone() -> bool {
    false
}

/// `--interval` as a duration; zero, negative or not a number is a usage error.
fn interval(args: &ReadArgs) -> Result<Duration, UsageError> {
    Duration::try_from_secs_f64(args.interval)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(UsageError::Interval {
            secs: args.interval,
        })
}

/// `HOST:* --follow` (or `HOST:HARNESS/* --follow`): the records of every session of the host
/// that changes, from when the follow starts, each line naming its session.
async fn follow_host(
    global: &GlobalArgs,
    args: &ReadArgs,
    host_name: &str,
    harness: Option<&str>,
) -> Result<Outcome, Error> {
    if !args.follow || args.head.is_some() || args.all || args.since.is_some() {
        return Err(UsageError::WholeHostWithoutFollow {
            target: args.target.clone(),
            host: host_name.to_string(),
        }
        .into());
    }
    let harness = harness
        .map(|name| {
            harness::by_name(name).ok_or_else(|| UsageError::UnknownHarness {
                name: name.to_string(),
            })
        })
        .transpose()?;
    let filter = args.filters.parse(&ZonedDateTime::now())?;
    let interval = interval(args)?;
    let ctx = Context::new(global)?;
    let mut renderer = ctx.renderer(args.full);
    if let Some(text) = renderer.text_options_mut() {
        text.thinking = !args.no_thinking;
        text.cursor_line = false;
        // Each line gives up the prefix's columns.
        text.width = text
            .width
            .map(|w| w.saturating_sub(SESSION_PREFIX_WIDTH).max(20));
    }
    let opened = ctx.open(host_name)?;
    let host = opened.host;
    // The filter is the sink's: the feed's start reads one record of each session for its
    // cursor, which a filtered reader would look for further back.
    let reader = Reader::new(&host);
    let options = FollowOptions {
        interval,
        strict: args.strict,
        redact: !args.no_redact,
        polls: None,
    };
    let mut feed = HostFeed::new(&reader, roots_for(&opened.roots, harness));
    let progress = Progress::spinner_if_slow(&format!("finding the sessions of {host_name}"));
    let started = feed.start(&options).await;
    progress.finish();
    if ctx.verbose() {
        super::warn(&host.take_notes());
    }
    started?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{}", following_line(host.name(), &feed));
    }
    let mut sink = HostPrintSink {
        renderer,
        out: PagedStdout::direct(),
        host: host.name(),
        filter: &filter,
        filtered: 0,
        harness: "",
        session: String::new(),
        prefix: String::new(),
        buf: Vec::new(),
        version_hinted: false,
    };
    feed.follow(&options, &mut sink, &mut TokioClock, stopped())
        .await?;
    sink.out.finish()?;
    Ok(Outcome::Done)
}

/// What a host-wide follow says on a terminal before its first record: what it follows.
/// `following 3 sessions on devbox (claude 2, codex 1) and every new one; Ctrl-C ends`.
fn following_line<H: Host>(host: &str, feed: &HostFeed<'_, H>) -> String {
    let count = feed.followed();
    let sessions = if count == 1 { "session" } else { "sessions" };
    let harnesses: Vec<String> = feed
        .followed_harnesses()
        .into_iter()
        .map(|(harness, n)| format!("{} {n}", harness.name()))
        .collect();
    let which = if harnesses.is_empty() {
        String::new()
    } else {
        format!(" ({})", harnesses.join(", "))
    };
    let line =
        format!("following {count} {sessions} on {host}{which} and every new one; Ctrl-C ends");
    sanitize_line(&line)
}

/// The width of a host-wide follow's text prefix: an 8-character id, a space, the project in
/// [`PROJECT_CHARS`] columns, ` │ `.
const SESSION_PREFIX_WIDTH: usize = 8 + 1 + PROJECT_CHARS + 3;
const PROJECT_CHARS: usize = 16;

/// The text prefix of a session's lines in a host-wide follow: the id's first 8 characters
/// and the project (its working directory's last component, `-` when unknown), in fixed
/// columns.
fn session_prefix(id: &str, cwd: Option<&str>) -> String {
    let short: String = id.chars().take(8).collect();
    let project = cwd
        .map(|cwd| cwd.trim_end_matches(['/', '\\']))
        .and_then(|cwd| cwd.rsplit(['/', '\\']).next())
        .filter(|p| !p.is_empty())
        .map_or_else(|| "-".to_string(), sanitize_line);
    let project = if project.chars().count() > PROJECT_CHARS {
        let kept: String = project.chars().take(PROJECT_CHARS - 1).collect();
        format!("{kept}…")
    } else {
        project
    };
    format!("{short:<8} {project:<PROJECT_CHARS$} │ ")
}

/// Prints a host-wide follow: NDJSON lines as a read prints them (each names its host, harness
/// and session); text lines each prefixed with their session ([`session_prefix`]), and no
/// page ends. Each poll reads every record after a session's cursor, so the filter is applied
/// here, to what it gives.
struct HostPrintSink<'a> {
    renderer: Renderer,
    out: PagedStdout,
    host: &'a str,
    filter: &'a RecordFilter,
    /// Records the filter left out since the last page end.
    filtered: usize,
    /// The session being given.
    harness: &'static str,
    session: String,
    prefix: String,
    /// Text output of one batch, before its lines are prefixed (kept between batches).
    buf: Vec<u8>,
    /// Whether the hint for a session written by an untested release was given (once a run).
    version_hinted: bool,
}

impl HostFeedSink for HostPrintSink<'_> {
    fn session(&mut self, session: &SessionFile, cwd: Option<&str>) {
        self.harness = session.harness().name();
        self.session.clone_from(&session.id);
        self.prefix = session_prefix(&session.id, cwd);
    }
}

/// The hint for a page of a session written by a newer release of its CLI than any this
/// reader is tested against.
fn untested_writer_hint(harness: &str, page: &Page) -> Option<String> {
    let version = page.writer_version.as_deref()?;
    clankie_engine::harness::untested_writer(clankie_engine::harness::by_name(harness)?, version)
}

impl FeedSink for HostPrintSink<'_> {
    fn records(&mut self, records: &[Record]) -> std::io::Result<()> {
        let kept: Vec<Record>;
        let records = if self.filter.is_active() {
            kept = records
                .iter()
                .filter(|r| self.filter.keeps(r))
                .cloned()
                .collect();
            self.filtered += records.len() - kept.len();
            &kept[..]
        } else {
            records
        };
        self.renderer.prefixed_records(
            &mut self.out,
            self.host,
            &self.prefix,
            &mut self.buf,
            records,
        )
    }

    fn page_end(&mut self, page: &Page) -> std::io::Result<()> {
        if !self.version_hinted
            && let Some(hint) = untested_writer_hint(self.harness, page)
        {
            self.version_hinted = true;
            super::hint(&hint);
        }
        let filtered = std::mem::take(&mut self.filtered);
        let info = PageInfo {
            host: self.host,
            harness: self.harness,
            session: &self.session,
            filtered: self.filter.is_active().then_some(filtered),
        };
        self.renderer
            .follow_page_end(&mut self.out, &info, page, &self.prefix)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn warning(&mut self, line: &str) {
        super::warn(&[line.to_string()]);
    }
}

/// The header of a page of `session` on a terminal, with what is known before reading it: its
/// title and directory (its first KiB read: one more read), when its file last changed.
async fn session_header<H: Host>(
    reader: &Reader<'_, H>,
    host: &str,
    session: &SessionFile,
) -> SessionHeader {
    let head = reader
        .session_heads(std::slice::from_ref(session))
        .await
        .pop()
        .unwrap_or_default();
    SessionHeader {
        host: host.to_string(),
        harness: session.harness().name().to_string(),
        session: session.id.clone(),
        title: head.title,
        cwd: head.cwd,
        last_activity: Some(session.entry.mtime),
        ..SessionHeader::default()
    }
}

/// Prints a feed: records and page ends through the renderer, warnings on stderr. The reader
/// applied the filter; the page line says what it left out.
struct PrintSink<'a> {
    /// The session header of a page on a terminal, until it is written: before the first
    /// page's records, with what they tell (held until the page ends, but for `--all`, whose
    /// records stream).
    header: Option<SessionHeader>,
    /// The first page's text, while its header waits for the page to end.
    held: Option<Vec<u8>>,
    /// The records stream (`--all`): the header goes out before the first of them.
    streamed: bool,
    renderer: Renderer,
    out: PagedStdout,
    info: PageInfo<'a>,
    /// A filter is given: page lines count what it left out.
    filtering: bool,
    /// The first page is out and polls follow: the text output stays quiet about what the
    /// filter left out (NDJSON page lines still count it).
    following: bool,
    /// Counts the records given; erased before the first output when stdout is a terminal.
    progress: Progress,
    on_terminal: bool,
    /// `--all --json`'s streamed batches, written on a thread of their own (started with the
    /// first batch); their lines go out before anything else is written.
    pipeline: Option<crate::render::ndjson::Pipeline>,
    /// The reader hands `--all`'s streamed batches over unredacted
    /// (`Reader::with_streamed_batches_unredacted`): this sink redacts them, on the
    /// pipeline's thread or before it writes them itself.
    redact_streamed: bool,
    /// Whether the hint for a session written by an untested release was given (once a run).
    version_hinted: bool,
}

impl PrintSink<'_> {
    /// Writes the lines the pipeline has ready, or (with `wait`) all it was given.
    fn write_pipelined(&mut self, wait: bool) -> std::io::Result<()> {
        let Some(pipeline) = &mut self.pipeline else {
            return Ok(());
        };
        for lines in pipeline.take(wait) {
            self.out.write_all(&lines)?;
            pipeline.recycle(lines);
        }
        Ok(())
    }

    /// Before output: the progress line goes if it shares the terminal, else counts.
    fn progress(&self, records: usize) {
        if self.on_terminal {
            self.progress.finish();
        } else {
            self.progress.inc(records as u64);
        }
    }
}

impl FeedSink for PrintSink<'_> {
    fn records(&mut self, records: &[Record]) -> std::io::Result<()> {
        self.write_pipelined(true)?;
        self.progress(records.len());
        if let Some(header) = &mut self.header {
            header.note_records(records);
            if self.streamed {
                self.renderer.session_header(&mut self.out, header)?;
                self.header = None;
            } else {
                let held = self.held.get_or_insert_with(Vec::new);
                return self.renderer.records(held, self.info.host, records);
            }
        }
        self.renderer
            .records(&mut self.out, self.info.host, records)
    }

    fn records_owned(&mut self, mut records: Vec<Record>) -> std::io::Result<()> {
        let pipelined = matches!(self.renderer, Renderer::Ndjson);
        if pipelined && self.pipeline.is_none() {
            self.pipeline =
                crate::render::ndjson::Pipeline::start(self.info.host, self.redact_streamed);
        }
        if pipelined && self.pipeline.is_some() {
            self.progress(records.len());
            if let Some(pipeline) = &mut self.pipeline {
                pipeline.send(records);
            }
            return self.write_pipelined(false);
        }
        if self.redact_streamed {
            clankie_engine::redact::redact_records(&mut records);
        }
        self.records(&records)
    }

    fn page_end(&mut self, page: &Page) -> std::io::Result<()> {
        self.write_pipelined(true)?;
        self.progress(0);
        if !self.version_hinted
            && let Some(hint) = untested_writer_hint(self.info.harness, page)
        {
            self.version_hinted = true;
            self.progress.suspend(|| super::hint(&hint));
        }
        let quiet = self.following && !self.renderer.is_ndjson();
        self.info.filtered = (self.filtering && !quiet).then_some(page.filtered);
        if let Some(mut header) = self.header.take() {
            header.earlier = page.older;
            self.renderer.session_header(&mut self.out, &header)?;
            if let Some(held) = self.held.take() {
                self.out.write_all(&held)?;
            }
        }
        self.renderer.page_end(&mut self.out, &self.info, page)
    }

    /// Lines still being written on the pipeline's thread go out with the next call that
    /// waits for them (the page end, at the latest): waiting here would leave that thread
    /// nothing to do beside the next chunk's parse.
    fn flush(&mut self) -> std::io::Result<()> {
        self.write_pipelined(false)?;
        self.out.flush()
    }

    fn warning(&mut self, line: &str) {
        // A warning follows the records given before it.
        if self.write_pipelined(true).is_ok() {
            let _ = self.out.flush();
        }
        self.progress.suspend(|| super::warn(&[line.to_string()]));
    }
}

impl Drop for PrintSink<'_> {
    /// A read that failed halfway gives no page end: the records streamed before the failure
    /// are still written.
    fn drop(&mut self) {
        if self.write_pipelined(true).is_ok() {
            let _ = self.out.flush();
        }
    }
}

impl From<FeedError> for Error {
    fn from(e: FeedError) -> Error {
        match e {
            FeedError::Read(e) => Error::Driver(e),
            FeedError::Output(e) => Error::Output(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_prefixes_have_fixed_columns() {
        let prefix = session_prefix("3f1c2a00-aaaa", Some("/home/me/src/app/"));
        assert_eq!(prefix, "3f1c2a00 app              │ ");
        assert_eq!(prefix.chars().count(), SESSION_PREFIX_WIDTH);
        let long = session_prefix("ses_1", Some(r"C:\w\a-project-with-a-long-name"));
        assert_eq!(long, "ses_1    a-project-with-… │ ");
        assert_eq!(long.chars().count(), SESSION_PREFIX_WIDTH);
        assert_eq!(session_prefix("x", None), "x        -                │ ");
        // A control in a directory name is shown, never acted on.
        assert_eq!(
            session_prefix("x", Some("/w/a\u{1b}[2J")),
            "x        a\\x1b[2J         │ "
        );
    }

    /// The CLI's `read` and the MCP server's `read_session`, given the same read, build the
    /// same request with the driver's builder, field for field, and reading it the CLI's way
    /// (through a feed into a sink) and the server's (a page at once) gives the same session,
    /// page and records shown.
    #[test]
    fn the_cli_and_mcp_build_and_read_the_same_request() {
        use crate::driver::follow::SessionFeed;
        use crate::driver::testing::{Recorder, SHORT, block_on, claude_path};
        use crate::mcp::read_request as mcp_request;
        use crate::mcp::tools::ReadSessionArgs;
        use clankie_host::memory::MemoryHost;
        use clap::Parser;
        use serde_json::json;

        let id = "55604662-cf2a-4331-851a-ec234028f8ca";
        let host = MemoryHost::new("local");
        host.put(claude_path(&host, id), SHORT.as_bytes());
        let cli_request = |args: &[&str]| {
            let cli =
                super::super::Cli::try_parse_from([&["clankie-read", "read"][..], args].concat())
                    .unwrap();
            let super::super::Command::Read(args) = cli.command else {
                unreachable!("a read was parsed")
            };
            let (host, session) = split_target(&args.target).unwrap();
            read_request(host, session, &args, &ZonedDateTime::now()).unwrap()
        };
        let mcp_request = |arguments: serde_json::Value| {
            let args: ReadSessionArgs = serde_json::from_value(arguments).unwrap();
            mcp_request(&args).unwrap()
        };
        block_on(async {
            let reader = Reader::new(&host);
            let head = cli_request(&["local:55604662", "--head", "-n", "3"]);
            let session = head.resolve(&reader, &[]).await.unwrap();
            let head = reader.read_page(&session, head.page, |_| {}).await.unwrap();
            let cursor = head.cursor.encode();
            let named = format!("local:claude/{id}");
            let reads = [
                (
                    vec!["local:55604662", "-n", "4"],
                    json!({"target": "local:55604662", "limit": 4}),
                ),
                (
                    vec![&named, "--head", "-n", "3", "--kind", "user,tools"],
                    json!({"target": named, "mode": "head", "limit": 3,
                           "kinds": ["user", "tools"]}),
                ),
                (
                    vec!["55604662", "--since", &cursor, "-n", "2"],
                    json!({"target": "55604662", "mode": "since", "cursor": cursor, "limit": 2}),
                ),
            ];
            for (cli_args, arguments) in reads {
                let cli = cli_request(&cli_args);
                let mcp = mcp_request(arguments.clone());
                assert_eq!(cli.host, mcp.host, "{arguments}");
                assert_eq!(cli.query, mcp.query, "{arguments}");
                assert_eq!(cli.page.mode, mcp.page.mode, "{arguments}");
                assert_eq!(cli.page.limit, mcp.page.limit, "{arguments}");
                assert_eq!(cli.page.strict, mcp.page.strict, "{arguments}");
                assert_eq!(cli.page.redact, mcp.page.redact, "{arguments}");
                assert_eq!(cli.to_the_end, mcp.to_the_end, "{arguments}");
                assert_eq!(
                    format!("{:?}", cli.filter),
                    format!("{:?}", mcp.filter),
                    "{arguments}"
                );

                let cli_session = cli.resolve(&reader, &[]).await.unwrap();
                let mut sink = Recorder::default();
                let mut feed = SessionFeed::new(&reader, &cli_session, false);
                let cli_page = cli.read(&mut feed, &mut sink).await.unwrap();
                let mcp_session = mcp.resolve(&reader, &[]).await.unwrap();
                let mcp_page = mcp.read_page(&reader, &mcp_session).await.unwrap();
                assert_eq!(cli_session, mcp_session, "{arguments}");
                assert_eq!(cli_page, mcp_page, "{arguments}");
                assert_eq!(sink.records, mcp_page.records, "{arguments}");
                assert!(!mcp_page.records.is_empty(), "{arguments}");
                let shown = |request: &ReadRequest, records: &[Record]| -> Vec<String> {
                    let kept = records.iter().filter(|r| request.filter.keeps(r));
                    kept.map(|r| r.id.clone()).collect()
                };
                assert_eq!(
                    shown(&cli, &sink.records),
                    shown(&mcp, &mcp_page.records),
                    "{arguments}"
                );
            }

            // `--all --since`: the pages after the cursor, read to the end by both ways.
            let cli = cli_request(&["55604662", "--all", "--since", &cursor]);
            assert!(cli.to_the_end);
            let session = cli.resolve(&reader, &[]).await.unwrap();
            let mut sink = Recorder::default();
            let mut feed = SessionFeed::new(&reader, &session, false);
            let last = cli.read(&mut feed, &mut sink).await.unwrap();
            let whole = cli.read_page(&reader, &session).await.unwrap();
            assert!(!last.more);
            assert_eq!(sink.page_ends(), [(false, false)]);
            assert_eq!(whole.cursor, last.cursor);
            assert_eq!(whole.records, sink.records);
            assert!(!sink.records.is_empty());
        });
    }
}
