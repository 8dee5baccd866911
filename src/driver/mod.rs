//! The driver: the one module that knows both the engine and the hosts. It resolves a session
//! from a host's listing, runs the engine's read planner against the host's read primitive,
//! and hands records to the caller as they complete. It owns the loops: one page
//! ([`read_page`]), pages until caught up ([`read_to_end`], which `check` and `--follow` use),
//! and following a session ([`follow`]). Callers parse, call, and print.

pub mod follow;
#[cfg(test)]
pub(crate) mod testing;

use clankie_engine::SourceCtx;
use clankie_engine::cursor::{Cursor, CursorError, binding};
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest, PlanError};
use clankie_engine::plan::ReadPlan;
use clankie_engine::resolve::{self, ResolveError, SessionQuery};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{ByteRange, Harness, Listing, Record, RootSpec};

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
    #[error(transparent)]
    Database(crate::sqlite::DatabaseError),
}

/// A host error met while copying a database is a host error, with the host's exit code.
impl From<crate::sqlite::DatabaseError> for DriverError {
    fn from(e: crate::sqlite::DatabaseError) -> DriverError {
        match e {
            crate::sqlite::DatabaseError::Host(e) => DriverError::Host(e),
            e => DriverError::Database(e),
        }
    }
}

/// How many session heads listing reads at once ([`Reader::list_sessions`] for Gemini): SSH
/// multiplexes them on one connection, and sshd allows 10 sessions per connection by default.
const HEAD_READS_AT_ONCE: usize = 8;

/// The roots to list on a host: an explicit `--root`/hosts-file root replaces that harness's
/// default; other harnesses keep theirs.
pub fn roots_for(overrides: &[RootSpec], harness: Option<Harness>) -> Vec<RootSpec> {
    harness::all()
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

/// Reads the sessions of one host: the driver's entry point. It holds the host and what is kept
/// between reads of it for the run: the private copies of its databases, so that resolving a
/// session and then reading it, or every `--follow` poll, fetches only what changed.
pub struct Reader<'h, H: Host> {
    host: &'h H,
    databases: crate::sqlite::Copies,
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
            databases: crate::sqlite::Copies::default(),
        }
    }

    /// The host this reader reads.
    pub fn host(&self) -> &'h H {
        self.host
    }

    /// Lists a host and the sessions in it. Sessions of a database are its rows (the database is
    /// copied and queried); a database that cannot be read is one line in `listing.unreadable`.
    pub async fn list_sessions(
        &self,
        roots: &[RootSpec],
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let (listing, sessions, _) = self.list_all(roots).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions`], keeping the errors of databases that could not be read.
    async fn list_all(
        &self,
        roots: &[RootSpec],
    ) -> Result<(Listing, Vec<SessionFile>, Vec<DriverError>), HostError> {
        let mut listing = self.host.list(roots).await?;
        let mut sessions = self
            .adopt_native_ids(harness::sessions(&listing.files))
            .await?;
        let mut errors = Vec::new();
        let databases: Vec<_> = harness::databases(&listing.files).cloned().collect();
        for db in databases {
            let found = match self.databases.load(self.host, &db).await {
                Ok(snapshot) => snapshot.sessions(&db).map_err(DriverError::from),
                Err(e) => Err(e.into()),
            };
            match found {
                Ok(found) => sessions.extend(found),
                // An unreachable or stalled host fails the listing as it would for files.
                Err(DriverError::Host(
                    e @ (HostError::Unreachable { .. }
                    | HostError::Auth { .. }
                    | HostError::TimedOut { .. }),
                )) => {
                    return Err(e);
                }
                Err(e) => {
                    listing.unreadable.push(e.to_string());
                    errors.push(e);
                }
            }
        }
        sessions.sort_by(|a, b| {
            (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel))
        });
        Ok((listing, sessions, errors))
    }

    /// Sessions whose id is in their file's first line (Gemini) get that id: one small read of
    /// each such file, [`HEAD_READS_AT_ONCE`] at a time (over SSH each is a command). A file
    /// that cannot be read keeps its file name as its id.
    async fn adopt_native_ids(
        &self,
        sessions: Vec<SessionFile>,
    ) -> Result<Vec<SessionFile>, HostError> {
        use futures_util::stream::{self, StreamExt};
        let files: Vec<FileRef> = sessions
            .iter()
            .filter(|s| harness::id_in_head(s))
            .map(|session| FileRef {
                harness: session.harness(),
                root: session.entry.root.clone(),
                rel: session.entry.rel.clone(),
            })
            .collect();
        let host = self.host;
        let reads: Vec<_> = stream::iter(files)
            .map(|file| async move {
                let range = [ByteRange::new(0, clankie_model::limits::ID_HEAD_BYTES)];
                let head = host.read(&file, &range).await;
                ((file.root, file.rel), head)
            })
            .buffer_unordered(HEAD_READS_AT_ONCE)
            .collect()
            .await;
        let mut heads = std::collections::HashMap::new();
        for (key, head) in reads {
            match head {
                Ok(result) => {
                    heads.insert(key, result.chunks.concat());
                }
                Err(
                    e @ (HostError::Unreachable { .. }
                    | HostError::Auth { .. }
                    | HostError::TimedOut { .. }),
                ) => return Err(e),
                Err(_) => {}
            }
        }
        Ok(harness::adopt_native_ids(sessions, |s| {
            heads.remove(&(s.entry.root.clone(), s.entry.rel.clone()))
        }))
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
        let (_, sessions, mut db_errors) = self.list_all(&roots).await?;
        match resolve::resolve(&sessions, query) {
            Ok(found) => Ok(found.clone()),
            // The session may be in the database that could not be read: say why.
            Err(ResolveError::NotFound(_)) if !db_errors.is_empty() => Err(db_errors.remove(0)),
            Err(e) => Err(e.into()),
        }
    }

    /// What `resume` prints for a session: the harness's own command, from the session's directory
    /// as its records (or sidecar file) name it. A sidecar that cannot be read leaves the `cd` out.
    pub async fn resume_command(&self, session: &SessionFile) -> Result<String, DriverError> {
        use clankie_engine::harness as resume;
        let harness = session.harness();
        if harness.is_sqlite() {
            let snapshot = self.databases.load(self.host, &session.entry).await?;
            let cwd = snapshot.session_cwd(&session.id)?;
            let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
            return Ok(resume::resume_command(
                harness,
                &session.id,
                &path,
                cwd.as_deref(),
            ));
        }
        let file = FileRef {
            harness,
            root: session.entry.root.clone(),
            rel: session.entry.rel.clone(),
        };
        let head_range = [ByteRange::new(0, clankie_model::limits::RESUME_HEAD_BYTES)];
        let head = self.host.read(&file, &head_range).await?.chunks.concat();
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
                match self.host.read(&sidecar, &head_range).await {
                    Ok(result) => resume::session_cwd(harness, &result.chunks.concat()),
                    Err(_) => None,
                }
            }
        };
        let id = resume::native_id(harness, &head).unwrap_or_else(|| session.id.clone());
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        Ok(resume::resume_command(harness, &id, &path, cwd.as_deref()))
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
            root: session.entry.root.clone(),
            rel: session.entry.rel.clone(),
        };
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        if source.is_rows() {
            // Sessions of a database (copied, then queried) and whole-document transcripts are
            // read whole and paged over their records, with the row cursor class.
            let rows = if source == Source::Database {
                self.databases
                    .load(self.host, &session.entry)
                    .await?
                    .records(&ctx)?
            } else {
                let bytes = fetch_whole(self.host, &file, session.entry.size, &path).await?;
                match harness::format(ctx.harness).parse_document(&ctx, &bytes) {
                    Ok(records) => clankie_engine::rows::RowRecords {
                        records,
                        ..Default::default()
                    },
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
            let mut page = clankie_engine::rows::page(&ctx, rows, &request).map_err(|source| {
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
                None => self.host.read(&file, &ranges).await?,
            };
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
        Ok(plan.finish())
    }

    /// Reads pages until one says no complete record follows (`more` false): `first`, then pages
    /// of [`MAX_LIMIT`] records from each page's cursor, with `first`'s `strict` and `redact`.
    /// `on_page` sees each page, records streamed by `--all` included, and may take its records;
    /// an error it returns ends the loop. Returns the last page's cursor.
    pub async fn read_to_end<E: From<DriverError>>(
        &self,
        session: &SessionFile,
        first: PageRequest,
        mut on_page: impl FnMut(&mut Page) -> Result<(), E>,
    ) -> Result<Cursor, E> {
        let (strict, redact) = (first.strict, first.redact);
        let mut request = first;
        loop {
            let mut streamed = Vec::new();
            let mut page = self
                .read_page(session, request, |records| streamed.extend(records))
                .await?;
            if !streamed.is_empty() {
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
        if bytes.len() as u64 >= result.size || chunk.is_empty() {
            return Ok(bytes);
        }
        if bytes.len() as u64 > MAX_SOURCE_BYTES {
            return Err(DriverError::Source {
                path: path.to_string(),
                reason: format!(
                    "the file is over the {} MiB bound of one read",
                    MAX_SOURCE_BYTES >> 20
                ),
            });
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
    fn sessions_resolve_from_the_listing() {
        block_on(async {
            let host = long_session();
            let roots = roots_for(&[], None);
            let (listing, sessions) = Reader::new(&host).list_sessions(&roots).await.unwrap();
            assert_eq!(listing.roots.len(), clankie_engine::harness::all().count());
            assert_eq!(sessions.len(), 1);
            assert_eq!(sessions[0].id, ID);
            let missing = SessionQuery::parse("claude/0000000").unwrap();
            let err = Reader::new(&host)
                .resolve_session(&roots, &missing)
                .await
                .unwrap_err();
            assert!(
                matches!(err, DriverError::Resolve(ResolveError::NotFound(_))),
                "{err}"
            );
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
}
