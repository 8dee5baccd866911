//! `grep`'s driver side: every session of one host searched with the engine's
//! [`SessionSearch`]. Sessions of JSON lines are searched as their bytes come: a local host's
//! files read through the read primitive [`MAX_READ_BYTES`] at a time (never whole in memory),
//! a remote host's through the [`Cache`] in batches of bounded size; every other source (a
//! database, a whole document, a compressed transcript, a tree, a terminal recording) is read
//! through the [`Reader`] as `read --all` reads it, and its records matched.

use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::search::{Found, Query, SessionSearch};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host};
use clankie_model::limits::{MAX_LIMIT, MAX_READ_BYTES};
use clankie_model::{ByteRange, FileEntry, RootSpec};

use super::{DriverError, Reader, source_ctx};
use crate::cache::Cache;

/// Most bytes of session files asked of the cache in one call (a single larger file is asked
/// for alone). The cache hands bytes back mapped from its files, not read into memory, so
/// this bounds address space rather than memory; it is large so that unchanged files are
/// verified many per remote command (a bound of 64 MiB made a tree of 32 MiB transcripts one
/// command per file).
const BATCH_BYTES: u64 = 1 << 30;

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
    for session in &sessions {
        let lines = harness::source(session) == Source::Lines;
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
    if let (false, Some(cache)) = (batch.is_empty(), cache) {
        search_batch(host, cache, &batch, query, &mut searched, &mut on_session).await?;
    }
    Ok(searched)
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
    searched.unsearched.push(Unsearched {
        harness: session.harness().name(),
        session: Some(session.id.clone()),
        path: clankie_model::display_path(&session.entry.full_path()),
        message: error.to_string(),
    });
    Ok(())
}

/// Sessions of lines fetched through the cache in one call, then searched one by one.
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
    for (session, result) in batch.iter().zip(fetched) {
        match result {
            Ok(fetched) => {
                searched.bytes_moved += fetched.moved;
                let mut search = SessionSearch::new(source_ctx(host.name(), session), query);
                let mut found = Vec::new();
                search.feed(&fetched.bytes, &mut found);
                hand_on(finish(session, &search, found), on_session);
            }
            Err(e) => unsearched(session, e.into(), searched)?,
        }
    }
    Ok(())
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
    let file = FileRef {
        harness: session.harness(),
        root: session.entry.root.to_vec(),
        rel: session.entry.rel.clone(),
    };
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
