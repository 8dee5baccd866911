//! `clankie-read read HOST:SESSION`: one page of a session (tail, head, all, or since a cursor).

use std::io::Write;

use clap::Args;

use super::common::{GlobalArgs, open_host, split_target};
use crate::driver::{read_page, resolve_session, roots_for};
use crate::engine::cursor::Cursor;
use crate::engine::plan::{MAX_LIMIT, Mode, PageRequest};
use crate::engine::session::SessionQuery;
use crate::error::{Error, exit};
use crate::host::Host;
use crate::render::PageInfo;

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
    /// Show secrets as they are: turn off the redaction of API keys, tokens, passwords and
    /// private keys (on by default, in both outputs).
    #[arg(long)]
    pub no_redact: bool,
}

pub(super) async fn run(global: &GlobalArgs, args: ReadArgs) -> Result<u8, Error> {
    // Everything is validated before any I/O.
    let (host_name, session_arg) = split_target(&args.target)?;
    let query = SessionQuery::parse(session_arg)?;
    let mode = match (&args.since, args.head, args.all) {
        (Some(cursor), _, _) => Mode::Since(Cursor::decode(cursor)?),
        (None, true, _) => Mode::Head,
        (None, _, true) => Mode::All,
        _ => Mode::Tail,
    };
    let overrides = global.root_overrides()?;
    let renderer = global.renderer(args.json, args.full);
    let request = PageRequest {
        mode,
        limit: usize::from(args.limit),
        strict: args.strict,
        redact: !args.no_redact,
    };

    let host = open_host(global, host_name).await?;
    let session = resolve_session(&host, &roots_for(&overrides, query.harness), &query).await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_error = None;
    let page = read_page(&host, &session, request, |records| {
        if write_error.is_none()
            && let Err(e) = renderer
                .records(&mut out, &records)
                .and_then(|_| out.flush())
        {
            write_error = Some(e);
        }
    })
    .await?;
    if let Some(e) = write_error {
        return Err(Error::Output(e));
    }
    super::warn(&page.warnings);
    renderer.records(&mut out, &page.records)?;
    let info = PageInfo {
        host: host.name(),
        harness: session.harness().name(),
        session: &session.id,
    };
    renderer.page_end(&mut out, &info, &page)?;
    out.flush()?;
    Ok(exit::OK)
}
