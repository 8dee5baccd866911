//! `clankie-read read HOST:SESSION`: one page of a session (tail, head, all, or since a cursor).

use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::context::{Context, GlobalArgs, split_target};
use crate::driver::follow::{FeedError, FeedSink, FollowOptions, SessionFeed, TokioClock};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::render::PageInfo;
use crate::render::Renderer;
use crate::render::pager::PagedStdout;
use crate::render::terminal;
use clankie_engine::cursor::Cursor;
use clankie_engine::page::Page;
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_host::Host;
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
    /// Show tool inputs, results and thinking whole instead of shortened.
    #[arg(long)]
    pub full: bool,
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
    let mut renderer = ctx.renderer(args.json, args.full);
    let on_terminal = terminal::stdout_is_terminal();
    if let Some(text) = renderer.text_options_mut() {
        text.thinking = !args.no_thinking;
        // The cursor is for a person at a terminal who may ask for the next page; between
        // polls it is noise, and scripts use --json.
        text.cursor_line = on_terminal && !args.follow;
    }
    let out = if on_terminal && !args.json && !args.follow && !args.no_pager {
        PagedStdout::paged()
    } else {
        PagedStdout::direct()
    };
    let request = PageRequest {
        mode,
        limit: usize::from(args.limit),
        strict: args.strict,
        redact: !args.no_redact,
    };

    let opened = ctx.open(host_name)?;
    let host = opened.host;
    // One reader for the run: the database copy it keeps serves resolving, the first page and
    // every poll.
    let reader = Reader::new(&host);
    let session = reader
        .resolve_session(&roots_for(&opened.roots, query.harness), &query)
        .await?;
    let mut sink = PrintSink {
        renderer,
        out,
        info: PageInfo {
            host: host.name(),
            harness: session.harness().name(),
            session: &session.id,
        },
    };
    let mut feed = SessionFeed::new(&reader, &session, args.follow);
    let page = feed.page(request, &mut sink).await;
    // The page is whole: held output goes out, or the pager is waited for, before anything
    // else is said.
    let finished = sink.out.finish();
    if ctx.verbose() {
        super::warn(&host.take_notes());
    }
    let page = page?;
    finished?;
    if args.follow {
        let options = FollowOptions {
            interval,
            strict: args.strict,
            redact: !args.no_redact,
            polls: None,
        };
        // Ctrl-C ends a follow with exit 0 (as does a failure to listen for it).
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        feed.follow(page.cursor, &options, &mut sink, &mut TokioClock, ctrl_c)
            .await?;
    }
    Ok(Outcome::Done)
}

/// Prints a feed: records and page ends through the renderer, warnings on stderr.
struct PrintSink<'a> {
    renderer: Renderer,
    out: PagedStdout,
    info: PageInfo<'a>,
}

impl FeedSink for PrintSink<'_> {
    fn records(&mut self, records: &[Record]) -> std::io::Result<()> {
        self.renderer.records(&mut self.out, records)
    }

    fn page_end(&mut self, page: &Page) -> std::io::Result<()> {
        self.renderer.page_end(&mut self.out, &self.info, page)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn warning(&mut self, line: &str) {
        super::warn(&[line.to_string()]);
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
