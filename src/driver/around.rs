//! A session read around one of its records: the page that holds it, with the page before it
//! for context, found by the reads every front end already makes (the newest page; else the
//! first page and the pages after its cursor, within the bound of one run). What `ui` opens
//! when a global search's hit is chosen; nothing more than two pages is ever held.

use clankie_engine::cursor::Cursor;
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::session::SessionFile;
use clankie_host::Host;
use clankie_model::Record;
use clankie_model::limits::{MAX_LIMIT, MAX_SOURCE_BYTES};

use super::{DriverError, Reader};

/// The records read around a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Around {
    /// Oldest first: the page holding the record, after the page before it.
    pub records: Vec<Record>,
    /// The index in [`Around::records`] of the record asked for; `None` when it is no longer
    /// in the session (rewritten, or past the bound of one run), and the records are the
    /// newest page.
    pub at: Option<usize>,
    /// Records exist before the first one.
    pub earlier: bool,
    /// Complete records exist after the last one (read from [`Around::cursor`]).
    pub later: bool,
    /// Where the records after the last one start.
    pub cursor: Cursor,
}

/// Reads `session` around the record whose id is `id`, redacted when `redact`: the newest page
/// when it holds the record (the common case: what was searched is recent), else pages from
/// the start until one holds it, keeping the one before it, reading at most
/// [`MAX_SOURCE_BYTES`] of the source (the bound of one run) past the start.
pub async fn read_around<H: Host>(
    reader: &Reader<'_, H>,
    session: &SessionFile,
    id: &str,
    redact: bool,
) -> Result<Around, DriverError> {
    let request = |mode: Mode| PageRequest {
        mode,
        limit: MAX_LIMIT,
        strict: false,
        redact,
    };
    let newest = reader.read_page_whole(session, request(Mode::Tail)).await?;
    if let Some(at) = position(&newest, id) {
        return Ok(Around {
            records: newest.records,
            at: Some(at),
            earlier: newest.older,
            later: false,
            cursor: newest.cursor,
        });
    }
    let mut before: Option<Page> = None;
    let mut page = reader.read_page_whole(session, request(Mode::Head)).await?;
    let mut fetched = 0u64;
    loop {
        if let Some(at) = position(&page, id) {
            let (mut records, earlier) = match before {
                Some(before) => (before.records, before.older),
                None => (Vec::new(), page.older),
            };
            let at = at + records.len();
            records.extend(page.records);
            return Ok(Around {
                records,
                at: Some(at),
                earlier,
                later: page.more,
                cursor: page.cursor,
            });
        }
        fetched = fetched.saturating_add(source_bytes_between(&before, &page, session));
        if !page.more || fetched >= MAX_SOURCE_BYTES {
            break;
        }
        let next = reader
            .read_page_whole(session, request(Mode::Since(page.cursor.clone())))
            .await?;
        before = Some(page);
        page = next;
    }
    Ok(Around {
        records: newest.records,
        at: None,
        earlier: newest.older,
        later: false,
        cursor: newest.cursor,
    })
}

/// Where the record `id` is in `page`.
fn position(page: &Page, id: &str) -> Option<usize> {
    page.records.iter().position(|r| r.id == id)
}

/// The source bytes a page read: between two line cursors; a source read whole each time (a
/// document, a database) counts its size.
fn source_bytes_between(before: &Option<Page>, page: &Page, session: &SessionFile) -> u64 {
    let offset = |cursor: &Cursor| match cursor {
        Cursor::Lines(c) => Some(c.resume),
        _ => None,
    };
    let from = before.as_ref().map_or(Some(0), |b| offset(&b.cursor));
    match (from, offset(&page.cursor)) {
        (Some(from), Some(to)) => to.saturating_sub(from),
        _ => session.entry.size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::testing::{block_on, claude_path, prompts, resolve};
    use clankie_host::memory::MemoryHost;

    const ID: &str = "5e9b3c1a-0000-4000-8000-00000000a001";

    /// The id of the record of the `i`th prompt (its line's first block).
    fn uuid(i: usize) -> String {
        format!("7d48cbd2-6615-4dd8-87f6-{i:012}#0")
    }

    fn host_with(n: usize) -> MemoryHost {
        let host = MemoryHost::new("mem");
        host.put(claude_path(&host, ID), prompts(n));
        host
    }

    #[test]
    fn a_recent_record_is_found_in_the_newest_page() {
        let host = host_with(10);
        let session = block_on(resolve(&host, ID));
        let reader = Reader::new(&host);
        let around = block_on(read_around(&reader, &session, &uuid(7), true)).unwrap();
        assert_eq!(around.records.len(), 10);
        assert_eq!(around.at, Some(7));
        assert_eq!(around.records[7].id, uuid(7));
        assert!(!around.earlier && !around.later);
    }

    #[test]
    fn an_old_record_is_read_with_the_page_before_it_and_the_rest_left_for_later() {
        let n = MAX_LIMIT * 4;
        let host = host_with(n);
        let session = block_on(resolve(&host, ID));
        let reader = Reader::new(&host);
        let wanted = MAX_LIMIT + MAX_LIMIT / 2;
        let around = block_on(read_around(&reader, &session, &uuid(wanted), true)).unwrap();
        let at = around.at.expect("the record is found");
        assert_eq!(around.records[at].id, uuid(wanted));
        // The page before the record's is kept: its first record is the session's first.
        assert_eq!(around.records[0].id, uuid(0));
        assert_eq!(around.records.len(), 2 * MAX_LIMIT);
        assert!(!around.earlier);
        assert!(around.later);
        // The cursor continues right after the records given.
        let next = block_on(reader.read_page_whole(
            &session,
            PageRequest {
                mode: Mode::Since(around.cursor.clone()),
                limit: 1,
                strict: false,
                redact: true,
            },
        ))
        .unwrap();
        assert_eq!(next.records[0].id, uuid(2 * MAX_LIMIT));
    }

    #[test]
    fn a_record_no_longer_there_gives_the_newest_page() {
        let host = host_with(MAX_LIMIT + 5);
        let session = block_on(resolve(&host, ID));
        let reader = Reader::new(&host);
        let around = block_on(read_around(&reader, &session, "gone", true)).unwrap();
        assert_eq!(around.at, None);
        assert_eq!(around.records.last().unwrap().id, uuid(MAX_LIMIT + 4));
        assert!(around.earlier && !around.later);
    }
}
