//! `grep`'s driver side: every session of one host searched with the engine's
//! [`SessionSearch`]. Sessions of JSON lines are searched as their bytes come: a local host's
//! files read through the read primitive [`MAX_READ_BYTES`] at a time (never whole in memory),
//! a remote host's through the [`Cache`] in batches of bounded size; every other source (a
//! database, a whole document, a compressed transcript, a tree, a terminal recording) is read
//! through the [`Reader`] as `read --all` reads it, and its records matched.

use std::collections::VecDeque;
use std::sync::Arc;

use clankie_engine::SourceCtx;
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::search::{Found, Query, SessionSearch};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, LocalFile};
use clankie_model::limits::{MAX_LIMIT, MAX_READ_BYTES};
use clankie_model::{ByteRange, FileEntry, RootSpec};

use super::{DriverError, Reader, source_ctx};
use crate::cache::Cache;
use tokio::task::JoinHandle;

/// Most bytes of session files asked of the cache in one call (a single larger file is asked
/// for alone). The cache hands bytes back mapped from its files, not read into memory, so
/// this bounds address space (and, with the cache off, the unlinked temporary files a batch
/// holds) rather than memory. It is large so that unchanged files are verified many per
/// remote command (a bound of 64 MiB made a tree of 32 MiB transcripts one command per
/// file): as large as the cache's default bound where addresses are 64 bits, so that a
/// history the cache keeps is one call, one verification and one fetch whose reads stay in
/// flight from the first file to the last, not a round trip more per GiB.
const BATCH_BYTES: u64 = if usize::BITS >= 64 {
    crate::cache::DEFAULT_MAX_BYTES
} else {
    1 << 30
};

/// Most sessions asked of the cache in one call.
const BATCH_SESSIONS: usize = 1024;

/// What one session gave: its matches and context, in order.
#[derive(Debug)]
pub struct SessionFound {
    pub harness: &'static str,
    pub session: String,
    pub found: Vec<Found>,
    pub matches: usize,
}

/// A session that could not be searched; the host's other sessions were.
#[derive(Debug)]
pub struct Unsearched {
    pub harness: &'static str,
    pub session: Option<String>,
    pub path: String,
    pub message: String,
}

/// What a host's search gave besides the sessions handed on as they were searched.
#[derive(Debug, Default)]
pub struct HostSearched {
    pub unsearched: Vec<Unsearched>,
    /// Source bytes read for the search (through the cache: the bytes it moved).
    pub bytes_moved: u64,
}

/// Searches every session of `host` under `roots`. `cache` is `None` for a host whose files
/// are read directly (this machine's). `on_session` is called, in the listing's order, for
/// each session with at least one match. An error for the host as a whole ends the search.
pub async fn search_host<H: Host>(
    host: &H,
    roots: &[RootSpec],
    query: &Query,
    cache: Option<&Cache>,
    mut on_session: impl FnMut(SessionFound),
) -> Result<HostSearched, DriverError> {
    let reader = Reader::new(host);
    let (listing, sessions) = reader.list_sessions(roots).await?;
    let mut searched = HostSearched::default();
    for left in listing.unreadable {
        searched.unsearched.push(Unsearched {
            harness: left.harness.name(),
            session: None,
            path: clankie_model::display_path(&left.path),
            message: left.message,
        });
    }
    // Sessions of lines wait in a batch for the cache; the order of output is the listing's.
    let mut batch: Vec<&SessionFile> = Vec::new();
    let mut batch_bytes = 0u64;
    // This machine's sessions of lines are searched on the blocking pool, several at once.
    let mut in_flight = InFlight::default();
    for session in &sessions {
        let lines = harness::source(session) == Source::Lines;
        if lines && cache.is_none() {
            match host.open_local(&file_ref(session)).await {
                Ok(Some(opened)) => {
                    in_flight
                        .start(
                            host.name(),
                            session,
                            query,
                            opened,
                            &mut searched,
                            &mut on_session,
                        )
                        .await?;
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    unsearched(session, e.into(), &mut searched)?;
                    continue;
                }
            }
        }
        in_flight.finish(0, &mut searched, &mut on_session).await?;
        if lines && let Some(cache) = cache {
            if !batch.is_empty()
                && (batch_bytes + session.entry.size > BATCH_BYTES || batch.len() == BATCH_SESSIONS)
            {
                search_batch(host, cache, &batch, query, &mut searched, &mut on_session).await?;
                batch.clear();
                batch_bytes = 0;
            }
            batch.push(session);
            batch_bytes += session.entry.size;
            continue;
        }
        if !batch.is_empty() {
            search_batch(
                host,
                cache.expect("batches are cached"),
                &batch,
                query,
                &mut searched,
                &mut on_session,
            )
            .await?;
            batch.clear();
            batch_bytes = 0;
        }
        let result = if lines {
            search_local_lines(host, session, query, &mut searched.bytes_moved).await
        } else {
            search_records(&reader, session, query).await
        };
        match result {
            Ok(found) => hand_on(found, &mut on_session),
            Err(e) => unsearched(session, e, &mut searched)?,
        }
    }
    in_flight.finish(0, &mut searched, &mut on_session).await?;
    if let (false, Some(cache)) = (batch.is_empty(), cache) {
        search_batch(host, cache, &batch, query, &mut searched, &mut on_session).await?;
    }
    Ok(searched)
}

/// How many bytes of a file of this machine are read at once: a buffer that stays in the
/// core's cache, reused for the whole file (a fresh 4 MiB chunk per read spent more time
/// faulting in and copying to cold memory than the search spent matching).
const LOCAL_CHUNK_BYTES: usize = 256 << 10;

/// Searches of this machine's files under way on the blocking pool, in the listing's order.
#[derive(Default)]
struct InFlight<'s> {
    searches: VecDeque<(
        &'s SessionFile,
        JoinHandle<Result<LocalSearched, DriverError>>,
    )>,
    /// One per core, as rg searches (set on first use).
    at_once: usize,
    query: Option<Arc<Query>>,
}

/// What the search of one file of this machine gave.
struct LocalSearched {
    found: Vec<Found>,
    matches: usize,
    bytes_read: u64,
}

impl<'s> InFlight<'s> {
    /// Starts the search of `session` (opened as `opened`), after handing on the oldest one
    /// under way if as many run as there are cores.
    async fn start(
        &mut self,
        host: &str,
        session: &'s SessionFile,
        query: &Query,
        opened: LocalFile,
        searched: &mut HostSearched,
        on_session: &mut impl FnMut(SessionFound),
    ) -> Result<(), DriverError> {
        if self.at_once == 0 {
            self.at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        self.finish(self.at_once - 1, searched, on_session).await?;
        let query = Arc::clone(self.query.get_or_insert_with(|| Arc::new(query.clone())));
        let ctx = source_ctx(host, session);
        let path = clankie_model::display_path(&session.entry.full_path());
        let task =
            tokio::task::spawn_blocking(move || search_local_file(ctx, &query, opened, path));
        self.searches.push_back((session, task));
        Ok(())
    }

    /// Hands on the searches under way, oldest first, until at most `left` remain.
    async fn finish(
        &mut self,
        left: usize,
        searched: &mut HostSearched,
        on_session: &mut impl FnMut(SessionFound),
    ) -> Result<(), DriverError> {
        while self.searches.len() > left {
            let (session, task) = self.searches.pop_front().expect("more than `left`");
            let result = match task.await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            };
            match result {
                Ok(done) => {
                    searched.bytes_moved += done.bytes_read;
                    hand_on(
                        SessionFound {
                            harness: session.harness().name(),
                            session: session.id.clone(),
                            found: done.found,
                            matches: done.matches,
                        },
                        on_session,
                    );
                }
                Err(e) => unsearched(session, e, searched)?,
            }
        }
        Ok(())
    }
}

/// Searches a file of this machine up to its size when it was opened (what is appended
/// meanwhile is for the next search), [`LOCAL_CHUNK_BYTES`] at a time. Runs on the blocking
/// pool.
fn search_local_file(
    ctx: SourceCtx,
    query: &Query,
    opened: LocalFile,
    path: String,
) -> Result<LocalSearched, DriverError> {
    use std::io::Read;
    let mut search = SessionSearch::new(ctx, query);
    let mut found = Vec::new();
    let mut reader = opened.file.take(opened.size);
    let mut buf = vec![0u8; LOCAL_CHUNK_BYTES];
    let mut bytes_read = 0u64;
    while !search.is_done() {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(DriverError::Source {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        bytes_read += n as u64;
        search.feed(&buf[..n], &mut found);
    }
    Ok(LocalSearched {
        matches: search.matches(),
        found,
        bytes_read,
    })
}

fn file_ref(session: &SessionFile) -> FileRef {
    FileRef {
        harness: session.harness(),
        root: session.entry.root.to_vec(),
        rel: session.entry.rel.clone(),
    }
}

fn hand_on(found: SessionFound, on_session: &mut impl FnMut(SessionFound)) {
    if found.matches > 0 {
        on_session(found);
    }
}

/// Records a session that could not be searched, unless the error is the host's as a whole.
fn unsearched(
    session: &SessionFile,
    error: DriverError,
    searched: &mut HostSearched,
) -> Result<(), DriverError> {
    if let DriverError::Host(e) = &error
        && e.is_host_wide()
    {
        return Err(error);
    }
    let path = clankie_model::display_path(&session.entry.full_path());
    let message = without_place(error.to_string(), &path);
    searched.unsearched.push(Unsearched {
        harness: session.harness().name(),
        session: Some(session.id.clone()),
        path,
        message,
    });
    Ok(())
}

/// `message` without the `HOST: PATH: ` it starts with when it names `path`: an unsearched
/// session's line names its host and path itself.
fn without_place(message: String, path: &str) -> String {
    match message
        .split_once(": ")
        .and_then(|(_, rest)| rest.strip_prefix(path))
        .and_then(|rest| rest.strip_prefix(": "))
    {
        Some(reason) => reason.to_string(),
        None => message,
    }
}

/// Sessions of lines fetched through the cache in one call, then searched on the blocking
/// pool as many at once as there are cores (each over the bytes the cache mapped), handed on
/// in the batch's order.
async fn search_batch<H: Host>(
    host: &H,
    cache: &Cache,
    batch: &[&SessionFile],
    query: &Query,
    searched: &mut HostSearched,
    on_session: &mut impl FnMut(SessionFound),
) -> Result<(), DriverError> {
    let entries: Vec<FileEntry> = batch.iter().map(|s| s.entry.clone()).collect();
    let fetched = cache.fetch_many(host, &entries).await?;
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    let query = Arc::new(query.clone());
    let mut under_way: UnderWay<'_> = VecDeque::new();
    for (session, result) in batch.iter().zip(fetched) {
        match result {
            Ok(fetched) => {
                searched.bytes_moved += fetched.moved;
                if under_way.len() == at_once {
                    hand_on_searched(&mut under_way, on_session).await;
                }
                let ctx = source_ctx(host.name(), session);
                let query = Arc::clone(&query);
                let task = tokio::task::spawn_blocking(move || {
                    let mut search = SessionSearch::new(ctx, &query);
                    let mut found = Vec::new();
                    search.feed(&fetched.bytes, &mut found);
                    (search.matches(), found)
                });
                under_way.push_back((session, task));
            }
            Err(e) => unsearched(session, e.into(), searched)?,
        }
    }
    while !under_way.is_empty() {
        hand_on_searched(&mut under_way, on_session).await;
    }
    Ok(())
}

/// Fetched sessions' searches under way on the blocking pool, oldest first: each gives its
/// count of matches and what it found.
type UnderWay<'s> = VecDeque<(&'s SessionFile, JoinHandle<(usize, Vec<Found>)>)>;

/// Hands on the oldest of the fetched sessions' searches under way.
async fn hand_on_searched(under_way: &mut UnderWay<'_>, on_session: &mut impl FnMut(SessionFound)) {
    let Some((session, task)) = under_way.pop_front() else {
        return;
    };
    let (matches, found) = match task.await {
        Ok(searched) => searched,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    hand_on(
        SessionFound {
            harness: session.harness().name(),
            session: session.id.clone(),
            found,
            matches,
        },
        on_session,
    );
}

fn finish(session: &SessionFile, search: &SessionSearch<'_>, found: Vec<Found>) -> SessionFound {
    SessionFound {
        harness: session.harness().name(),
        session: session.id.clone(),
        matches: search.matches(),
        found,
    }
}

/// A session of lines read directly, [`MAX_READ_BYTES`] at a time, and searched as it comes.
/// The file is read up to the size its first read reports: what is appended meanwhile is
/// for the next search.
async fn search_local_lines<H: Host>(
    host: &H,
    session: &SessionFile,
    query: &Query,
    bytes_read: &mut u64,
) -> Result<SessionFound, DriverError> {
    let file = file_ref(session);
    let mut search = SessionSearch::new(source_ctx(host.name(), session), query);
    let mut found = Vec::new();
    // The first read gives the size the search stops at (what is appended later is the next
    // search's); each later chunk is read while the one before it is searched. (Reading a
    // chunk in two halves at once was slower here: the copies contend.)
    let first = host
        .read(&file, &[ByteRange::new(0, MAX_READ_BYTES)])
        .await?;
    let size = first.size;
    let mut chunk = first.chunks.into_iter().next().unwrap_or_default();
    let mut offset = 0u64;
    while !chunk.is_empty() && !search.is_done() {
        chunk.truncate(chunk.len().min(size.saturating_sub(offset) as usize));
        let next_offset = offset + chunk.len() as u64;
        let next = async {
            if next_offset >= size {
                return Ok(Vec::new());
            }
            let len = (size - next_offset).min(MAX_READ_BYTES);
            let result = host
                .read(&file, &[ByteRange::new(next_offset, len)])
                .await?;
            Ok::<_, DriverError>(result.chunks.into_iter().next().unwrap_or_default())
        };
        // `biased`: the read is polled first, so that a host that reads on another thread
        // (the local one, for big reads) has started before the search takes this chunk.
        let (next, ()) = tokio::join!(biased; next, async {
            *bytes_read += chunk.len() as u64;
            search.feed(&chunk, &mut found);
        });
        if search.is_done() {
            break;
        }
        chunk = next?;
        offset = next_offset;
    }
    Ok(finish(session, &search, found))
}

/// A session that is not lines: its records as `read --all` gives them (redacted), matched.
async fn search_records<H: Host>(
    reader: &Reader<'_, H>,
    session: &SessionFile,
    query: &Query,
) -> Result<SessionFound, DriverError> {
    let mut search = SessionSearch::new(source_ctx(reader.host().name(), session), query);
    let mut found = Vec::new();
    let request = PageRequest {
        mode: Mode::All,
        limit: MAX_LIMIT,
        strict: false,
        redact: query.redact,
    };
    reader
        .read_to_end(session, request, |page| {
            search.records(std::mem::take(&mut page.records), &mut found);
            // `-m` reached: the rest is not read.
            if search.is_done() {
                page.more = false;
            }
            Ok::<(), DriverError>(())
        })
        .await?;
    Ok(finish(session, &search, found))
}

#[cfg(test)]
mod place_tests {
    use super::without_place;

    #[test]
    fn a_message_naming_the_session_s_host_and_path_keeps_its_reason_alone() {
        let path = "/home/u/.claude/projects/-p/a: b.jsonl";
        assert_eq!(
            without_place(format!("devbox: {path}: cache: No space left"), path),
            "cache: No space left"
        );
        // Another path, or none: the message as it is.
        let other = "devbox: /elsewhere: cache: No space left".to_string();
        assert_eq!(without_place(other.clone(), path), other);
        assert_eq!(without_place("timed out".into(), path), "timed out");
    }
}
