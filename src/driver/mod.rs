//! The driver: the one module that knows both the engine and the hosts. It resolves a session
//! from a host's listing, runs the engine's read planner against the host's read primitive,
//! and hands records to the caller as they complete. It owns the loops: one page
//! ([`read_page`]), pages until caught up ([`read_to_end`], which `check` and `--follow` use),
//! and following a session ([`follow`]). Callers parse, call, and print. A page whose bytes are
//! in hand (read along with a listing) is paged without the host, on any thread ([`InHand`],
//! [`on_every_core`]); so are the lines of each chunk `--all` reads, parsed ahead of the plan
//! (which stays sequential: repeated ids, bounds) by a helper thread kept for the read
//! (`parse_ahead`).
//!
//! This file holds the [`Reader`], its errors, and [`read_page`], which sends a page down one of
//! two paths. The rest, one concern a file:
//!
//! - `resolve`: listing a host, and a session argument resolved to one session;
//! - `lines`: the lines path (the planner's reads of a file of lines);
//! - `rows`: the rows path (databases, documents and trees, read whole and paged);
//! - `to_end`: pages read until caught up;
//! - `prefetch`: reads done ahead of their pages, and pages in hand;
//! - `tails`: the newest records of many sessions, their reads batched (a first `check`);
//! - `resume`: the command that resumes a session;
//! - [`request`]: a read as the CLI and the MCP server ask for it, built once for both;
//! - [`retry`]: which host errors are tried again, for `--follow`, `check` and MCP;
//! - [`follow`], [`heads`], [`search`]: following, titles for `ls`, `grep` over a host;
//! - [`around`]: a session read around one of its records (a search hit opened in `ui`).
//!
//! [`read_page`]: Reader::read_page
//! [`read_to_end`]: Reader::read_to_end

pub mod around;
pub mod follow;
pub mod heads;
mod lines;
mod parse_ahead;
mod prefetch;
pub mod request;
mod resolve;
mod resume;
pub mod retry;
mod rows;
pub mod search;
mod tails;
#[cfg(test)]
pub(crate) mod testing;
mod to_end;

use clankie_engine::SourceCtx;
use clankie_engine::cursor::{Cursor, CursorError, PathHint, binding};
use clankie_engine::filter::RecordFilter;
use clankie_engine::harness;
use clankie_engine::page::{Mode, Page, PageRequest, PlanError};
use clankie_engine::resolve::ResolveError;
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::{ByteRange, FileEntry, Harness, Record, RootSpec};

use prefetch::{FileKey, Prefetched, WholeReads};
pub use prefetch::{InHand, on_every_core};
pub use resume::unnamed_root_note;

/// Everything that can end a read, by layer.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// No session matched on this host: says where it looked and how to see what is there.
    #[error(
        "no session `{id}` on {host} ({searched}); list its sessions with `clankie-read ls {host}`"
    )]
    NotFound {
        host: String,
        id: String,
        /// `searched DIR, DIR`, or that no harness directory exists there.
        searched: String,
    },
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error("{path}: {source}")]
    Plan { path: String, source: PlanError },
    /// A source that cannot be read as a transcript (corrupt compression, over the bounds).
    #[error("{path}: {reason}")]
    Source { path: String, reason: String },
    #[error(transparent)]
    Database(crate::sqlite::DatabaseError),
}

/// A host error met while reading a database is a host error, with the host's exit code.
impl From<crate::sqlite::DatabaseError> for DriverError {
    fn from(e: crate::sqlite::DatabaseError) -> DriverError {
        match e {
            crate::sqlite::DatabaseError::Host(e) => DriverError::Host(e),
            e => DriverError::Database(e),
        }
    }
}

/// The roots to list on a host: an explicit `--root`/hosts-file root replaces that harness's
/// default; other harnesses keep theirs, and one with no default home (terminal recordings)
/// is listed only under a root given for it.
pub fn roots_for(overrides: &[RootSpec], harness: Option<Harness>) -> Vec<RootSpec> {
    harness::all()
        .filter(|h| harness.is_none_or(|only| only == *h))
        .filter_map(|h| {
            overrides
                .iter()
                .find(|r| r.harness == h)
                .cloned()
                .or_else(|| h.default_home().exists().then(|| RootSpec::default_for(h)))
        })
        .collect()
}

/// Reads the sessions of one host: the driver's entry point. It holds the host and what is kept
/// between reads of it for the run: the pages read of its databases, so that resolving a
/// session and then reading it, or every `--follow` poll, fetches only what changed.
pub struct Reader<'h, H: Host> {
    host: &'h H,
    databases: crate::sqlite::Databases,
    /// The size of a terminal recording whose header gives none (`--cols`/`--rows`).
    terminal_size: Option<(usize, usize)>,
    /// How far before the end a tail's first read starts, when the caller knows better than
    /// the planner's default ([`Reader::with_tail_window`]).
    tail_window: Option<u64>,
    /// The bytes the last tail page read from a file of lines spanned
    /// ([`ReadPlan::tail_page_bytes`](clankie_engine::plan::ReadPlan::tail_page_bytes)).
    last_tail_bytes: std::sync::Mutex<Option<u64>>,
    /// Reads done ahead (with the resolution, or batched for many sessions), each served once
    /// to the read it answers; by file (root, path), as `check` keeps one for each of
    /// thousands of sessions.
    prefetched: std::sync::Mutex<std::collections::HashMap<FileKey, Vec<Prefetched>>>,
    /// Files read whole with the listing ([`Reader::list_sessions_reading`]), until
    /// [`Reader::take_in_hand`] takes one for its tail page, or
    /// [`Reader::prefetch_first_reads`] turns it into the first read of its session.
    whole: std::sync::Mutex<WholeReads>,
    /// The ends of larger files read with the listing
    /// ([`Reader::list_sessions_reading_ends`]), until [`Reader::tail_pages`] takes one for
    /// its first read.
    ends: std::sync::Mutex<std::collections::HashMap<FileKey, clankie_host::FileEnds>>,
    /// `--all`'s streamed batches are handed on unredacted: the caller redacts them itself
    /// ([`Reader::with_streamed_batches_unredacted`]).
    streamed_unredacted: bool,
    /// The caller writes records as JSON: `--all`'s texts may stay JSON tokens
    /// ([`Reader::with_texts_as_json_tokens`]).
    texts_as_json_tokens: bool,
    /// Which records every page holds ([`Reader::with_filter`]).
    filter: RecordFilter,
    /// How sources were read, one line each, for `-v` ([`Reader::take_notes`]).
    notes: std::sync::Mutex<Vec<String>>,
    /// The caller reads backward from its tail pages ([`Reader::with_backward_reads`]).
    reads_back: bool,
}

/// The cursor says where the file is, so that a `--since` with it finds the file without
/// looking for it (`resolve_for_read`).
fn hint_the_path(page: &mut Page, session: &SessionFile) {
    for cursor in std::iter::once(&mut page.cursor).chain(page.start.as_mut()) {
        if let Cursor::Lines(cursor) = cursor {
            cursor.hint = Some(PathHint::new(session.harness(), session.entry.rel.clone()));
        }
    }
}

impl<H: Host> std::fmt::Debug for Reader<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("host", &self.host.name())
            .field("databases", &self.databases)
            .finish()
    }
}

impl<'h, H: Host> Reader<'h, H> {
    pub fn new(host: &'h H) -> Reader<'h, H> {
        Reader {
            host,
            databases: crate::sqlite::Databases::default(),
            terminal_size: None,
            tail_window: None,
            last_tail_bytes: std::sync::Mutex::new(None),
            prefetched: std::sync::Mutex::new(std::collections::HashMap::new()),
            whole: std::sync::Mutex::new(std::collections::HashMap::new()),
            ends: std::sync::Mutex::new(std::collections::HashMap::new()),
            streamed_unredacted: false,
            texts_as_json_tokens: false,
            filter: RecordFilter::default(),
            notes: std::sync::Mutex::new(Vec::new()),
            reads_back: false,
        }
    }

    /// This reader, for a caller that reads backward from its tail pages ([`Mode::Before`]
    /// from [`Page::start`](clankie_engine::page::Page::start)): a database's tail page then
    /// also reads the row before it, where its start cursor is anchored. Without it a tail
    /// reads only its own rows (one round trip fewer where the row before lies on another
    /// page), and such a page's `start` is `None` when older rows exist.
    pub fn with_backward_reads(mut self) -> Reader<'h, H> {
        self.reads_back = true;
        self
    }

    /// How the sources read so far were read, for `-v` (a terminal recording's tail: from
    /// which checkpoint, or why from its start), once each.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// This reader, holding in every page it reads (a read's, each `--follow` poll's) only the
    /// records `filter` keeps: a page's `limit` counts those, read further back or on within
    /// the 64 MiB bound of one read, and the page counts what it examined and left out
    /// ([`Page::filtered`]). A filter that matches text (`--grep`) matches it redacted when the
    /// page is, so `--all`'s batches are then redacted here whatever
    /// [`Reader::with_streamed_batches_unredacted`] says.
    pub fn with_filter(mut self, filter: &RecordFilter) -> Reader<'h, H> {
        self.filter = filter.clone();
        self
    }

    /// Whether `--all`'s batches go out unredacted for the caller to redact.
    fn streams_unredacted(&self) -> bool {
        self.streamed_unredacted && !self.filter.is_active()
    }

    /// This reader, leaving the texts of `--all`'s lines parsed ahead as the JSON tokens the
    /// harness kept ([`clankie_model::LazyText`]), for a caller that writes them as JSON and
    /// copies the tokens. Without it they are unescaped on the parsing threads, where a text
    /// reader's own thread would otherwise do it later, alone.
    pub fn with_texts_as_json_tokens(mut self) -> Reader<'h, H> {
        self.texts_as_json_tokens = true;
        self
    }

    /// This reader, handing the batches `--all` streams to `read_page`'s `emit` unredacted even
    /// when the request asks for redaction: the caller promises to redact them (the CLI's
    /// NDJSON writer does, on the thread that writes them, while the next chunk is parsed).
    /// The page's own records are redacted as ever, and so are those `read_to_end` collects.
    pub fn with_streamed_batches_unredacted(mut self) -> Reader<'h, H> {
        self.streamed_unredacted = true;
        self
    }

    /// This reader, replaying terminal recordings whose header gives no size at `cols`×`rows`.
    pub fn with_terminal_size(mut self, cols: usize, rows: usize) -> Reader<'h, H> {
        self.terminal_size = Some((cols, rows));
        self
    }

    /// This reader, starting a tail's first read `bytes` before the session's end
    /// ([`ReadPlan::with_tail_window`]): the MCP server sizes it for the page from its last
    /// read of the session, so that a warm tail is one read.
    ///
    /// [`ReadPlan::with_tail_window`]: clankie_engine::plan::ReadPlan::with_tail_window
    pub fn with_tail_window(mut self, bytes: u64) -> Reader<'h, H> {
        self.tail_window = Some(bytes);
        self
    }

    /// How many bytes the last tail page this reader read from a file of lines spans, from its
    /// first record's line to its end: what sizes a later tail's window.
    pub fn last_tail_bytes(&self) -> Option<u64> {
        *self
            .last_tail_bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The host this reader reads.
    pub fn host(&self) -> &'h H {
        self.host
    }

    /// Reads one page of a resolved session, calling `emit` with records as they complete (for
    /// `--all`, which streams). The returned page holds no records that were already emitted.
    /// A session of lines is read through the planner (`lines.rs`); any other is read whole and
    /// paged over its records (`rows.rs`).
    pub async fn read_page(
        &self,
        session: &SessionFile,
        request: PageRequest,
        emit: impl FnMut(Vec<Record>),
    ) -> Result<Page, DriverError> {
        let ctx = source_ctx(self.host.name(), session);
        if let Mode::Since(cursor) | Mode::Before(cursor) = &request.mode {
            cursor.check_binding(&binding(&ctx.host, ctx.harness.name(), &ctx.session))?;
        }
        let source = harness::source(session);
        if let Mode::Since(cursor) | Mode::Before(cursor) = &request.mode
            && matches!(cursor, Cursor::Rows(_)) != source.is_rows()
        {
            return Err(CursorError::Invalid("cursor class does not match the source").into());
        }
        let strict = request.strict;
        let page = if source.is_rows() {
            self.read_rows(session, ctx, source, request, emit).await?
        } else {
            self.read_lines(session, ctx, source, request, emit).await?
        };
        if strict {
            page.strict_check().map_err(|source| DriverError::Plan {
                path: String::from_utf8_lossy(&session.entry.full_path()).into_owned(),
                source,
            })?;
        }
        Ok(page)
    }
}

/// The host's name for a listed file.
fn file_ref(entry: &FileEntry) -> FileRef {
    FileRef {
        harness: entry.harness,
        root: entry.root.to_vec(),
        rel: entry.rel.clone(),
    }
}

/// The source context records of a session carry.
pub fn source_ctx(host: &str, session: &SessionFile) -> SourceCtx {
    SourceCtx {
        host: host.to_string(),
        harness: session.harness(),
        session: session.id.clone(),
        agent: session.agent.clone(),
    }
}

/// Reads a whole file through the read primitive, at most the 64 MiB source bound.
async fn fetch_whole<H: Host>(
    host: &H,
    file: &FileRef,
    size_hint: u64,
    path: &str,
) -> Result<Vec<u8>, DriverError> {
    use clankie_model::limits::{MAX_READ_BYTES, MAX_SOURCE_BYTES};
    let mut bytes = Vec::with_capacity(size_hint.min(MAX_SOURCE_BYTES) as usize);
    loop {
        let start = bytes.len() as u64;
        let result = host
            .read(file, &[ByteRange::new(start, MAX_READ_BYTES)])
            .await?;
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        bytes.extend_from_slice(&chunk);
        // The bound first: the last chunk of a file just over it would otherwise complete it.
        if bytes.len() as u64 > MAX_SOURCE_BYTES {
            return Err(DriverError::Source {
                path: path.to_string(),
                reason: format!(
                    "the file is over the {} MiB bound of one read",
                    MAX_SOURCE_BYTES >> 20
                ),
            });
        }
        if bytes.len() as u64 >= result.size || chunk.is_empty() {
            return Ok(bytes);
        }
    }
}

#[cfg(test)]
mod tests;
