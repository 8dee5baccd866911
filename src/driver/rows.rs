//! The rows path: a session read whole and paged over its records with the row cursor class
//! (a database's rows, queried page by page; a whole document; a tree of files).

use clankie_engine::SourceCtx;
use clankie_engine::cursor::Cursor;
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::session::SessionFile;
use clankie_host::{Host, HostError};
use clankie_model::{Record, RootSpec};

use super::{DriverError, Reader, fetch_whole, file_ref};

impl<'h, H: Host> Reader<'h, H> {
    /// The rows path of [`Reader::read_page`]: sessions of a database (queried page by page),
    /// whole-document transcripts and trees of files are read whole and paged over their
    /// records, with the row cursor class; `--all` emits every record of its page.
    pub(super) async fn read_rows(
        &self,
        session: &SessionFile,
        ctx: SourceCtx,
        source: Source,
        request: PageRequest,
        mut emit: impl FnMut(Vec<Record>),
    ) -> Result<Page, DriverError> {
        let stream = matches!(request.mode, Mode::All);
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        // The bytes of a source read whole, for the notice of one that gave no record (a
        // database's session is its rows, and a row-less one is empty).
        let mut source_bytes = 0;
        let rows = if source == Source::Database {
            self.database_rows(session, &ctx, &request).await?
        } else if source == Source::Tree {
            let (rows, bytes) = self.tree_records(session, &ctx, &path).await?;
            source_bytes = bytes;
            rows
        } else {
            let file = file_ref(&session.entry);
            let bytes = fetch_whole(self.host, &file, session.entry.size, &path).await?;
            source_bytes = bytes.len() as u64;
            // A tail page needs the newest records only: a source that can keeps no others
            // (but a filtered tail looks further back for records the filter keeps).
            let newest = (matches!(request.mode, Mode::Tail) && !self.filter.is_active())
                .then(|| request.limit.clamp(1, clankie_model::limits::MAX_LIMIT));
            // A `--since` page: a source that can goes past the records up to the cursor.
            let after = match &request.mode {
                Mode::Since(Cursor::Rows(cursor)) => Some(cursor),
                _ => None,
            };
            match harness::parse_document(&ctx, &bytes, self.terminal_size, newest, after) {
                Ok(mut rows) => {
                    if let Some(note) = rows.note.take() {
                        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                        notes.push(format!("{path}: {note}"));
                    }
                    rows
                }
                // Caught in the middle of an in-place rewrite (Gemini's legacy `.json`):
                // nothing complete to return yet, like a line still being written.
                Err(_) if !request.strict && harness::document_incomplete(ctx.harness, &bytes) => {
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
            redact: request.redact && !(stream && self.streams_unredacted()),
            ..request.clone()
        };
        let mut page = clankie_engine::rows::page_filtered(&ctx, rows, &rows_request, &self.filter)
            .map_err(|source| DriverError::Plan {
                path: path.clone(),
                source,
            })?;
        if !matches!(request.mode, Mode::Since(_)) {
            page.mark_no_records(&ctx, source_bytes, false);
        }
        if stream && !page.records.is_empty() {
            emit(std::mem::take(&mut page.records));
        }
        Ok(page)
    }

    /// The rows of a database's session a page needs: the newest for a tail page (and after
    /// it), else all of them.
    async fn database_rows(
        &self,
        session: &SessionFile,
        ctx: &SourceCtx,
        request: &PageRequest,
    ) -> Result<clankie_engine::rows::RowRecords, DriverError> {
        // Right after the session's resolution, on what it read (one round trip less).
        let snapshot = self.databases.resume(self.host, &session.entry).await?;
        let rows = match &request.mode {
            // The newest rows only, where the harness can (a tail page's cursor is then
            // anchored at its last record). A filtered tail reads every row: its records may
            // lie further back.
            Mode::Tail if !self.filter.is_active() => {
                let limit = request.limit.clamp(1, clankie_model::limits::MAX_LIMIT);
                // For a caller that reads back, one more: the record before the page, where
                // a backward read continues (the page's start cursor is anchored at it).
                let before = usize::from(self.reads_back);
                snapshot.newest_records(ctx, limit + before).await?
            }
            // After such a page: the newest rows again, as many as hold the cursor's
            // records and a page after them; all rows when it is stale (the page
            // starts again at the beginning).
            Mode::Since(Cursor::Rows(cursor)) if cursor.anchored => {
                let limit = request.limit.clamp(1, clankie_model::limits::MAX_LIMIT);
                let hashed = cursor.position.min(u64::from(u32::MAX)) as usize;
                let mut wanted = limit.saturating_add(hashed);
                loop {
                    let rows = snapshot.newest_records(ctx, wanted).await?;
                    match clankie_engine::rows::anchored_fit(&rows, cursor) {
                        _ if !rows.older_omitted => break rows,
                        Some(true) => break rows,
                        Some(false) => break snapshot.records(ctx).await?,
                        None => wanted = wanted.saturating_mul(4),
                    }
                }
            }
            _ => snapshot.records(ctx).await?,
        };
        Ok(rows)
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
    ) -> Result<(clankie_engine::rows::RowRecords, u64), DriverError> {
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
        // The session's own file names it; its content is in the others (a session without
        // messages is empty, as a database's session without rows).
        let bytes = files
            .iter()
            .filter(|(entry, _)| entry.rel != session.entry.rel)
            .map(|(_, b)| b.len() as u64)
            .sum();
        Ok((harness::parse_tree(ctx, &files), bytes))
    }
}

/// The page of a whole document caught mid-rewrite: no records and `pending_tail`; a `--since`
/// read keeps its cursor, so the next poll continues where it stood.
fn pending_document(ctx: &SourceCtx, request: &PageRequest) -> Page {
    let page = |cursor: Cursor, older: bool| Page {
        records: Vec::new(),
        cursor,
        start: None,
        older,
        more: false,
        pending_tail: true,
        reset: false,
        warnings: Vec::new(),
        screen: Vec::new(),
        unknown: 0,
        no_records: false,
        writer_version: None,
        filtered: 0,
    };
    match &request.mode {
        Mode::Since(cursor) | Mode::Before(cursor) => page(cursor.clone(), true),
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
