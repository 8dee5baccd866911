//! A read as a user asks for it, built once for the CLI's `read` and the MCP server's
//! `read_session`: the host and the session, which pages, how many records a page, whether the
//! read is strict and redacted, and which records are shown. Each caller turns its own
//! arguments into a [`ReadRequest`] (and says what is wrong with them in its own words); the
//! read is then the same: the session resolved ([`ReadRequest::resolve`], its first read in the
//! same round trip where the host can), and one page, or with `--all --since` every page after
//! the cursor within the bound of one run ([`ReadRequest::read`], [`ReadRequest::read_page`]).

use clankie_engine::cursor::Cursor;
use clankie_engine::filter::RecordFilter;
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_engine::session::SessionFile;
use clankie_host::Host;
use clankie_model::RootSpec;
use clankie_model::limits::{MAX_LIMIT, MAX_SOURCE_BYTES};

use super::follow::{FeedError, FeedSink, SessionFeed};
use super::{DriverError, Reader, roots_for};

/// Which records a read asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Pages {
    /// The newest records (`--tail`, the default).
    Tail,
    /// The first records (`--head`).
    Head,
    /// Every record from the start, streamed (`--all`, within the bound of one run).
    All,
    /// The records after a page's cursor (`--since`).
    Since(Cursor),
    /// Every record after a page's cursor, page after page, within the bound of one run
    /// (`--all --since`).
    AllSince(Cursor),
    /// The records before a cursor, a page's start ([`Page::start`]), and a cursor at the start
    /// of those (a backward read, docs/cursors.md): how the view loads older records.
    ///
    /// [`Page::start`]: clankie_engine::page::Page::start
    Before(Cursor),
}

/// A read of one session: what the CLI and the MCP server turn their arguments into.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// The host's name, as the user gave it.
    pub host: String,
    /// The session asked for.
    pub query: SessionQuery,
    /// The first page: its mode, its size, and whether it is strict and redacted.
    pub page: PageRequest,
    /// After the first page, the pages after it until one says no record follows, within the
    /// bound of one run (`--all --since`).
    pub to_the_end: bool,
    /// Which of the records read are shown: applied after paging (the page's cursor is the
    /// unfiltered page's).
    pub filter: RecordFilter,
}

impl ReadRequest {
    /// A read of `query` on `host`: `pages`, `limit` records a page, redacted and lenient (a
    /// stale cursor starts again, a malformed record is a warning) unless
    /// [`Self::strict`] or [`Self::redacted`] say otherwise.
    pub fn new(
        host: &str,
        query: SessionQuery,
        pages: Pages,
        limit: usize,
        filter: RecordFilter,
    ) -> ReadRequest {
        let (mode, to_the_end) = match pages {
            Pages::Tail => (Mode::Tail, false),
            Pages::Head => (Mode::Head, false),
            Pages::All => (Mode::All, false),
            Pages::Since(cursor) => (Mode::Since(cursor), false),
            Pages::AllSince(cursor) => (Mode::Since(cursor), true),
            Pages::Before(cursor) => (Mode::Before(cursor), false),
        };
        ReadRequest {
            host: host.to_string(),
            query,
            page: PageRequest {
                mode,
                limit,
                strict: false,
                redact: true,
            },
            to_the_end,
            filter,
        }
    }

    /// This read, failing on irregular sources when `strict` (a stale cursor, a malformed
    /// record).
    pub fn strict(mut self, strict: bool) -> ReadRequest {
        self.page.strict = strict;
        self
    }

    /// This read, with secrets redacted only when `redact`.
    pub fn redacted(mut self, redact: bool) -> ReadRequest {
        self.page.redact = redact;
        self
    }

    /// Resolves the session on `reader`'s host, whose roots (the hosts file's, `--root`'s) are
    /// `roots`: where the host can, in one round trip with the first read of the page, which
    /// the page is then served from.
    pub async fn resolve<H: Host>(
        &self,
        reader: &Reader<'_, H>,
        roots: &[RootSpec],
    ) -> Result<SessionFile, DriverError> {
        reader
            .resolve_for_read(
                &roots_for(roots, self.query.harness),
                &self.query,
                &self.page,
            )
            .await
    }

    /// Reads `feed`'s session as asked, giving `sink` the records as they complete: one page
    /// and its end ([`SessionFeed::page`]), or with [`Self::to_the_end`] every page after the
    /// cursor and one page end after the last. Returns the last page.
    pub async fn read<H: Host>(
        &self,
        feed: &mut SessionFeed<'_, H>,
        sink: &mut impl FeedSink,
    ) -> Result<Page, FeedError> {
        if !self.to_the_end {
            return feed.page(self.page.clone(), sink).await;
        }
        let first = self.page.clone();
        pages_after_the_cursor(feed.reader(), feed.session(), first, |page, last| {
            for warning in &page.warnings {
                sink.warning(warning);
            }
            if !page.records.is_empty() {
                sink.records(&page.records)?;
            }
            if last {
                sink.page_end(page)?;
            }
            sink.flush()?;
            Ok::<(), FeedError>(())
        })
        .await
    }

    /// [`Self::read`] for a caller that takes the records at once (the MCP server): the last
    /// page, holding every record read.
    pub async fn read_page<H: Host>(
        &self,
        reader: &Reader<'_, H>,
        session: &SessionFile,
    ) -> Result<Page, DriverError> {
        if !self.to_the_end {
            return reader.read_page_whole(session, self.page.clone()).await;
        }
        let mut records = Vec::new();
        let mut page = pages_after_the_cursor(reader, session, self.page.clone(), |page, _| {
            records.extend_from_slice(&page.records);
            Ok::<(), DriverError>(())
        })
        .await?;
        page.records = records;
        Ok(page)
    }
}

/// `--all --since CURSOR`: every record after the cursor, page after page, within the bound of
/// one run; `on_page` sees each page, and whether it is the last. The bound counts the source
/// read past the cursor, and for a source each page fetches whole (a document, a compressed
/// transcript) every fetch. Returns the last page.
async fn pages_after_the_cursor<H: Host, E: From<DriverError>>(
    reader: &Reader<'_, H>,
    session: &SessionFile,
    first: PageRequest,
    mut on_page: impl FnMut(&Page, bool) -> Result<(), E>,
) -> Result<Page, E> {
    let offset = |mode: &Mode| match mode {
        Mode::Since(Cursor::Lines(c)) => Some(c.resume),
        _ => None,
    };
    let start = offset(&first.mode);
    let fetched_per_page = match harness::source(session) {
        Source::Document | Source::ZstdLines | Source::Tree => session.entry.size,
        // Line ranges are counted by the cursor; a database's copy is kept between pages.
        Source::Lines | Source::Database => 0,
    };
    let mut fetched = 0u64;
    let mut request = PageRequest {
        limit: MAX_LIMIT,
        ..first
    };
    loop {
        fetched = fetched.saturating_add(fetched_per_page);
        let page = reader.read_page(session, request.clone(), |_| {}).await?;
        let next = Mode::Since(page.cursor.clone());
        let read = offset(&next)
            .zip(start)
            .map_or(0, |(now, from)| now.saturating_sub(from));
        let last = !page.more || read.max(fetched) >= MAX_SOURCE_BYTES;
        on_page(&page, last)?;
        if last {
            return Ok(page);
        }
        request.mode = next;
    }
}
