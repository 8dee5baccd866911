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
//! [`read_page`]: Reader::read_page
//! [`read_to_end`]: Reader::read_to_end

pub mod follow;
pub mod heads;
mod parse_ahead;
pub mod search;
#[cfg(test)]
pub(crate) mod testing;

use std::collections::HashMap;

use clankie_engine::SourceCtx;
use clankie_engine::cursor::{Cursor, CursorError, PathHint, binding};
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest, PlanError};
use clankie_engine::plan::ReadPlan;
use clankie_engine::resolve::{self, ResolveError, SessionQuery};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{ByteRange, FileEntry, Harness, LeftOut, Listing, Record, RootSpec};

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
    /// ([`ReadPlan::tail_page_bytes`]).
    last_tail_bytes: std::sync::Mutex<Option<u64>>,
    /// Reads done ahead (with the resolution, or batched for many sessions), each served once
    /// to the read it answers; by file (root, path), as `check` keeps one for each of
    /// thousands of sessions.
    prefetched: std::sync::Mutex<std::collections::HashMap<FileKey, Vec<Prefetched>>>,
    /// Files read whole with the listing ([`Reader::list_sessions_reading`]), until
    /// [`Reader::take_in_hand`] takes one for its tail page, or
    /// [`Reader::prefetch_first_reads`] turns it into the first read of its session.
    whole: std::sync::Mutex<WholeReads>,
    /// `--all`'s streamed batches are handed on unredacted: the caller redacts them itself
    /// ([`Reader::with_streamed_batches_unredacted`]).
    streamed_unredacted: bool,
    /// The caller writes records as JSON: `--all`'s texts may stay JSON tokens
    /// ([`Reader::with_texts_as_json_tokens`]).
    texts_as_json_tokens: bool,
}

/// A tail page whose read is in hand ([`Reader::take_in_hand`]): no host is needed to page
/// it, so many of them can be paged side by side ([`on_every_core`]).
pub struct InHand<'s> {
    plan: ReadPlan,
    /// Cut into the plan's ranges on the thread that pages it (a copy of each small file's
    /// head).
    read: Prefetched,
    session: &'s SessionFile,
}

impl InHand<'_> {
    /// The page, from the bytes in hand, as [`Reader::read_page`] gives it; `None` when the
    /// plan wants more than them (the file changed between the listing and its read): the
    /// caller reads the page the usual way.
    pub fn page(mut self) -> Option<Result<Page, DriverError>> {
        let result = self.read.into_result();
        if let Err(source) = self.plan.feed(result.chunks, result.size) {
            let path = String::from_utf8_lossy(&self.session.entry.full_path()).into_owned();
            return Some(Err(DriverError::Plan { path, source }));
        }
        if self.plan.next_read().is_some() {
            return None;
        }
        let mut page = self.plan.finish();
        hint_the_path(&mut page, self.session);
        Some(Ok(page))
    }
}

/// `work` done on each of `items` on up to as many threads as there are cores, the results in
/// the items' order. For CPU-bound work that needs no host: the pages of thousands of sessions
/// read along with a first `check`'s listing, while the hosts are idle.
pub fn on_every_core<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    // Below this many items a thread costs more than it saves.
    const PER_THREAD: usize = 256;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(items.len() / PER_THREAD).max(1);
    if threads == 1 {
        return items.into_iter().map(work).collect();
    }
    // A few parts a thread, taken in turn: a thread that starts late or runs slow takes fewer.
    let per = items.len().div_ceil(threads * 4);
    let mut parts: Vec<Vec<T>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        parts.push(items.by_ref().take(per).collect());
    }
    let parts = std::sync::Mutex::new(parts.into_iter().enumerate());
    let run = || {
        let mut done = Vec::new();
        loop {
            let next = parts.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((k, part)) = next else {
                return done;
            };
            done.push((k, part.into_iter().map(&work).collect::<Vec<R>>()));
        }
    };
    std::thread::scope(|scope| {
        // A thread that cannot be started leaves its parts to the others, this one at least.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, run).ok())
            .collect();
        let mut done = run();
        for helper in helpers {
            match helper.join() {
                Ok(theirs) => done.extend(theirs),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done.sort_unstable_by_key(|(k, _)| *k);
        done.into_iter().flat_map(|(_, results)| results).collect()
    })
}

/// Files read whole with the listing, by (root, path).
type WholeReads = HashMap<FileKey, (FileRef, clankie_model::ReadResult)>;

/// The first read of `session` (`ranges`) cut from its file read whole with the listing, taken
/// out of `whole`: only at the size it was listed at (a file that changed in between is read as
/// usual).
fn whole_read(
    whole: &mut WholeReads,
    session: &SessionFile,
    ranges: &[ByteRange],
) -> Option<Prefetched> {
    let size = session.entry.size;
    let key = (session.entry.root.to_vec(), session.entry.rel.clone());
    let (file, result) = whole.remove(&key)?;
    if result.size != size || result.chunks.len() != 1 || result.chunks[0].len() as u64 != size {
        return None;
    }
    let cut = cut_at(ranges, size);
    let parts = cut
        .iter()
        .map(|r| (0, r.start.min(size) as usize..r.end().min(size) as usize))
        .collect();
    Some(Prefetched {
        file,
        ranges: cut,
        size,
        data: result.chunks,
        parts,
    })
}

/// `ranges` cut where a file of `size` bytes ends.
fn cut_at(ranges: &[ByteRange], size: u64) -> Vec<ByteRange> {
    ranges
        .iter()
        .map(|r| ByteRange::new(r.start, r.len.min(size.saturating_sub(r.start))))
        .collect()
}

/// The cursor says where the file is, so that a `--since` with it finds the file without
/// looking for it (`resolve_for_read`).
fn hint_the_path(page: &mut Page, session: &SessionFile) {
    if let Cursor::Lines(cursor) = &mut page.cursor {
        cursor.hint = Some(PathHint {
            harness: session.harness().name().to_string(),
            rel: session.entry.rel.clone(),
        });
    }
}

/// A read of the chunk after the one being parsed, started before the parse (`--all`).
struct ReadAhead<F> {
    ranges: Vec<ByteRange>,
    read: ReadState<F>,
}

enum ReadState<F> {
    Running(std::pin::Pin<Box<F>>),
    Done(Result<clankie_model::ReadResult, HostError>),
}

impl<F: std::future::Future<Output = Result<clankie_model::ReadResult, HostError>>> ReadAhead<F> {
    /// Polls the read once, which starts it (a local read of a chunk goes to the blocking
    /// pool; a small one may even be done).
    async fn start(read: F, ranges: Vec<ByteRange>) -> ReadAhead<F> {
        let mut read = Box::pin(read);
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(read.as_mut().poll(cx))).await;
        let read = match first {
            std::task::Poll::Ready(result) => ReadState::Done(result),
            std::task::Poll::Pending => ReadState::Running(read),
        };
        ReadAhead { ranges, read }
    }

    async fn result(self) -> Result<clankie_model::ReadResult, HostError> {
        match self.read {
            ReadState::Running(read) => read.await,
            ReadState::Done(result) => result,
        }
    }
}

/// A file's root and path below it: what reads done ahead are kept by.
type FileKey = (Vec<u8>, Vec<u8>);

/// A read done ahead of its plan: the ranges read of a file and what came back.
///
/// The bytes are kept once each: a small file's head and tail are the same bytes (and a file
/// read whole with the listing holds every range), and are copied apart only when the read is
/// served ([`Prefetched::into_result`]), one session at a time: a first `check` keeps reads
/// of thousands of sessions at once, and every byte held at once is fresh memory the kernel
/// zeroes first (docs/performance.md).
#[derive(Debug)]
struct Prefetched {
    file: FileRef,
    ranges: Vec<ByteRange>,
    /// The file's size the read saw.
    size: u64,
    /// The bytes read, each once.
    data: Vec<Vec<u8>>,
    /// For each of `ranges`: which of `data` answers it, and the part of it.
    parts: Vec<(usize, std::ops::Range<usize>)>,
}

impl Prefetched {
    /// A read as the host returned it: one chunk for each range.
    fn of_read(file: FileRef, ranges: Vec<ByteRange>, result: clankie_model::ReadResult) -> Self {
        let parts = result
            .chunks
            .iter()
            .enumerate()
            .map(|(k, chunk)| (k, 0..chunk.len()))
            .collect();
        Prefetched {
            file,
            ranges,
            size: result.size,
            data: result.chunks,
            parts,
        }
    }

    /// The read as the host would return it: each range's bytes, the last range that is all
    /// of a chunk taking it as it is and any other a copy of its part.
    fn into_result(mut self) -> clankie_model::ReadResult {
        let whole = |k: usize, part: &std::ops::Range<usize>| {
            part.start == 0 && self.data.get(k).is_some_and(|d| d.len() == part.end)
        };
        let takers: Vec<Option<usize>> = (0..self.data.len())
            .map(|k| self.parts.iter().rposition(|(j, p)| *j == k && whole(k, p)))
            .collect();
        let mut chunks: Vec<Vec<u8>> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, (k, part))| match takers.get(*k) {
                Some(&Some(taker)) if taker == i => Vec::new(),
                _ => self
                    .data
                    .get(*k)
                    .and_then(|d| d.get(part.clone()))
                    .unwrap_or_default()
                    .to_vec(),
            })
            .collect();
        for (k, taker) in takers.into_iter().enumerate() {
            if let Some(i) = taker {
                chunks[i] = std::mem::take(&mut self.data[k]);
            }
        }
        clankie_model::ReadResult {
            size: self.size,
            chunks,
        }
    }

    /// Whether this answers a read of `wanted` of `file` exactly as the host would now (the
    /// same bytes as a fresh read, give or take what changed since): the same starts, and each
    /// range as long as wanted or cut where the file ended anyway.
    fn answers(&self, file: &FileRef, wanted: &[ByteRange]) -> bool {
        self.file == *file
            && self.ranges.len() == wanted.len()
            && self.ranges.iter().zip(wanted).all(|(got, want)| {
                got.start == want.start
                    && (got.len == want.len || (got.len < want.len && self.size <= got.end()))
            })
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
            streamed_unredacted: false,
            texts_as_json_tokens: false,
        }
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

    /// Lists a host and the sessions in it. Sessions of a database are its rows (the database is
    /// queried, page by page); a database that cannot be read is one line in `listing.unreadable`.
    pub async fn list_sessions(
        &self,
        roots: &[RootSpec],
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let (listing, sessions, _) = self.list_all(roots, None, None).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions`], reading along the whole of the small files the host finds (at most
    /// `max_file` bytes each, [`Host::list_reading`]): kept for [`prefetch_first_reads`], which
    /// serves a session's first read from them when its file is still the size it was listed
    /// at, and batches only the others. For a run that reads every session (a first `check`).
    ///
    /// [`list_sessions`]: Reader::list_sessions
    /// [`prefetch_first_reads`]: Reader::prefetch_first_reads
    pub async fn list_sessions_reading(
        &self,
        roots: &[RootSpec],
        max_file: u64,
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let (listing, sessions, _) = self.list_all(roots, None, Some(max_file)).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions`], keeping the errors of databases that could not be read. With `wanted`
    /// (what a user typed), files named by what they hold are read only if they could be it.
    async fn list_all(
        &self,
        roots: &[RootSpec],
        wanted: Option<&str>,
        read_along: Option<u64>,
    ) -> Result<(Listing, Vec<SessionFile>, Vec<DriverError>), HostError> {
        let mut listing = match read_along {
            Some(max_file) => {
                let (listing, reads) = self.host.list_reading(roots, max_file).await?;
                let mut whole = self.whole.lock().unwrap_or_else(|e| e.into_inner());
                for (file, result) in reads {
                    whole.insert((file.root.clone(), file.rel.clone()), (file, result));
                }
                listing
            }
            None => self.host.list(roots).await?,
        };
        leave_out_non_utf8(&mut listing);
        let sessions = harness::sessions(&listing.files);
        // Files whose session id is written inside them: Gemini's header (a session of its
        // own, renamed) and a subagent naming its parent (listed only from its head). Their
        // first bytes are read in one batch; one that cannot be read keeps its own name.
        let named_inside: Vec<FileEntry> = harness::named_inside(&listing.files)
            .filter(|f| wanted.is_none_or(|id| harness::may_be_named_inside(f, id)))
            .cloned()
            .collect();
        let id_in_head = sessions
            .iter()
            .filter(|s| harness::id_in_head(s))
            .map(|s| &s.entry);
        let mut heads = self.read_heads(id_in_head.chain(&named_inside)).await?;
        let mut sessions =
            harness::adopt_native_ids(sessions, |s| heads.remove(&head_key(&s.entry)));
        for entry in named_inside {
            let head = heads.remove(&head_key(&entry)).unwrap_or_default();
            sessions.extend(harness::session_from_head(&entry, &head));
        }
        let (found, database_ids, errors) = self
            .database_sessions(&mut listing, wanted.is_some(), None)
            .await?;
        sessions.extend(found);
        // A session both in a database and in the file tree it was migrated from is the
        // database's (OpenCode copies the tree into the database and leaves it on disk).
        sessions.retain(|s| {
            harness::source(s) != Source::Tree
                || !database_ids.contains(&(s.harness(), s.id.clone()))
        });
        sessions.sort_by(|a, b| {
            (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel))
        });
        Ok((listing, sessions, errors))
    }

    /// The sessions of the databases `listing` holds, their ids, and the errors of those that
    /// could not be read (each also a line in `listing.unreadable`). `resolving`: for a session
    /// that is read at once, which checks the database after its own query
    /// ([`crate::sqlite::Snapshot::sessions_to_resolve`]).
    async fn database_sessions(
        &self,
        listing: &mut Listing,
        resolving: bool,
        ahead: Option<(&str, usize)>,
    ) -> Result<DatabaseSessions, HostError> {
        let mut sessions = Vec::new();
        let mut errors = Vec::new();
        let databases: Vec<_> = harness::databases(&listing.files).cloned().collect();
        let mut database_ids = std::collections::HashSet::new();
        for db in databases {
            // A database session's size is the database's and its WAL's, where its newest rows
            // may be until a checkpoint.
            let mut wal_name = db.rel.clone();
            wal_name.extend_from_slice(b"-wal");
            let wal_size = listing
                .files
                .iter()
                .find(|f| f.harness == db.harness && f.root == db.root && f.rel == wal_name)
                .map_or(0, |wal| wal.size);
            let found = match self.databases.load(self.host, &db).await {
                Ok(snapshot) if resolving => snapshot
                    .sessions_to_resolve(&db, wal_size, ahead.map(|(id, n)| (id.to_string(), n)))
                    .await
                    .map_err(DriverError::from),
                Ok(snapshot) => snapshot
                    .sessions(&db, wal_size)
                    .await
                    .map_err(DriverError::from),
                Err(e) => Err(e.into()),
            };
            if let Ok(found) = &found {
                database_ids.extend(found.iter().map(|s| (s.harness(), s.id.clone())));
            }
            match found {
                Ok(found) => sessions.extend(found),
                // An unreachable or stalled host fails the listing as it would for files.
                Err(DriverError::Host(e)) if e.is_host_wide() => return Err(e),
                Err(e) => {
                    listing.unreadable.push(LeftOut {
                        harness: db.harness,
                        path: db.full_path(),
                        message: e.to_string(),
                    });
                    errors.push(e);
                }
            }
        }
        Ok((sessions, database_ids, errors))
    }

    /// The first [`NAMING_HEAD_BYTES`] of each of `files`, read in one batch
    /// ([`Host::read_many`]: few round trips). A file that cannot be read is left out; an
    /// unreachable or stalled host fails the listing, as it would for the listing itself.
    ///
    /// [`NAMING_HEAD_BYTES`]: clankie_model::limits::NAMING_HEAD_BYTES
    async fn read_heads<'f>(
        &self,
        files: impl Iterator<Item = &'f FileEntry>,
    ) -> Result<HashMap<HeadKey, Vec<u8>>, HostError> {
        let range = vec![ByteRange::new(0, clankie_model::limits::NAMING_HEAD_BYTES)];
        let reads: Vec<(FileRef, Vec<ByteRange>)> =
            files.map(|f| (file_ref(f), range.clone())).collect();
        if reads.is_empty() {
            return Ok(HashMap::new());
        }
        let results = self.host.read_many(&reads).await?;
        let mut heads = HashMap::with_capacity(reads.len());
        for ((file, _), result) in reads.into_iter().zip(results) {
            match result {
                Ok(result) => {
                    heads.insert((file.root.into(), file.rel), result.chunks.concat());
                }
                Err(e) if e.is_host_wide() => return Err(e),
                Err(_) => {}
            }
        }
        Ok(heads)
    }

    /// Resolves a session argument on a host.
    pub async fn resolve_session(
        &self,
        roots: &[RootSpec],
        query: &SessionQuery,
    ) -> Result<SessionFile, DriverError> {
        let roots: Vec<RootSpec> = match query.harness {
            Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
            None => roots.to_vec(),
        };
        let (listing, sessions, mut db_errors) =
            self.list_all(&roots, Some(&query.id), None).await?;
        match resolve::resolve(&sessions, query) {
            Ok(found) => Ok(found.clone()),
            // The session may be in the database that could not be read: say why.
            Err(ResolveError::NotFound(_)) if !db_errors.is_empty() => Err(db_errors.remove(0)),
            Err(ResolveError::NotFound(id)) => {
                let existing: Vec<String> = listing
                    .roots
                    .iter()
                    .filter(|r| r.exists)
                    .map(|r| String::from_utf8_lossy(&r.dir).into_owned())
                    .collect();
                let mut searched = if existing.is_empty() {
                    "no harness directory exists there".to_string()
                } else {
                    format!("searched {}", existing.join(", "))
                };
                // A root the user gave (`--root`, the hosts file) that is missing is named: it
                // is the likely reason.
                for root in listing.roots.iter().filter(|r| !r.exists) {
                    if roots
                        .iter()
                        .any(|r| r.harness == root.harness && r.dir.is_some())
                    {
                        searched.push_str(&format!(
                            "; no {} root at {}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir)
                        ));
                    }
                }
                Err(DriverError::NotFound {
                    host: self.host.name().to_string(),
                    id,
                    searched,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Resolves a session for a read of `request`, and when it can, reads its first range in
    /// the same round trip ([`Host::find_and_read`]): the files whose path holds the id are
    /// found, and the one among them is read at once. The full listing ([`resolve_session`])
    /// is the fallback whenever that cannot answer alone: no match, several, a session that is
    /// not one file of lines, a subagent id (named inside its file, not by its path), or a
    /// prefix on a host with a database (whose rows the narrowed listing does not open).
    ///
    /// [`resolve_session`]: Reader::resolve_session
    pub async fn resolve_for_read(
        &self,
        roots: &[RootSpec],
        query: &SessionQuery,
        request: &PageRequest,
    ) -> Result<SessionFile, DriverError> {
        // Subagent ids (`PARENT+agent-X`, `agent-X`) are named inside their files.
        if query.id.contains('+')
            || query.id.starts_with("agent-")
            || !clankie_host::is_plain_id(&query.id)
        {
            return self.resolve_session(roots, query).await;
        }
        let scoped: Vec<RootSpec> = match query.harness {
            Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
            None => roots.to_vec(),
        };
        let Some(first) = first_read(&scoped, query, request, self.tail_window) else {
            return self.resolve_session(roots, query).await;
        };
        // A cursor names the file it was made from: the host tries it before looking.
        let hint = match &request.mode {
            Mode::Since(Cursor::Lines(cursor)) => cursor.hint.as_ref(),
            _ => None,
        };
        // When no path holds the id, the databases' loads start from what this call reads of
        // them (their headers and first pages): no round trip of their own.
        let tops: Vec<clankie_host::TopReads> = scoped
            .iter()
            .filter(|r| r.harness.is_sqlite())
            .map(|r| clankie_host::TopReads {
                harness: r.harness,
                ranges: crate::sqlite::first_reads(),
            })
            .collect();
        let began = std::time::Instant::now();
        let mut found = self
            .host
            .find_and_read(&scoped, &query.id, &first, hint, &tops)
            .await?;
        self.seed_databases(began, std::mem::take(&mut found.tops));
        // A session of a database is found by no path: the databases of the narrowed listing
        // are asked first.
        let narrowed = found.read.is_none().then(|| found.listing.clone());
        // Decided in a function of its own, so that the narrowed listing is gone before a
        // fallback lists the whole host (a host may answer with a listing at the bounds).
        if let Some(session) = self.accept_found(found, query, &first) {
            return Ok(session);
        }
        if let Some(listing) = narrowed
            && let Some(session) = self.found_in_databases(listing, query, request).await?
        {
            return Ok(session);
        }
        self.resolve_session(roots, query).await
    }

    /// Hands what a call that began at `began` read of the databases and their WALs (`tops`:
    /// [`crate::sqlite::first_reads`] of each top file listed) to their next loads
    /// ([`crate::sqlite::Databases::seed`]); a WAL not among them was not there.
    fn seed_databases(
        &self,
        began: std::time::Instant,
        mut tops: Vec<(FileEntry, Result<clankie_model::ReadResult, HostError>)>,
    ) {
        let is_wal_of = |wal: &FileEntry, db: &FileEntry| {
            wal.harness == db.harness
                && wal.root == db.root
                && wal.rel.strip_suffix(b"-wal") == Some(&db.rel[..])
        };
        let databases: Vec<FileEntry> =
            harness::databases(&tops.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>())
                .cloned()
                .collect();
        for db in databases {
            let Some(at) = tops.iter().position(|(f, _)| *f == db) else {
                continue;
            };
            let (_, db_read) = tops.swap_remove(at);
            let wal_read = match tops.iter().position(|(f, _)| is_wal_of(f, &db)) {
                Some(at) => tops.swap_remove(at).1,
                None => Err(HostError::NotFound {
                    host: self.host.name().to_string(),
                    path: String::from_utf8_lossy(&db.full_path()).into_owned() + "-wal",
                }),
            };
            if let Ok(db_read) = db_read {
                self.databases
                    .seed(self.host, &db, began, db_read, wal_read);
            }
        }
    }

    /// The session of a database named exactly by `query`, from the databases of the narrowed
    /// listing of [`Host::find_and_read`] (which lists them whole), with no full listing: no
    /// file's path held the id, and an exact id names one session (as a path that holds it
    /// does for [`Reader::accept_found`]). `None` when that does not settle it: no database,
    /// one that could not be read, a prefix, or a session found by its path after all.
    async fn found_in_databases(
        &self,
        mut listing: Listing,
        query: &SessionQuery,
        request: &PageRequest,
    ) -> Result<Option<SessionFile>, HostError> {
        // A tail page reads the session's newest rows next: fetched with the sessions' (see
        // `Snapshot::sessions_to_resolve`).
        let ahead = matches!(request.mode, Mode::Tail).then(|| {
            (
                query.id.as_str(),
                request.limit.clamp(1, clankie_model::limits::MAX_LIMIT),
            )
        });
        leave_out_non_utf8(&mut listing);
        if harness::databases(&listing.files).next().is_none() {
            return Ok(None);
        }
        let (mut sessions, _, errors) = self.database_sessions(&mut listing, true, ahead).await?;
        if !errors.is_empty() {
            return Ok(None);
        }
        sessions.extend(harness::sessions(&listing.files));
        Ok(resolve::resolve(&sessions, query)
            .ok()
            .filter(|s| s.id == query.id && harness::source(s) == Source::Database)
            .cloned())
    }

    /// The session [`resolve_for_read`] found in one call, when that call can answer alone
    /// (see there); its first read is kept for the page.
    ///
    /// [`resolve_for_read`]: Reader::resolve_for_read
    fn accept_found(
        &self,
        found: clankie_host::Found,
        query: &SessionQuery,
        first: &clankie_host::FirstRead,
    ) -> Option<SessionFile> {
        let (entry, read) = found.read?;
        let mut listing = found.listing;
        leave_out_non_utf8(&mut listing);
        let sessions = harness::sessions(&listing.files);
        let has_database = harness::databases(&listing.files).next().is_some();
        let session = resolve::resolve(&sessions, query).ok()?;
        // A session whose id is written inside its file (Gemini's header) is named only by
        // reading its head: the full path does that.
        let alone = !harness::id_in_head(session)
            && harness::source(session) == Source::Lines
            && session.entry.rel == entry.rel
            && session.entry.root == entry.root
            && (session.id == query.id || !has_database);
        if !alone {
            return None;
        }
        // A read that failed is not kept: the plan reads again and meets the error itself.
        if let Ok(result) = read {
            let file = file_ref(&session.entry);
            let ranges = first.ranges(result.size);
            self.prefetch(Prefetched::of_read(file, ranges, result));
        }
        Some(session.clone())
    }

    /// Reads the first range of many sessions in few round trips ([`Host::read_many`]) and
    /// keeps them for their pages: the newest record of each (`check`'s first run, with
    /// `mode` tail), or the start of each. Ranges are cut at the listed size, so that a small
    /// session costs its size in a batch; one that grew since its listing is read again by its
    /// page. Only files of lines are read ahead.
    pub async fn prefetch_first_reads(
        &self,
        sessions: &[(&SessionFile, PageRequest)],
    ) -> Result<(), HostError> {
        let mut reads = Vec::new();
        // Per read: the ranges the plan asks for (cut), and which asked range answers each.
        let mut wanted: Vec<(Vec<ByteRange>, Vec<usize>)> = Vec::new();
        let mut whole = std::mem::take(&mut *self.whole.lock().unwrap_or_else(|e| e.into_inner()));
        for (session, request) in sessions {
            if harness::source(session) != Source::Lines {
                continue;
            }
            let ctx = source_ctx(self.host.name(), session);
            let size = session.entry.size;
            let Some(ranges) = ReadPlan::new(ctx, request.clone(), size).next_read() else {
                continue;
            };
            if let Some(read) = whole_read(&mut whole, session, &ranges) {
                self.prefetch(read);
                continue;
            }
            let cut = cut_at(&ranges, size);
            // A small file's head and tail are the same whole file: asked for once.
            let mut unique: Vec<ByteRange> = Vec::new();
            let which: Vec<usize> = cut
                .iter()
                .map(|r| match unique.iter().position(|u| u == r) {
                    Some(k) => k,
                    None => {
                        unique.push(*r);
                        unique.len() - 1
                    }
                })
                .collect();
            reads.push((file_ref(&session.entry), unique));
            wanted.push((cut, which));
        }
        if reads.is_empty() {
            return Ok(());
        }
        let results = self.host.read_many(&reads).await?;
        for (((file, _), (ranges, which)), result) in reads.into_iter().zip(wanted).zip(results) {
            // A file that could not be read is read again by its page, which reports why.
            // Each range answered by its chunk, copied apart when served.
            if let Ok(result) = result {
                let parts = which
                    .iter()
                    .map(|&k| (k, 0..result.chunks.get(k).map_or(0, Vec::len)))
                    .collect();
                self.prefetch(Prefetched {
                    file,
                    ranges,
                    size: result.size,
                    data: result.chunks,
                    parts,
                });
            }
        }
        Ok(())
    }

    fn prefetch(&self, read: Prefetched) {
        self.prefetched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((read.file.root.clone(), read.file.rel.clone()))
            // Mostly one read a file: no room for four.
            .or_insert_with(|| Vec::with_capacity(1))
            .push(read);
    }

    /// The read done ahead that answers `ranges` of `file`, the first read of a page; every
    /// read kept for `file` is dropped (each serves one page's first read, once).
    fn take_prefetched(
        &self,
        file: &FileRef,
        ranges: &[ByteRange],
    ) -> Option<clankie_model::ReadResult> {
        self.take_answer(file, ranges).map(Prefetched::into_result)
    }

    /// What was read ahead of `file` that answers `ranges`, as it was kept.
    fn take_answer(&self, file: &FileRef, ranges: &[ByteRange]) -> Option<Prefetched> {
        let mut kept = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
        // Whatever else was read ahead of this file is stale from now on: a later page (a
        // follow's poll) reads afresh.
        let of_file = kept.remove(&(file.root.clone(), file.rel.clone()))?;
        of_file.into_iter().find(|p| p.answers(file, ranges))
    }

    /// What `resume` prints for a session: the harness's own command, from the session's directory
    /// as its records (or sidecar file) name it. A sidecar that cannot be read leaves the `cd` out.
    /// `explicit_root`: the session's root was given (`--root`, the hosts file), so the harness
    /// is pointed at it with its own variable; `remote`: how `ssh` reaches the host, when it is
    /// not this machine.
    pub async fn resume_command(
        &self,
        session: &SessionFile,
        explicit_root: bool,
        remote: Option<clankie_engine::resume::Remote>,
    ) -> Result<String, DriverError> {
        use clankie_engine::harness as resume;
        use clankie_engine::resume::{Place, root_variable};
        let harness = session.harness();
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        let root = String::from_utf8_lossy(&session.entry.root).into_owned();
        let is_database = harness::source(session) == Source::Database;
        let env = explicit_root
            .then(|| root_variable(harness, &root, is_database.then_some(path.as_str())))
            .flatten();
        if is_database {
            let snapshot = self.databases.load(self.host, &session.entry).await?;
            let cwd = snapshot.session_cwd(&session.id).await?;
            let place = Place { cwd, env, remote };
            return Ok(resume::resume_line(harness, &session.id, &path, &place));
        }
        let file = FileRef {
            harness,
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let head_range = [ByteRange::new(0, clankie_model::limits::RESUME_HEAD_BYTES)];
        let head = self.host.read(&file, &head_range).await?.chunks.concat();
        let cwd = match resume::cwd_source(harness) {
            None => resume::session_cwd(harness, &head),
            Some(sidecar) => {
                let rel = sidecar_rel(&session.entry.rel, sidecar);
                let sidecar = FileRef {
                    rel,
                    ..file.clone()
                };
                match self.host.read(&sidecar, &head_range).await {
                    Ok(result) => resume::session_cwd(harness, &result.chunks.concat()),
                    Err(_) => None,
                }
            }
        };
        let id = resume::native_id(harness, &head).unwrap_or_else(|| session.id.clone());
        let place = Place { cwd, env, remote };
        Ok(resume::resume_line(harness, &id, &path, &place))
    }

    /// Reads one page of a resolved session, calling `emit` with records as they complete (for
    /// `--all`, which streams). The returned page holds no records that were already emitted.
    pub async fn read_page(
        &self,
        session: &SessionFile,
        request: PageRequest,
        mut emit: impl FnMut(Vec<Record>),
    ) -> Result<Page, DriverError> {
        let ctx = source_ctx(self.host.name(), session);
        if let Mode::Since(cursor) = &request.mode {
            cursor.check_binding(&binding(&ctx.host, ctx.harness.name(), &ctx.session))?;
        }
        let source = harness::source(session);
        if let Mode::Since(cursor) = &request.mode
            && matches!(cursor, Cursor::Rows(_)) != source.is_rows()
        {
            return Err(CursorError::Invalid("cursor class does not match the source").into());
        }
        let stream = matches!(request.mode, Mode::All);
        let file = FileRef {
            harness: session.harness(),
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        if source.is_rows() {
            // Sessions of a database (queried page by page) and whole-document transcripts are
            // read whole and paged over their records, with the row cursor class.
            let rows = if source == Source::Database {
                // Right after the session's resolution, on what it read (one round trip less).
                let snapshot = self.databases.resume(self.host, &session.entry).await?;
                match &request.mode {
                    // The newest rows only, where the harness can (a tail page's cursor is then
                    // anchored at its last record).
                    Mode::Tail => {
                        let limit = request.limit.clamp(1, clankie_model::limits::MAX_LIMIT);
                        snapshot.newest_records(&ctx, limit).await?
                    }
                    // After such a page: the newest rows again, as many as hold the cursor's
                    // records and a page after them; all rows when it is stale (the page
                    // starts again at the beginning).
                    Mode::Since(Cursor::Rows(cursor)) if cursor.anchored => {
                        let limit = request.limit.clamp(1, clankie_model::limits::MAX_LIMIT);
                        let hashed = cursor.position.min(u64::from(u32::MAX)) as usize;
                        let mut wanted = limit.saturating_add(hashed);
                        loop {
                            let rows = snapshot.newest_records(&ctx, wanted).await?;
                            match clankie_engine::rows::anchored_fit(&rows, cursor) {
                                _ if !rows.older_omitted => break rows,
                                Some(true) => break rows,
                                Some(false) => break snapshot.records(&ctx).await?,
                                None => wanted = wanted.saturating_mul(4),
                            }
                        }
                    }
                    _ => snapshot.records(&ctx).await?,
                }
            } else if source == Source::Tree {
                self.tree_records(session, &ctx, &path).await?
            } else {
                let bytes = fetch_whole(self.host, &file, session.entry.size, &path).await?;
                match harness::parse_document(&ctx, &bytes, self.terminal_size) {
                    Ok(rows) => rows,
                    // Caught in the middle of an in-place rewrite (Gemini's legacy `.json`):
                    // nothing complete to return yet, like a line still being written.
                    Err(_)
                        if !request.strict && harness::document_incomplete(ctx.harness, &bytes) =>
                    {
                        return Ok(pending_document(&ctx, &request));
                    }
                    Err(reason) => {
                        return Err(DriverError::Source {
                            path: path.clone(),
                            reason,
                        });
                    }
                }
            };
            // Every record of a streamed page is emitted: unredacted when the caller redacts.
            let rows_request = PageRequest {
                redact: request.redact && !(stream && self.streamed_unredacted),
                ..request.clone()
            };
            let mut page =
                clankie_engine::rows::page(&ctx, rows, &rows_request).map_err(|source| {
                    DriverError::Plan {
                        path: path.clone(),
                        source,
                    }
                })?;
            if stream && !page.records.is_empty() {
                emit(std::mem::take(&mut page.records));
            }
            return Ok(page);
        }
        // A compressed transcript (Codex after 7 days) is fetched whole and decompressed here; the
        // plan then reads the decompressed stream, so offsets and cursors refer to it.
        let decompressed = if source == Source::ZstdLines {
            Some(fetch_decompressed(self.host, &file, session.entry.size, &path).await?)
        } else {
            None
        };
        let size_hint = decompressed
            .as_ref()
            .map_or(session.entry.size, |d| d.len() as u64);
        // The batches `--all` streams go out unredacted when the caller redacts them (the CLI,
        // on the thread that writes them); the page's own records are redacted at its end.
        let redact_aside = stream && request.redact && self.streamed_unredacted;
        let request = PageRequest {
            redact: request.redact && !redact_aside,
            ..request
        };
        // `--all` parses each chunk's lines ahead of the plan on every core (the plan is
        // sequential: repeated ids, the page's bounds), with the context the plan gets.
        let mut parse_ahead =
            stream.then(|| parse_ahead::ParseAhead::new(ctx.clone(), !self.texts_as_json_tokens));
        let mut plan = ReadPlan::new(ctx, request, size_hint);
        if let Some(bytes) = self.tail_window {
            plan = plan.with_tail_window(bytes);
        }
        let mut first_read = true;
        // `--all` reads the next chunk (on the runtime's blocking pool, for a local file)
        // while this one is parsed.
        let mut read_ahead: Option<ReadAhead<_>> = None;
        while let Some(ranges) = plan.next_read() {
            let ahead = match first_read && decompressed.is_none() {
                true => self.take_prefetched(&file, &ranges),
                false => None,
            };
            first_read = false;
            let result = match (&decompressed, ahead, read_ahead.take()) {
                (Some(data), ..) => serve_from_memory(data, &ranges),
                (None, Some(result), _) => result,
                (None, None, Some(guessed)) if guessed.ranges == ranges => guessed.result().await?,
                (None, None, guessed) => {
                    // A read started ahead that the plan no longer wants runs to its end
                    // rather than being cancelled halfway.
                    if let Some(guessed) = guessed {
                        let _ = guessed.result().await;
                    }
                    self.host.read(&file, &ranges).await?
                }
            };
            if stream
                && decompressed.is_none()
                && let Some(next) = plan.read_after_next(result.size)
            {
                let (host, file, ranges) = (self.host, &file, next.clone());
                let read = async move { host.read(file, &ranges).await };
                read_ahead = Some(ReadAhead::start(read, next).await);
            }
            let mut result = result;
            if let Some(parse_ahead) = &mut parse_ahead
                && plan.reads_forward()
                && let (Some(range), Some(chunk)) = (ranges.first(), result.chunks.first_mut())
            {
                let (back, parsed) = parse_ahead.parse(range.start, std::mem::take(chunk));
                *chunk = back;
                plan.parsed_ahead(parsed);
            }
            plan.feed(result.chunks, result.size)
                .map_err(|source| DriverError::Plan {
                    path: path.clone(),
                    source,
                })?;
            if stream {
                let records = plan.take_records();
                if !records.is_empty() {
                    emit(records);
                }
            }
        }
        if let Some(guessed) = read_ahead.take() {
            let _ = guessed.result().await;
        }
        *self
            .last_tail_bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = plan.tail_page_bytes();
        let mut page = plan.finish();
        if redact_aside {
            clankie_engine::redact::redact_records(&mut page.records);
        }
        hint_the_path(&mut page, session);
        Ok(page)
    }

    /// The read of a tail page of a file of lines when it is in hand (read along with the
    /// listing, [`Reader::list_sessions_reading`]): taken out of what was read ahead, with the
    /// plan it answers, for [`InHand::page`] to page on any thread. `None` for any other page
    /// or source, or when nothing read ahead answers the plan's first read (the page is then
    /// read the usual way, [`Reader::read_page`]).
    pub fn take_in_hand<'s>(
        &self,
        session: &'s SessionFile,
        request: &PageRequest,
    ) -> Option<InHand<'s>> {
        if !matches!(request.mode, Mode::Tail) || harness::source(session) != Source::Lines {
            return None;
        }
        let ctx = source_ctx(self.host.name(), session);
        let mut plan = ReadPlan::new(ctx, request.clone(), session.entry.size);
        if let Some(bytes) = self.tail_window {
            plan = plan.with_tail_window(bytes);
        }
        let ranges = plan.next_read()?;
        let file = FileRef {
            harness: session.harness(),
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let whole = whole_read(
            &mut self.whole.lock().unwrap_or_else(|e| e.into_inner()),
            session,
            &ranges,
        );
        let read = whole.or_else(|| self.take_answer(&file, &ranges))?;
        Some(InHand {
            plan,
            read,
            session,
        })
    }

    /// The records of a session that is several files of a tree (OpenCode before 1.2): its
    /// root is listed again, so that a follow sees the messages and parts written since, and
    /// each of its files is read whole (at most the 64 MiB source bound in all). A file gone
    /// between the listing and its read is left out, as if listed a moment later.
    async fn tree_records(
        &self,
        session: &SessionFile,
        ctx: &SourceCtx,
        path: &str,
    ) -> Result<clankie_engine::rows::RowRecords, DriverError> {
        use clankie_model::limits::MAX_SOURCE_BYTES;
        let root = RootSpec {
            harness: session.harness(),
            dir: Some(session.entry.root.to_vec()),
        };
        let listing = self.host.list(&[root]).await?;
        let mut files = Vec::new();
        let mut total = 0u64;
        for entry in harness::tree_files(&listing.files, session) {
            total += entry.size;
            if total > MAX_SOURCE_BYTES {
                return Err(DriverError::Source {
                    path: path.to_string(),
                    reason: format!(
                        "the session's files are over the {} MiB bound of one read",
                        MAX_SOURCE_BYTES >> 20
                    ),
                });
            }
            let entry_path = String::from_utf8_lossy(&entry.full_path()).into_owned();
            match fetch_whole(self.host, &file_ref(entry), entry.size, &entry_path).await {
                Ok(bytes) => files.push((entry, bytes)),
                Err(DriverError::Host(HostError::NotFound { .. })) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(harness::parse_tree(ctx, &files))
    }

    /// Reads pages until one says no complete record follows (`more` false): `first`, then pages
    /// of [`MAX_LIMIT`] records from each page's cursor, with `first`'s `strict` and `redact`.
    /// `on_page` sees each page, records streamed by `--all` included, and may take its records;
    /// an error it returns ends the loop. Returns the last page's cursor.
    pub async fn read_to_end<E: From<DriverError>>(
        &self,
        session: &SessionFile,
        first: PageRequest,
        on_page: impl FnMut(&mut Page) -> Result<(), E>,
    ) -> Result<Cursor, E> {
        self.read_to_end_from(session, first, None, on_page).await
    }

    /// [`Reader::read_to_end`] whose first page is `in_hand` when given (paged already from
    /// what was read ahead, [`InHand::page`]): only the pages after it are read.
    pub async fn read_to_end_from<E: From<DriverError>>(
        &self,
        session: &SessionFile,
        first: PageRequest,
        mut in_hand: Option<Page>,
        mut on_page: impl FnMut(&mut Page) -> Result<(), E>,
    ) -> Result<Cursor, E> {
        let (strict, redact) = (first.strict, first.redact);
        let mut request = first;
        loop {
            let mut streamed = Vec::new();
            let mut page = match in_hand.take() {
                Some(page) => page,
                None => {
                    self.read_page(session, request, |records| streamed.extend(records))
                        .await?
                }
            };
            if !streamed.is_empty() {
                // Handed over unredacted for a caller that redacts them: this one is that
                // caller here.
                if self.streamed_unredacted && redact {
                    clankie_engine::redact::redact_records(&mut streamed);
                }
                streamed.append(&mut page.records);
                page.records = streamed;
            }
            on_page(&mut page)?;
            if !page.more {
                return Ok(page.cursor);
            }
            request = PageRequest {
                mode: Mode::Since(page.cursor),
                limit: MAX_LIMIT,
                strict,
                redact,
            };
        }
    }
}

/// The first read of `request` before the session (and its size) is known: the tail's ranges
/// counted from the end, or the plan's first ranges when they do not depend on the size (a
/// cursor's, a head's). `None` when a row cursor is given (only databases take one).
fn first_read(
    roots: &[RootSpec],
    query: &SessionQuery,
    request: &PageRequest,
    tail_window: Option<u64>,
) -> Option<clankie_host::FirstRead> {
    use clankie_engine::cursor::HEAD_BYTES;
    use clankie_model::limits::FIRST_CHUNK_BYTES;
    match &request.mode {
        // As the page's plan will ask ([`Reader::with_tail_window`]).
        Mode::Tail => Some(clankie_host::FirstRead::Tail {
            head: HEAD_BYTES,
            back: tail_window.map_or(FIRST_CHUNK_BYTES, clankie_engine::plan::tail_window),
            ahead: FIRST_CHUNK_BYTES,
        }),
        Mode::Since(Cursor::Rows(_)) => None,
        Mode::Since(Cursor::Lines(_)) | Mode::Head | Mode::All => {
            // The plan's first ranges here depend on the request alone; which harness and
            // session the context names does not change them (the page checks the binding).
            let harness = query.harness.or_else(|| roots.first().map(|r| r.harness))?;
            let ctx = SourceCtx {
                host: String::new(),
                harness,
                session: query.id.clone(),
                agent: None,
            };
            ReadPlan::new(ctx, request.clone(), 0)
                .next_read()
                .map(clankie_host::FirstRead::Ranges)
        }
    }
}

/// The sessions of a listing's databases, their ids, and the errors of those not read.
type DatabaseSessions = (
    Vec<SessionFile>,
    std::collections::HashSet<(Harness, String)>,
    Vec<DriverError>,
);

/// Leaves out the files whose path below the root is not UTF-8, with one line per directory
/// in `listing.unreadable`: session ids and the harnesses' path rules are text, and a lossy
/// name would address another file. Hosts list every name exactly; this is the one place, for
/// every host, where such names are dropped, and never unseen.
fn leave_out_non_utf8(listing: &mut Listing) {
    use std::collections::BTreeMap;
    /// The directory a line names: harness, root, its path below the root.
    type Named = (Harness, std::sync::Arc<[u8]>, Vec<u8>);
    // -> (whether the directory's own name is the cause, files left out)
    let mut dirs: BTreeMap<Named, (bool, usize)> = BTreeMap::new();
    listing.files.retain(|file| {
        if std::str::from_utf8(&file.rel).is_ok() {
            return true;
        }
        // The first component that is not UTF-8: a directory (named itself), or the file name
        // (its directory is named).
        let components: Vec<&[u8]> = file.rel.split(|&b| b == b'/').collect();
        let bad = components
            .iter()
            .position(|c| std::str::from_utf8(c).is_err())
            .unwrap_or(components.len() - 1);
        let is_dir = bad + 1 < components.len();
        let upto = if is_dir { bad + 1 } else { bad };
        let dir = components[..upto].join(&b'/');
        dirs.entry((file.harness, file.root.clone(), dir))
            .or_insert((is_dir, 0))
            .1 += 1;
        false
    });
    for ((harness, root, rel), (is_dir, count)) in dirs {
        let path = if rel.is_empty() {
            root.to_vec()
        } else {
            clankie_model::FileEntry {
                harness,
                root,
                rel,
                size: 0,
                mtime: 0,
            }
            .full_path()
        };
        let shown = clankie_model::display_path(&path);
        let message = if is_dir {
            format!("{shown}: directory name is not UTF-8; its sessions are left out")
        } else if count == 1 {
            format!("{shown}: a file name here is not UTF-8; its session is left out")
        } else {
            format!("{shown}: {count} file names here are not UTF-8; their sessions are left out")
        };
        listing.unreadable.push(LeftOut {
            harness,
            path,
            message,
        });
    }
}

/// The path of a sidecar file (`summary.json`, `../x`) relative to the directory of the
/// transcript at `rel`.
fn sidecar_rel(rel: &[u8], sidecar: &str) -> Vec<u8> {
    let dir = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => &rel[..i],
        None => &b""[..],
    };
    let mut out = dir.to_vec();
    for part in sidecar.split('/') {
        if part == ".." {
            let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
            out.truncate(cut);
        } else {
            out.push(b'/');
            out.extend_from_slice(part.as_bytes());
        }
    }
    out
}

/// The host's name for a listed file.
/// A listed file, as [`Reader::read_heads`] keys what it read.
type HeadKey = (std::sync::Arc<[u8]>, Vec<u8>);

fn head_key(entry: &FileEntry) -> HeadKey {
    (entry.root.clone(), entry.rel.clone())
}

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

/// Reads a whole compressed file (at most the 64 MiB source bound) and decompresses it (the
/// same bound on the output).
async fn fetch_decompressed<H: Host>(
    host: &H,
    file: &FileRef,
    size_hint: u64,
    path: &str,
) -> Result<Vec<u8>, DriverError> {
    use clankie_model::limits::MAX_SOURCE_BYTES;
    let compressed = fetch_whole(host, file, size_hint, path).await?;
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&compressed[..]).map_err(|e| {
        DriverError::Source {
            path: path.to_string(),
            reason: format!("not a zstd stream: {e}"),
        }
    })?;
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&mut decoder, MAX_SOURCE_BYTES + 1),
        &mut out,
    )
    .map_err(|e| DriverError::Source {
        path: path.to_string(),
        reason: format!("corrupt zstd stream: {e}"),
    })?;
    if out.len() as u64 > MAX_SOURCE_BYTES {
        return Err(DriverError::Source {
            path: path.to_string(),
            reason: format!(
                "the decompressed transcript is over the {} MiB bound of one read",
                MAX_SOURCE_BYTES >> 20
            ),
        });
    }
    Ok(out)
}

/// The page of a whole document caught mid-rewrite: no records and `pending_tail`; a `--since`
/// read keeps its cursor, so the next poll continues where it stood.
fn pending_document(ctx: &SourceCtx, request: &PageRequest) -> Page {
    let page = |cursor: Cursor, older: bool| Page {
        records: Vec::new(),
        cursor,
        older,
        more: false,
        pending_tail: true,
        reset: false,
        warnings: Vec::new(),
        screen: Vec::new(),
    };
    match &request.mode {
        Mode::Since(cursor) => page(cursor.clone(), true),
        _ => {
            let empty = clankie_engine::rows::RowRecords {
                pending: true,
                ..Default::default()
            };
            let head = PageRequest {
                mode: Mode::Head,
                ..request.clone()
            };
            let mut p = clankie_engine::rows::page(ctx, empty, &head)
                .expect("a head page of no records has no stale cursor and no malformed row");
            p.pending_tail = true;
            p
        }
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

/// Answers a read request from bytes in memory, as a host would.
fn serve_from_memory(data: &[u8], ranges: &[ByteRange]) -> clankie_model::ReadResult {
    let size = data.len() as u64;
    let chunks = ranges
        .iter()
        .map(|r| data[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
        .collect();
    clankie_model::ReadResult { size, chunks }
}

#[cfg(test)]
mod tests {
    use super::testing::{SHORT, all_ids, block_on, claude_path, dropped, prompts, resolve};
    use super::*;
    use clankie_host::memory::MemoryHost;

    const ID: &str = "55604662-cf2a-4331-851a-ec234028f8ca";

    /// Work spread over the cores comes back whole and in the items' order, whatever the
    /// number of items (none, fewer than a thread takes, not a multiple of the parts), and it
    /// runs on more than one thread where there are several cores and enough items: the item
    /// 0 waits (5 s at most) until another thread has done an item.
    #[test]
    fn work_on_every_core_comes_back_in_order() {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        for n in [0, 1, 255, 256, 513, 10_001] {
            let items: Vec<usize> = (0..n).collect();
            let spread = n >= 512 && cores > 1;
            let seen = std::sync::Mutex::new(std::collections::HashSet::new());
            let done = on_every_core(items, |k| {
                let here = std::thread::current().id();
                seen.lock().unwrap().insert(here);
                let waited = std::time::Instant::now();
                while k == 0
                    && spread
                    && seen.lock().unwrap().len() < 2
                    && waited.elapsed() < std::time::Duration::from_secs(5)
                {
                    std::thread::yield_now();
                }
                (k * 3, here)
            });
            let values: Vec<usize> = done.iter().map(|(v, _)| *v).collect();
            assert_eq!(values, (0..n).map(|k| k * 3).collect::<Vec<_>>(), "{n}");
            let threads: std::collections::HashSet<_> = done.iter().map(|(_, t)| *t).collect();
            assert_eq!(
                threads.len() > 1,
                spread,
                "{n} items on {} threads",
                threads.len()
            );
        }
    }

    /// A tail page in hand (read ahead) is the page a read of the host gives, cursor and all;
    /// one not in hand is not taken, and one whose file moved on wants the host.
    #[test]
    fn a_tail_page_in_hand_is_the_page_the_host_gives() {
        let host = long_session();
        let reader = Reader::new(&host);
        let session = block_on(resolve(&host, ID));
        let request = PageRequest {
            mode: Mode::Tail,
            limit: 1,
            strict: false,
            redact: true,
        };
        let from_host = block_on(reader.read_page(&session, request.clone(), |_| {})).unwrap();
        assert!(reader.take_in_hand(&session, &request).is_none());
        block_on(reader.prefetch_first_reads(&[(&session, request.clone())])).unwrap();
        let hand = reader.take_in_hand(&session, &request).expect("read ahead");
        let page = hand.page().expect("all in hand").unwrap();
        assert_eq!(page.records, from_host.records);
        assert_eq!(page.cursor, from_host.cursor);
        assert!(
            reader.take_in_hand(&session, &request).is_none(),
            "served once"
        );
        let head = PageRequest {
            mode: Mode::Head,
            ..request.clone()
        };
        block_on(reader.prefetch_first_reads(&[(&session, head.clone())])).unwrap();
        assert!(reader.take_in_hand(&session, &head).is_none(), "tails only");
        // The file grew after it was listed and before it was read ahead: nothing in hand
        // gives its page (the read ahead is dropped, or its plan wants the host).
        host.append(claude_path(&host, ID), prompts(3));
        block_on(reader.prefetch_first_reads(&[(&session, request.clone())])).unwrap();
        let hand = reader.take_in_hand(&session, &request);
        assert!(hand.is_none_or(|hand| hand.page().is_none()));
    }

    /// A file the listing read whole is a tail page in hand, the page the host gives; at
    /// another size than it was listed at it is not (and is not kept for a later page).
    #[test]
    fn a_file_read_whole_with_the_listing_is_a_tail_page_in_hand() {
        let host = long_session();
        let reader = Reader::new(&host);
        let session = block_on(resolve(&host, ID));
        let request = PageRequest {
            mode: Mode::Tail,
            limit: 1,
            strict: false,
            redact: true,
        };
        let from_host = block_on(reader.read_page(&session, request.clone(), |_| {})).unwrap();
        let file = file_ref(&session.entry);
        let bytes = fs_bytes(&host, &session);
        let read_whole = |size: u64| {
            let result = clankie_model::ReadResult {
                size,
                chunks: vec![bytes.clone()],
            };
            let key = (file.root.clone(), file.rel.clone());
            reader
                .whole
                .lock()
                .unwrap()
                .insert(key, (file.clone(), result));
        };
        read_whole(session.entry.size);
        let page = reader
            .take_in_hand(&session, &request)
            .expect("read whole")
            .page()
            .expect("all in hand")
            .unwrap();
        assert_eq!(page.records, from_host.records);
        assert_eq!(page.cursor, from_host.cursor);
        assert!(reader.whole.lock().unwrap().is_empty(), "taken");
        read_whole(session.entry.size + 1);
        assert!(reader.take_in_hand(&session, &request).is_none());
        assert!(reader.whole.lock().unwrap().is_empty(), "dropped");
    }

    /// The bytes of a session's file on a memory host.
    fn fs_bytes(host: &MemoryHost, session: &SessionFile) -> Vec<u8> {
        let file = file_ref(&session.entry);
        let range = [ByteRange::new(0, session.entry.size)];
        block_on(host.read(&file, &range)).unwrap().chunks.concat()
    }

    /// [`SHORT`] (10 records) and 450 prompts after it.
    fn long_session() -> MemoryHost {
        let host = MemoryHost::new("mem");
        host.put(
            claude_path(&host, ID),
            [SHORT.to_string(), prompts(450)].concat(),
        );
        host
    }

    fn request(mode: Mode, limit: usize) -> PageRequest {
        PageRequest {
            mode,
            limit,
            strict: false,
            redact: true,
        }
    }

    /// `--all` reads the next chunk while it parses this one (`read_page`'s read ahead), and
    /// parses each chunk's lines on every core before the plan takes them: it gives exactly
    /// the records, redacted alike, that a plan fed one read after the other gives (chunks of
    /// 4 MiB, thousands of lines: two threads on a machine of two cores or more). On a session of several chunks made of every Claude
    /// fixture's lines (each copy under ids of its own), with secrets in texts, tool inputs
    /// and outputs, and on each fixture alone.
    #[test]
    fn all_streams_the_records_of_a_plan_fed_in_turn() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/claude/projects/-fixtures"
        );
        let mut fixtures: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        fixtures.sort();
        let secrets = [
            r#"{"type":"user","uuid":"sU","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx0123 and PASSWORD=hunter2 \"quoted\" \u001b[31m"}}"#,
            r#"{"type":"assistant","uuid":"sA","timestamp":"2026-11-02T10:00:00.000Z","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -H 'Authorization: Bearer abc.def.ghi' https://u:p4ss@x.io","api_key":"AKIAIOSFODNN7EXAMPLE"}}]}}"#,
            r#"{"type":"user","uuid":"sR","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"GITHUB_TOKEN=ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5\nok"}]}}"#,
        ];
        let mut big = String::new();
        let mut copy = 0;
        while big.len() < 6 << 20 {
            copy += 1;
            for line in fixtures.iter().flat_map(|f| f.lines()).chain(secrets) {
                // A read keeps the first record of an id: each copy's ids are its own.
                big.push_str(&line.replace("\"uuid\":\"", &format!("\"uuid\":\"{copy}-")));
                big.push('\n');
            }
        }
        let mut sessions = vec![big];
        sessions.extend(fixtures);
        for (n, text) in sessions.into_iter().enumerate() {
            block_on(async {
                let host = MemoryHost::new("mem");
                host.put(claude_path(&host, ID), text.clone());
                let session = resolve(&host, "556046").await;
                let request = request(Mode::All, MAX_LIMIT);
                let mut streamed = Vec::new();
                let page = Reader::new(&host)
                    .read_page(&session, request.clone(), |records| {
                        streamed.extend(records)
                    })
                    .await
                    .unwrap();
                streamed.extend(page.records);

                let ctx = source_ctx(host.name(), &session);
                let mut plan = ReadPlan::new(ctx, request, text.len() as u64);
                let mut serial = Vec::new();
                let mut reads = 0;
                while let Some(ranges) = plan.next_read() {
                    let file = FileRef {
                        harness: session.harness(),
                        root: session.entry.root.to_vec(),
                        rel: session.entry.rel.clone(),
                    };
                    let result = host.read(&file, &ranges).await.unwrap();
                    plan.feed(result.chunks, result.size).unwrap();
                    serial.extend(plan.take_records());
                    reads += 1;
                }
                serial.extend(plan.finish().records);
                assert_eq!(streamed, serial, "session {n}");
                if n == 0 {
                    assert!(reads >= 4, "{reads} reads");
                    let text: String = serial.iter().map(|r| format!("{r:?}")).collect();
                    assert!(text.contains("[REDACTED:openai]"), "secrets redacted");
                    assert!(!text.contains("hunter2") && !text.contains("AKIAIOSFODNN7EXAMPLE"));
                }
            });
        }
    }

    /// `--all` that fails halfway (a malformed line under `--strict`, in its fourth chunk)
    /// has streamed every record before the failure, redacted, as a plan fed one read after
    /// the other does: the chunk whose redaction was still under way when the next chunk
    /// failed is not lost.
    /// A session of the 20,000 lines `line` makes, over 2 MiB: `--all` reads it in several
    /// chunks, and parses most of them ahead.
    fn twenty_thousand_lines(line: impl Fn(usize) -> String) -> String {
        let text: String = (0..20_000).map(|n| line(n) + "\n").collect();
        assert!(text.len() > 2 << 20);
        text
    }

    /// `with_streamed_batches_unredacted`: `read_page`'s streamed batches come unredacted (the
    /// caller redacts them), `read_to_end` still hands on redacted pages, and without the
    /// setting the batches are redacted.
    #[test]
    fn streamed_batches_unredacted_only_where_the_caller_redacts_them() {
        let key = "ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5fG7h";
        let text = twenty_thousand_lines(|n| {
            format!(
                r#"{{"type":"user","uuid":"s{n}","timestamp":"2026-11-02T10:00:00.000Z","message":{{"role":"user","content":"prompt {n} GITHUB_TOKEN={key}"}}}}"#
            )
        });
        block_on(async {
            let host = MemoryHost::new("mem");
            host.put(claude_path(&host, ID), text.clone());
            let session = resolve(&host, "556046").await;
            let texts = |records: &[Record]| format!("{records:?}");
            for caller_redacts in [false, true] {
                let mut reader = Reader::new(&host);
                if caller_redacts {
                    reader = reader.with_streamed_batches_unredacted();
                }
                let mut streamed = Vec::new();
                let page = reader
                    .read_page(&session, request(Mode::All, MAX_LIMIT), |records| {
                        streamed.extend(records)
                    })
                    .await
                    .unwrap();
                assert_eq!(streamed.len() + page.records.len(), 20_000);
                assert_eq!(texts(&streamed).contains(key), caller_redacts);
                assert!(!texts(&page.records).contains(key));
                let mut collected = Vec::new();
                reader
                    .read_to_end(&session, request(Mode::All, MAX_LIMIT), |page| {
                        collected.append(&mut page.records);
                        Ok::<(), DriverError>(())
                    })
                    .await
                    .unwrap();
                assert_eq!(collected.len(), 20_000);
                assert!(!texts(&collected).contains(key));
            }
        });
    }

    /// `--all`'s tool results, kept as their JSON token by the parse, stay tokens for a caller
    /// that writes JSON and are unescaped on the parsing threads for any other; the texts are
    /// the same either way.
    #[test]
    fn streamed_texts_stay_json_tokens_only_for_a_caller_that_writes_json() {
        let text = twenty_thousand_lines(|n| {
            format!(
                r#"{{"type":"user","uuid":"r{n}","timestamp":"2026-11-02T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"line {n}\n\"quoted\""}}]}}}}"#
            )
        });
        block_on(async {
            let host = MemoryHost::new("mem");
            host.put(claude_path(&host, ID), text.clone());
            let session = resolve(&host, "556046").await;
            let mut outputs = Vec::new();
            for as_tokens in [false, true] {
                let mut reader = Reader::new(&host);
                if as_tokens {
                    reader = reader.with_texts_as_json_tokens();
                }
                let mut streamed = Vec::new();
                reader
                    .read_page(&session, request(Mode::All, MAX_LIMIT), |records| {
                        streamed.extend(records)
                    })
                    .await
                    .unwrap();
                let tokens = streamed
                    .iter()
                    .filter(|r| match &r.body {
                        clankie_model::RecordBody::ToolResult { output, .. } => {
                            output.json_token().is_some()
                        }
                        _ => false,
                    })
                    .count();
                // Nearly every line is parsed ahead; the plan parses the few left (the line a
                // chunk starts inside), which keep their token either way.
                match as_tokens {
                    true => assert!(tokens > 19_000, "{tokens}"),
                    false => assert!(tokens < 20, "{tokens}"),
                }
                assert_eq!(streamed.len(), 20_000);
                outputs.push(streamed);
            }
            assert_eq!(outputs[0], outputs[1]);
            assert!(
                matches!(&outputs[0][7].body, clankie_model::RecordBody::ToolResult { output, .. } if output == "line 7\n\"quoted\"")
            );
        });
    }

    #[test]
    fn all_that_fails_halfway_streams_the_records_before_the_failure() {
        let secret = r#"{"type":"user","uuid":"sN","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"GITHUB_TOKEN=ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5fG7h"}}"#;
        let plain = r#"{"type":"user","uuid":"sN","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"a prompt with nothing secret in it, long enough to fill the chunks quickly"}}"#;
        let mut text = String::new();
        let (mut n, mut broken) = (0, false);
        while text.len() < 3 << 20 {
            if text.len() > 2 << 20 && !broken {
                text.push_str("{broken\n");
                broken = true;
            }
            n += 1;
            let line = if n % 50 == 0 { secret } else { plain };
            text.push_str(&line.replace("\"sN\"", &format!("\"s{n}\"")));
            text.push('\n');
        }
        block_on(async {
            let host = MemoryHost::new("mem");
            host.put(claude_path(&host, ID), text.clone());
            let session = resolve(&host, "556046").await;
            let request = PageRequest {
                strict: true,
                ..request(Mode::All, MAX_LIMIT)
            };
            let mut streamed = Vec::new();
            let result = Reader::new(&host)
                .read_page(&session, request.clone(), |records| {
                    streamed.extend(records)
                })
                .await;
            assert!(
                matches!(result, Err(DriverError::Plan { .. })),
                "{result:?}"
            );

            let ctx = source_ctx(host.name(), &session);
            let mut plan = ReadPlan::new(ctx, request, text.len() as u64);
            let mut serial = Vec::new();
            let mut reads = 0;
            while let Some(ranges) = plan.next_read() {
                let file = FileRef {
                    harness: session.harness(),
                    root: session.entry.root.to_vec(),
                    rel: session.entry.rel.clone(),
                };
                let result = host.read(&file, &ranges).await.unwrap();
                reads += 1;
                if plan.feed(result.chunks, result.size).is_err() {
                    break;
                }
                serial.extend(plan.take_records());
            }
            assert_eq!(reads, 4);
            assert!(serial.len() > 1000, "{}", serial.len());
            assert_eq!(streamed, serial);
            let shown: String = streamed.iter().map(|r| format!("{r:?}")).collect();
            assert!(shown.contains("[REDACTED:") && !shown.contains("ghp_aB3"));
        });
    }

    #[test]
    fn read_to_end_pages_until_no_record_follows() {
        block_on(async {
            let host = long_session();
            let session = resolve(&host, "556046").await;
            let mut pages = Vec::new();
            let mut ids = Vec::new();
            let cursor = Reader::new(&host)
                .read_to_end(&session, request(Mode::Head, 50), |page| {
                    pages.push((page.records.len(), page.more));
                    ids.extend(page.records.iter().map(|r| r.id.clone()));
                    Ok::<(), DriverError>(())
                })
                .await
                .unwrap();
            // The first page as asked, then pages of MAX_LIMIT.
            assert_eq!(pages, [(50, true), (200, true), (200, true), (10, false)]);
            assert_eq!(ids, all_ids(&host, &session).await);
            let rest = Reader::new(&host)
                .read_page(&session, request(Mode::Since(cursor), 50), |_| {})
                .await
                .unwrap();
            assert!(rest.records.is_empty() && !rest.more);
        });
    }

    #[test]
    fn read_to_end_hands_on_the_records_all_streams() {
        block_on(async {
            let host = long_session();
            let session = resolve(&host, ID).await;
            let mut ids = Vec::new();
            Reader::new(&host)
                .read_to_end(&session, request(Mode::All, 1), |page| {
                    ids.extend(page.records.iter().map(|r| r.id.clone()));
                    Ok::<(), DriverError>(())
                })
                .await
                .unwrap();
            assert_eq!(ids.len(), 460);
            assert_eq!(ids, all_ids(&host, &session).await);
        });
    }

    #[test]
    fn read_to_end_stops_at_an_error() {
        block_on(async {
            let host = long_session();
            let session = resolve(&host, ID).await;
            let mut pages = 0;
            let result = Reader::new(&host)
                .read_to_end(&session, request(Mode::Head, 50), |_| {
                    pages += 1;
                    Err(DriverError::Source {
                        path: "p".into(),
                        reason: "stop here".into(),
                    })
                })
                .await;
            assert!(matches!(result, Err(DriverError::Source { .. })));
            assert_eq!(pages, 1);

            host.fail_next(1, dropped(&host));
            let result = Reader::new(&host)
                .read_to_end(&session, request(Mode::Head, 50), |_| {
                    Ok::<(), DriverError>(())
                })
                .await;
            assert!(matches!(
                result,
                Err(DriverError::Host(HostError::Unreachable { .. }))
            ));
        });
    }

    #[test]
    fn names_that_are_not_utf8_are_left_out_with_one_line_per_directory() {
        block_on(async {
            let host = long_session();
            let projects = {
                let mut p = host.default_root(clankie_engine::harness::by_name("claude").unwrap());
                p.extend_from_slice(b"/projects/");
                p
            };
            for rel in [
                &b"-caf\xe9/0dd00000-0000-4000-8000-000000000001.jsonl"[..],
                b"-caf\xe9/0dd00000-0000-4000-8000-000000000002.jsonl",
                b"-ok/bad\xff.jsonl",
            ] {
                host.put([&projects[..], rel].concat(), SHORT);
            }
            let (listing, sessions) = Reader::new(&host)
                .list_sessions(&roots_for(&[], None))
                .await
                .unwrap();
            assert_eq!(sessions.len(), 1);
            assert_eq!(sessions[0].id, ID);
            let lines: Vec<String> = listing
                .unreadable
                .iter()
                .map(|l| l.message.clone())
                .collect();
            let shown = String::from_utf8_lossy(&projects).into_owned();
            assert_eq!(
                lines,
                [
                    format!(
                        "{shown}-caf\u{fffd}: directory name is not UTF-8; its sessions are left out"
                    ),
                    format!("{shown}-ok: a file name here is not UTF-8; its session is left out"),
                ]
            );
            assert_eq!(
                listing.unreadable[0].path,
                [&projects[..], b"-caf\xe9"].concat()
            );
        });
    }

    #[test]
    fn files_named_inside_are_read_to_list_them_and_only_when_they_could_be_asked_for() {
        block_on(async {
            let host = long_session();
            let mut agent = host.default_root(super::testing::named("claude"));
            agent.extend_from_slice(b"/projects/-p/agent-5e6f7a8.jsonl");
            host.put(
                &agent,
                format!(
                    "{{\"isSidechain\":true,\"sessionId\":\"{ID}\",\"agentId\":\"5e6f7a8\",\"type\":\"user\",\"message\":{{\"content\":\"go\"}},\"uuid\":\"u\"}}\n"
                ),
            );
            let roots = roots_for(&[], None);
            let reader = Reader::new(&host);
            let (_, sessions) = reader.list_sessions(&roots).await.unwrap();
            let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
            assert_eq!(ids, [ID.to_string(), format!("{ID}+agent-5e6f7a8")]);
            assert_eq!(host.calls().read, 1, "one read of the agent file's start");
            // A parent's id cannot name a subagent: its file is not read to resolve it.
            let before = host.calls().read;
            resolve(&host, "556046").await;
            assert_eq!(host.calls().read, before);
            let sub = resolve(&host, &format!("{ID}+agent-5e")).await;
            assert_eq!(sub.agent.as_deref(), Some("5e6f7a8"));
            assert_eq!(host.calls().read, before + 1);
        });
    }

    #[test]
    fn sessions_resolve_from_the_listing() {
        block_on(async {
            let host = long_session();
            let roots = roots_for(&[], None);
            let (listing, sessions) = Reader::new(&host).list_sessions(&roots).await.unwrap();
            assert_eq!(listing.roots.len(), roots.len());
            assert_eq!(sessions.len(), 1);
            assert_eq!(sessions[0].id, ID);
            let missing = SessionQuery::parse("claude/0000000").unwrap();
            let err = Reader::new(&host)
                .resolve_session(&roots, &missing)
                .await
                .unwrap_err();
            assert!(matches!(err, DriverError::NotFound { .. }), "{err}");
            host.fail_next(1, dropped(&host));
            let err = Reader::new(&host)
                .resolve_session(&roots, &missing)
                .await
                .unwrap_err();
            assert!(
                matches!(err, DriverError::Host(HostError::Unreachable { .. })),
                "{err}"
            );
        });
    }

    /// A read resolved and started in one call pages exactly as one resolved from the whole
    /// listing, and its first read is the one done with the resolution.
    #[test]
    fn resolving_for_a_read_reads_its_first_range_once_and_pages_alike() {
        block_on(async {
            let host = long_session();
            let other = "55604662-cf2a-4331-851a-ec234028f8cb";
            host.put(claude_path(&host, other), SHORT);
            let roots = roots_for(&[], None);
            let session = resolve(&host, ID).await;
            let tail = request(Mode::Tail, 20);
            let expected = Reader::new(&host)
                .read_page(&session, tail.clone(), |_| {})
                .await
                .unwrap();
            let cursor = expected.cursor.clone();
            for (id, mode) in [
                (ID, Mode::Tail),
                (ID, Mode::Head),
                (ID, Mode::Since(cursor.clone())),
                // Two sessions share this prefix: the whole listing decides (ambiguous).
                ("55604662", Mode::Tail),
            ] {
                let before = host.calls();
                let reader = Reader::new(&host);
                let query = SessionQuery::parse(id).unwrap();
                let req = request(mode.clone(), 20);
                let found = reader.resolve_for_read(&roots, &query, &req).await;
                if id != ID {
                    assert!(matches!(found, Err(DriverError::Resolve(_))), "{found:?}");
                    continue;
                }
                let found = found.unwrap();
                assert_eq!(found, session);
                let page = reader.read_page(&found, req.clone(), |_| {}).await.unwrap();
                let plain = Reader::new(&host)
                    .read_page(&session, req, |_| {})
                    .await
                    .unwrap();
                assert_eq!(page.records, plain.records, "{mode:?}");
                assert_eq!(page.cursor, plain.cursor, "{mode:?}");
                let after = host.calls();
                assert_eq!(after.list - before.list, 1, "{mode:?}");
                // The page's first read was the resolution's; a tail of 20 needs no more.
                if matches!(mode, Mode::Tail) {
                    assert_eq!(
                        after.read - before.read,
                        1 + 1,
                        "{mode:?}: one ahead, one for the plain page"
                    );
                }
            }
        });
    }

    /// A read kept with each file's bytes once is served as the host would answer it: each
    /// range its part, the file twice for a head and a tail that are both all of it.
    #[test]
    fn reads_kept_once_are_served_range_by_range() {
        let file = FileRef {
            harness: super::testing::named("claude"),
            root: b"/r".to_vec(),
            rel: b"a.jsonl".to_vec(),
        };
        let bytes = b"0123456789".to_vec();
        let r = |start, len| ByteRange::new(start, len);
        // Read whole with the listing: a head, the whole file twice, a tail, past the end.
        let read = Prefetched {
            file: file.clone(),
            ranges: vec![r(0, 4), r(0, 10), r(0, 10), r(6, 4), r(10, 0)],
            size: 10,
            data: vec![bytes.clone()],
            parts: vec![(0, 0..4), (0, 0..10), (0, 0..10), (0, 6..10), (0, 10..10)],
        };
        assert!(read.answers(&file, &[r(0, 4), r(0, 64), r(0, 64), r(6, 64), r(10, 64)]));
        assert!(!read.answers(&file, &[r(0, 4)]));
        let got = read.into_result();
        assert_eq!(got.size, 10);
        let want: Vec<Vec<u8>> = vec![
            b"0123".to_vec(),
            bytes.clone(),
            bytes.clone(),
            b"6789".to_vec(),
            Vec::new(),
        ];
        assert_eq!(got.chunks, want);
        // Batched: two ranges asked once, answered by one chunk; a chunk the reply left out
        // answers nothing.
        let read = Prefetched {
            file: file.clone(),
            ranges: vec![r(0, 10), r(0, 10), r(20, 5)],
            size: 10,
            data: vec![bytes.clone()],
            parts: vec![(0, 0..10), (0, 0..10), (1, 0..0)],
        };
        assert_eq!(
            read.into_result().chunks,
            vec![bytes.clone(), bytes.clone(), Vec::new()]
        );
        // As the host returned it: the same result, nothing copied.
        let result = clankie_model::ReadResult {
            size: 10,
            chunks: vec![b"0123".to_vec(), b"789".to_vec()],
        };
        let read = Prefetched::of_read(file, vec![r(0, 4), r(7, 3)], result.clone());
        assert_eq!(read.into_result(), result);
    }

    /// A read kept ahead is served once, to the first read of a page of its file; a later
    /// page of the same file reads afresh (a follow sees what was written since).
    #[test]
    fn reads_done_ahead_serve_one_page_and_never_a_later_one() {
        block_on(async {
            let host = long_session();
            let session = resolve(&host, ID).await;
            let reader = Reader::new(&host);
            let tail = request(Mode::Tail, 1);
            reader
                .prefetch_first_reads(&[(&session, tail.clone())])
                .await
                .unwrap();
            let before = host.calls().read;
            let first = reader
                .read_page(&session, tail.clone(), |_| {})
                .await
                .unwrap();
            assert_eq!(host.calls().read, before, "served from the read done ahead");
            host.append(claude_path(&host, ID), prompts(1));
            let again = reader.read_page(&session, tail, |_| {}).await.unwrap();
            assert!(host.calls().read > before);
            assert_ne!(first.records, again.records);
        });
    }
}
