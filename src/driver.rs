//! The driver: the one module that knows both the engine and the hosts. It resolves a session
//! from a host's listing, runs the engine's read planner against the host's read primitive,
//! and hands records to the caller as they complete.

use crate::engine::SourceCtx;
use crate::engine::cursor::{CursorError, binding};
use crate::engine::plan::{Mode, Page, PageRequest, PlanError, ReadPlan};
use crate::engine::redact;
use crate::engine::session::{self, ResolveError, SessionFile, SessionQuery};
use crate::host::{FileRef, Host, HostError};
use crate::model::{ByteRange, Harness, Listing, Record, RootSpec};

/// Everything that can end a read, by layer.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error("{path}: {source}")]
    Plan { path: String, source: PlanError },
    /// A source that cannot be read as a transcript (corrupt compression, over the bounds).
    #[error("{path}: {reason}")]
    Source { path: String, reason: String },
}

/// The roots to list on a host: an explicit `--root`/hosts-file root replaces that harness's
/// default; other harnesses keep theirs.
pub fn roots_for(overrides: &[RootSpec], harness: Option<Harness>) -> Vec<RootSpec> {
    Harness::ALL
        .into_iter()
        .filter(|h| harness.is_none_or(|only| only == *h))
        .map(|h| {
            overrides
                .iter()
                .find(|r| r.harness == h)
                .cloned()
                .unwrap_or_else(|| RootSpec::default_for(h))
        })
        .collect()
}

/// Lists a host and the sessions in it.
pub async fn list_sessions<H: Host>(
    host: &H,
    roots: &[RootSpec],
) -> Result<(Listing, Vec<SessionFile>), HostError> {
    let listing = host.list(roots).await?;
    let sessions = session::sessions(&listing.files);
    Ok((listing, sessions))
}

/// Resolves a session argument on a host.
pub async fn resolve_session<H: Host>(
    host: &H,
    roots: &[RootSpec],
    query: &SessionQuery,
) -> Result<SessionFile, DriverError> {
    let roots: Vec<RootSpec> = match query.harness {
        Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
        None => roots.to_vec(),
    };
    let (_, sessions) = list_sessions(host, &roots).await?;
    Ok(session::resolve(&sessions, query)?.clone())
}

/// What `resume` prints for a session: the harness's own command, from the session's directory
/// as its records (or sidecar file) name it. A sidecar that cannot be read leaves the `cd` out.
pub async fn resume_command<H: Host>(
    host: &H,
    session: &SessionFile,
) -> Result<String, DriverError> {
    use crate::engine::resume;
    let harness = session.harness();
    let file = FileRef {
        harness,
        root: session.entry.root.clone(),
        rel: session.entry.rel.clone(),
    };
    let head_range = [ByteRange::new(0, resume::HEAD_BYTES)];
    let head = host.read(&file, &head_range).await?.chunks.concat();
    let cwd = match resume::cwd_source(harness) {
        None => resume::session_cwd(harness, &head),
        Some(sidecar) => {
            let dir = match session.entry.rel.iter().rposition(|&b| b == b'/') {
                Some(i) => &session.entry.rel[..i],
                None => &b""[..],
            };
            let mut rel = dir.to_vec();
            for part in sidecar.split('/') {
                if part == ".." {
                    let cut = rel.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    rel.truncate(cut);
                } else {
                    rel.push(b'/');
                    rel.extend_from_slice(part.as_bytes());
                }
            }
            let sidecar = FileRef {
                rel,
                ..file.clone()
            };
            match host.read(&sidecar, &head_range).await {
                Ok(result) => resume::session_cwd(harness, &result.chunks.concat()),
                Err(_) => None,
            }
        }
    };
    let id = resume::native_id(harness, &head).unwrap_or_else(|| session.id.clone());
    let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
    Ok(resume::resume_command(harness, &id, &path, cwd.as_deref()))
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

/// Reads one page of a resolved session, calling `emit` with records as they complete (for
/// `--all`, which streams). The returned page holds no records that were already emitted.
pub async fn read_page<H: Host>(
    host: &H,
    session: &SessionFile,
    request: PageRequest,
    mut emit: impl FnMut(Vec<Record>),
) -> Result<Page, DriverError> {
    let ctx = source_ctx(host.name(), session);
    if let Mode::Since(cursor) = &request.mode {
        cursor.check_binding(&binding(&ctx.host, ctx.harness.name(), &ctx.session))?;
    }
    let stream = matches!(request.mode, Mode::All);
    let request_redact = request.redact;
    let file = FileRef {
        harness: session.harness(),
        root: session.entry.root.clone(),
        rel: session.entry.rel.clone(),
    };
    let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
    // A compressed transcript (Codex after 7 days) is fetched whole and decompressed here; the
    // plan then reads the decompressed stream, so offsets and cursors refer to it.
    let decompressed = if session.entry.rel.ends_with(b".zst") {
        Some(fetch_decompressed(host, &file, session.entry.size, &path).await?)
    } else {
        None
    };
    let mut plan = ReadPlan::new(
        ctx,
        request,
        decompressed
            .as_ref()
            .map_or(session.entry.size, |d| d.len() as u64),
    );
    while let Some(ranges) = plan.next_read() {
        let result = match &decompressed {
            Some(data) => serve_from_memory(data, &ranges),
            None => host.read(&file, &ranges).await?,
        };
        plan.feed(result.chunks, result.size)
            .map_err(|source| DriverError::Plan {
                path: path.clone(),
                source,
            })?;
        if stream {
            let mut records = plan.take_records();
            if !records.is_empty() {
                redact_records(request_redact, &mut records);
                emit(records);
            }
        }
    }
    let mut page = plan.finish();
    redact_records(request_redact, &mut page.records);
    Ok(page)
}

/// Secrets never leave the reader: every record is redacted before anyone renders it.
fn redact_records(redact: bool, records: &mut [Record]) {
    if redact {
        records.iter_mut().for_each(|r| {
            redact::redact_record(r);
        });
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
    use crate::engine::plan::{MAX_CALL_BYTES, MAX_SOURCE_BYTES};
    let too_large = |what: &str| DriverError::Source {
        path: path.to_string(),
        reason: format!(
            "{what} is over the {} MiB bound of one read",
            MAX_SOURCE_BYTES >> 20
        ),
    };
    let mut compressed = Vec::with_capacity(size_hint.min(MAX_SOURCE_BYTES) as usize);
    loop {
        let start = compressed.len() as u64;
        let result = host
            .read(file, &[ByteRange::new(start, MAX_CALL_BYTES)])
            .await?;
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        compressed.extend_from_slice(&chunk);
        if compressed.len() as u64 >= result.size || chunk.is_empty() {
            break;
        }
        if compressed.len() as u64 > MAX_SOURCE_BYTES {
            return Err(too_large("the compressed file"));
        }
    }
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
        return Err(too_large("the decompressed transcript"));
    }
    Ok(out)
}

/// Answers a read request from bytes in memory, as a host would.
fn serve_from_memory(data: &[u8], ranges: &[ByteRange]) -> crate::model::ReadResult {
    let size = data.len() as u64;
    let chunks = ranges
        .iter()
        .map(|r| data[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
        .collect();
    crate::model::ReadResult { size, chunks }
}
