//! Row sources (SQLite databases: OpenCode, grok-cli): what the per-harness mappings produce
//! from plain row structs, and the pager that turns those records into a [`Page`] with a
//! row-class cursor. Pure: the driver runs the queries and hands the rows in.
//!
//! A row source is re-read whole on every page (the database is small enough to copy, see
//! `crate::sqlite`), so paging is positional over the normalized records: `--tail`, `--head`,
//! `--all` and `--limit` mean what they mean for files; `--since` finds the cursor's key at its
//! position and checks the prefix hash, and a record changed or deleted before it gives `reset`.
//! A filtered page ([`page_filtered`]) counts only the records its filter keeps, and its cursor
//! ends after the last record examined.

use super::SourceCtx;
use super::cursor::{Cursor, RowCursor, binding, hash16, prefix_hash};
use super::filter::RecordFilter;
use super::lines::synthetic_notice;
use super::page::{Mode, Page, PageRequest, PlanError};
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{Record, RecordBody};

/// The records of a row source, in transcript order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowRecords {
    /// Records of final rows only, up to (not including) the first row that is not final.
    pub records: Vec<Record>,
    /// A row that is not final yet (a tool still pending or running, text still streaming)
    /// stopped the records: the page says `pending_tail`.
    pub pending: bool,
    /// Rows whose JSON did not decode: (row key, reason). Each is also a notice record.
    pub malformed: Vec<(String, String)>,
    /// A terminal recording's current screen ([`Page::screen`]).
    pub screen: Vec<String>,
    /// The source keeps no history of its own (a terminal log is all there is): a cursor that
    /// no longer matches means what the reader had seen is gone, and the reset notice says so.
    pub history_is_the_source: bool,
    /// The records are the source's newest only (a database session read for a `--tail`
    /// page from its newest rows): more precede them, and a tail page's cursor is anchored.
    pub older_omitted: bool,
    /// Where the parser met something it did not understand (an entry, a content block, a
    /// field): for each, the number of records before it. A page counts those in its range.
    pub unknown: Vec<usize>,
    /// The records before `records` that a `--since` read went past without holding them (a
    /// terminal recording replayed past its cursor, which they match): the page starts at
    /// `records[0]`.
    pub skipped: Option<Skipped>,
    /// The page bound stopped the records (a terminal recording's 64 MiB of records): more
    /// follow them, from the page's cursor.
    pub more_after: bool,
    /// How the records were read, in one line for `-v` (a terminal recording's tail: from
    /// which checkpoint, or why from its start).
    pub note: Option<String>,
}

/// Records a read went past without holding them, as a row cursor counts and hashes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skipped {
    /// How many records: the cursor's position.
    pub count: usize,
    /// Their prefix hash so far, to go on with the page's records.
    pub hasher: crate::cursor::PrefixHasher,
}

impl RowRecords {
    /// Notes that the parser met something it does not understand, after the records so far.
    pub fn unknown_here(&mut self) {
        self.unknown.push(self.records.len());
    }

    /// How many things not understood lie in the page of `records[start..end]`: those before
    /// one of its records, and those after the last record when the page reaches it.
    pub fn unknown_in(&self, start: usize, end: usize) -> u32 {
        let n = self.records.len();
        let counted = |p: usize| {
            (start <= p && p < end) || (end == n && p >= n && (start < end || start == 0))
        };
        self.unknown.iter().filter(|&&p| counted(p)).count() as u32
    }
}

/// A content hash of a record: what a cursor's prefix hash is made of. Covers everything the
/// record shows, so an edit to a returned record is noticed.
pub fn content_hash(record: &Record) -> [u8; 16] {
    let mut buf = Vec::new();
    let mut field = |bytes: &[u8]| {
        buf.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        buf.extend_from_slice(bytes);
    };
    field(record.kind().name().as_bytes());
    field(record.ts.as_deref().unwrap_or("").as_bytes());
    field(record.agent.as_deref().unwrap_or("").as_bytes());
    match &record.body {
        RecordBody::Text { text, .. } => field(text.as_bytes()),
        RecordBody::ToolCall {
            call_id,
            name,
            input,
            ..
        } => {
            field(call_id.as_bytes());
            field(name.as_bytes());
            field(input.to_string().as_bytes());
        }
        RecordBody::ToolResult {
            call_id,
            output,
            is_error,
        } => {
            field(call_id.as_bytes());
            field(output.as_bytes());
            field(&[u8::from(*is_error)]);
        }
    }
    hash16(&buf)
}

/// One page of a row source, its records redacted as the request asked.
pub fn page(ctx: &SourceCtx, rows: RowRecords, request: &PageRequest) -> Result<Page, PlanError> {
    page_filtered(ctx, rows, request, &RecordFilter::default())
}

/// [`page`], holding only the records `filter` keeps: a tail page is the `limit` newest of
/// them, a head or since page the `limit` first after its start, its cursor after the last
/// record examined; the records examined and left out are counted ([`Page::filtered`]).
pub fn page_filtered(
    ctx: &SourceCtx,
    mut rows: RowRecords,
    request: &PageRequest,
    filter: &RecordFilter,
) -> Result<Page, PlanError> {
    let binding = binding(&ctx.host, ctx.harness.name(), &ctx.session);
    let limit = request.limit.clamp(1, MAX_LIMIT);
    let hashes: Vec<[u8; 16]> = rows.records.iter().map(content_hash).collect();
    let n = rows.records.len();
    let mut warnings: Vec<String> = Vec::new();
    if let Some((key, reason)) = rows.malformed.first() {
        if request.strict {
            return Err(PlanError::MalformedRow {
                key: key.clone(),
                reason: reason.clone(),
            });
        }
        warnings.extend(
            rows.malformed
                .iter()
                .map(|(key, _)| format!("malformed row {key}; shown as a notice")),
        );
    }
    let mut reset = false;
    let mut notice = None;
    if rows.older_omitted {
        match &request.mode {
            Mode::Tail => {
                let page = newest_page(rows, &hashes, limit, binding, warnings, request.redact);
                return Ok(filtered_after(page, filter));
            }
            Mode::Since(Cursor::Rows(cursor))
                if cursor.anchored && anchored_fit(&rows, cursor) == Some(true) =>
            {
                let page =
                    newest_since_page(rows, &hashes, cursor, limit, warnings, request.redact);
                return Ok(filtered_after(page, filter));
            }
            // The driver reads all rows for anything else.
            _ => {}
        }
    }
    // Whether the page holds a record: `--grep` matches what is shown, redacted as asked.
    let keeps = |r: &Record| !filter.is_active() || filter.keeps_shown(r, request.redact);
    // The end of a page that starts at `start`: after its `limit`-th kept record.
    let end_after = |start: usize| {
        let mut found = 0;
        let mut end = start;
        while end < n && found < limit {
            found += usize::from(keeps(&rows.records[end]));
            end += 1;
        }
        end
    };
    // Records a `--since` read went past: they matched its cursor, and the page's records
    // follow them.
    let (skipped, mut hasher) = match rows.skipped.take() {
        Some(s) => (s.count, s.hasher),
        None => (0, crate::cursor::PrefixHasher::default()),
    };
    let (start, end) = match &request.mode {
        Mode::Since(_) if skipped > 0 => (0, end_after(0)),
        Mode::Tail => {
            let mut start = n;
            let mut found = 0;
            while start > 0 && found < limit {
                start -= 1;
                found += usize::from(keeps(&rows.records[start]));
            }
            (start, n)
        }
        Mode::Head => (0, end_after(0)),
        Mode::All => (0, n),
        // A backward read: the `limit` records before the cursor (every record counts; a
        // backward read takes no filter).
        Mode::Before(cursor) => match stale_reason(cursor, &rows.records, &hashes) {
            None => {
                let end = match cursor {
                    Cursor::Rows(c) if c.anchored => key_end(&rows.records, &c.key).unwrap_or(0),
                    Cursor::Rows(c) => c.position as usize,
                    Cursor::Lines(_) => 0,
                };
                (end.saturating_sub(limit), end)
            }
            Some(reason) if request.strict => return Err(PlanError::Stale { reason }),
            Some(reason) => {
                reset = true;
                notice = Some(synthetic_notice(
                    ctx,
                    format!("reset@{n}"),
                    format!(
                        "the cursor no longer matches the source ({reason}); reading back from its end"
                    ),
                ));
                (n.saturating_sub(limit), n)
            }
        },
        // A source caught mid-write that gives no record at all (a tree's state file being
        // rewritten) is not yet readable, not rewritten: nothing new until it is whole again,
        // where a reset would give every record a second time. One that gives fewer records
        // than the cursor passed was cut (a rotated log), and resets.
        Mode::Since(Cursor::Rows(given)) if rows.pending && n == 0 && given.position > 0 => {
            return Ok(Page {
                records: Vec::new(),
                cursor: Cursor::Rows(given.clone()),
                start: None,
                older: true,
                more: false,
                pending_tail: true,
                reset: false,
                warnings,
                screen: Vec::new(),
                unknown: 0,
                no_records: false,
                writer_version: None,
                filtered: 0,
            });
        }
        Mode::Since(cursor) => match stale_reason(cursor, &rows.records, &hashes) {
            None => {
                let start = match cursor {
                    Cursor::Rows(c) if c.anchored => key_end(&rows.records, &c.key).unwrap_or(0),
                    Cursor::Rows(c) => c.position as usize,
                    Cursor::Lines(_) => 0,
                };
                (start, end_after(start))
            }
            Some(reason) if request.strict => return Err(PlanError::Stale { reason }),
            Some(reason) => {
                reset = true;
                notice = Some(synthetic_notice(
                    ctx,
                    format!("reset@{n}"),
                    if rows.history_is_the_source {
                        format!(
                            "the cursor no longer matches the source ({reason}): retained history was lost (the log was truncated, rotated or rewritten); restarting from its beginning"
                        )
                    } else {
                        format!(
                            "the cursor no longer matches the source ({reason}); restarting from its beginning"
                        )
                    },
                ));
                (0, end_after(0))
            }
        },
    };
    // Where a backward read continues: before the page's first record (a tail's, a backward
    // read's).
    let start_cursor = (matches!(request.mode, Mode::Tail | Mode::Before(_))
        && !filter.is_active()
        && start < end)
        .then(|| {
            let mut before = crate::cursor::PrefixHasher::default();
            for (record, hash) in rows.records[..start].iter().zip(&hashes) {
                before.push(&record.id, hash);
            }
            Cursor::Rows(RowCursor {
                binding,
                position: start as u64,
                prefix_hash: before.finish(),
                key: start
                    .checked_sub(1)
                    .map(|i| rows.records[i].id.clone())
                    .unwrap_or_default(),
                anchored: false,
            })
        });
    for (record, hash) in rows.records[..end].iter().zip(&hashes) {
        hasher.push(&record.id, hash);
    }
    let end_cursor = RowCursor {
        binding,
        position: (skipped + end) as u64,
        prefix_hash: hasher.finish(),
        key: match end {
            0 if skipped > 0 => match &request.mode {
                Mode::Since(Cursor::Rows(given)) => given.key.clone(),
                _ => String::new(),
            },
            0 => String::new(),
            _ => rows.records[end - 1].id.clone(),
        },
        anchored: false,
    };
    // A backward page's cursor is its start, where the next backward read continues (the
    // cursor given, for a page of nothing).
    let cursor = match &request.mode {
        Mode::Before(given) if !reset => start_cursor.clone().unwrap_or_else(|| given.clone()),
        _ => Cursor::Rows(end_cursor),
    };
    let unknown = rows.unknown_in(start, end);
    let mut records: Vec<Record> = notice.into_iter().collect();
    // Moved, not copied: an `--all` page is every record, and holding them twice doubles the
    // read's memory.
    records.extend(rows.records.drain(start..end).filter(|r| keeps(r)));
    let filtered = (end - start) - (records.len() - usize::from(reset));
    // Redacted after hashing: the cursor's hashes are of what the source holds.
    if request.redact {
        super::redact::redact_records(&mut records);
    }
    Ok(Page {
        records,
        cursor,
        start: start_cursor,
        older: start > 0 || skipped > 0,
        more: end < n || rows.more_after,
        pending_tail: end == n && rows.pending,
        reset,
        warnings,
        screen: if end == n { rows.screen } else { Vec::new() },
        unknown,
        no_records: false,
        writer_version: None,
        filtered,
    })
}

/// A page read from the source's newest rows, holding only the records `filter` keeps (they
/// are redacted already, as `--grep` matches them).
fn filtered_after(mut page: Page, filter: &RecordFilter) -> Page {
    page.filtered = filter.apply(&mut page.records);
    page
}

/// The tail page of records that are the source's newest only: its cursor is anchored at its
/// last record and hashes the page's records.
fn newest_page(
    rows: RowRecords,
    hashes: &[[u8; 16]],
    limit: usize,
    binding: [u8; 16],
    warnings: Vec<String>,
    redact: bool,
) -> Page {
    let n = rows.records.len();
    let page = n.saturating_sub(limit)..n;
    let cursor = anchored_cursor(&rows.records, hashes, page.clone(), binding);
    // Where a backward read continues: anchored at the record before the page, when the
    // newest rows read hold one.
    let start = (page.start > 0 && page.start < page.end).then(|| {
        Cursor::Rows(anchored_cursor(
            &rows.records,
            hashes,
            page.start - 1..page.start,
            binding,
        ))
    });
    let pending_tail = rows.pending;
    let unknown = rows.unknown_in(page.start, page.end);
    // A tail page reaches the source's end: a terminal's current screen follows it.
    let mut out = newest_rows_page(
        &rows.records[page],
        cursor,
        false,
        pending_tail,
        warnings,
        redact,
        rows.screen,
    );
    out.unknown = unknown;
    out.start = start;
    out
}

/// An anchored cursor at the end of `records[page]`: it counts and hashes them and names the
/// last (an empty key for an empty page).
fn anchored_cursor(
    records: &[Record],
    hashes: &[[u8; 16]],
    page: std::ops::Range<usize>,
    binding: [u8; 16],
) -> RowCursor {
    RowCursor {
        binding,
        position: page.len() as u64,
        prefix_hash: prefix_hash(
            records[page.clone()]
                .iter()
                .zip(&hashes[page.clone()])
                .map(|(r, h)| (r.id.as_str(), h)),
        ),
        key: records[page]
            .last()
            .map(|r| r.id.clone())
            .unwrap_or_default(),
        anchored: true,
    }
}

/// A page of records read from the source's newest rows (so `older`), redacted as asked.
fn newest_rows_page(
    records: &[Record],
    cursor: RowCursor,
    more: bool,
    pending_tail: bool,
    warnings: Vec<String>,
    redact: bool,
    screen: Vec<String>,
) -> Page {
    let mut records = records.to_vec();
    if redact {
        super::redact::redact_records(&mut records);
    }
    Page {
        records,
        cursor: Cursor::Rows(cursor),
        start: None,
        older: true,
        more,
        pending_tail,
        reset: false,
        warnings,
        screen,
        unknown: 0,
        no_records: false,
        writer_version: None,
        filtered: 0,
    }
}

/// The page after an anchored cursor's key, from records that are the source's newest only
/// and hold the cursor's records ([`anchored_fit`]): its cursor is anchored again, at the
/// page's last record (or is the one given, for a page of nothing new).
fn newest_since_page(
    rows: RowRecords,
    hashes: &[[u8; 16]],
    given: &RowCursor,
    limit: usize,
    warnings: Vec<String>,
    redact: bool,
) -> Page {
    let n = rows.records.len();
    let start = key_end(&rows.records, &given.key).unwrap_or(n);
    let end = n.min(start + limit);
    let cursor = if end > start {
        anchored_cursor(&rows.records, hashes, start..end, given.binding)
    } else {
        given.clone()
    };
    let pending_tail = end == n && rows.pending;
    let unknown = rows.unknown_in(start, end);
    let screen = if end == n { rows.screen } else { Vec::new() };
    let mut page = newest_rows_page(
        &rows.records[start..end],
        cursor,
        end < n,
        pending_tail,
        warnings,
        redact,
        screen,
    );
    page.unknown = unknown;
    page
}

/// Whether records that may be the source's newest only hold an anchored cursor's records:
/// `Some(true)` when they do, unchanged; `Some(false)` when they do and one changed, or when
/// they are all the source's and the key is gone (the cursor is stale); `None` when older
/// records are needed to tell.
pub fn anchored_fit(rows: &RowRecords, cursor: &RowCursor) -> Option<bool> {
    let hashed = usize::try_from(cursor.position).unwrap_or(usize::MAX);
    let end = match key_end(&rows.records, &cursor.key) {
        Some(end) if end >= hashed => end,
        _ if rows.older_omitted => return None,
        _ => return Some(false),
    };
    let hashes: Vec<[u8; 16]> = rows.records[end - hashed..end]
        .iter()
        .map(content_hash)
        .collect();
    let hash = prefix_hash(
        rows.records[end - hashed..end]
            .iter()
            .zip(&hashes)
            .map(|(r, h)| (r.id.as_str(), h)),
    );
    Some(hash == cursor.prefix_hash)
}

/// Where the records after an anchored cursor's key start: just after its last occurrence.
fn key_end(records: &[Record], key: &str) -> Option<usize> {
    records.iter().rposition(|r| r.id == key).map(|i| i + 1)
}

/// Why a cursor does not fit the records, or `None` when it does.
fn stale_reason(cursor: &Cursor, records: &[Record], hashes: &[[u8; 16]]) -> Option<&'static str> {
    let Cursor::Rows(cursor) = cursor else {
        return Some("a file cursor given for a database session");
    };
    if cursor.anchored {
        // The records hashed end at the key: they must still be there, unchanged.
        let Some(end) = key_end(records, &cursor.key) else {
            return Some("the row at the cursor changed or was deleted");
        };
        let hashed = usize::try_from(cursor.position).unwrap_or(usize::MAX);
        let Some(start) = end.checked_sub(hashed) else {
            return Some("rows before the cursor were deleted");
        };
        let hash = prefix_hash(
            records[start..end]
                .iter()
                .zip(&hashes[start..end])
                .map(|(r, h)| (r.id.as_str(), h)),
        );
        return (hash != cursor.prefix_hash).then_some("rows before the cursor changed");
    }
    let Ok(position) = usize::try_from(cursor.position) else {
        return Some("the cursor is past the end of the session");
    };
    if position > records.len() {
        return Some("rows before the cursor were deleted");
    }
    if position > 0 && records[position - 1].id != cursor.key {
        return Some("the row at the cursor changed or was deleted");
    }
    let hash = prefix_hash(
        records[..position]
            .iter()
            .zip(hashes)
            .map(|(r, h)| (r.id.as_str(), h)),
    );
    (hash != cursor.prefix_hash).then_some("rows before the cursor changed")
}

/// RFC 3339 (UTC, milliseconds) of a Unix time in milliseconds, as JavaScript's
/// `toISOString` writes it. Outside jiff's range (years -9999..=9999) it is clamped to it.
pub fn rfc3339_millis(ms: i64) -> String {
    let clamped = ms.clamp(
        jiff::Timestamp::MIN.as_millisecond(),
        jiff::Timestamp::MAX.as_millisecond(),
    );
    let t = jiff::Timestamp::from_millisecond(clamped).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!(
        "{}.{:03}Z",
        t.strftime("%Y-%m-%dT%H:%M:%S"),
        ms.rem_euclid(1000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::TextKind;

    fn ctx() -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: crate::test_support::harness("opencode"),
            session: "ses_1".into(),
            agent: None,
        }
    }

    fn rec(id: &str, text: &str) -> Record {
        Record {
            id: id.into(),
            harness: crate::test_support::harness("opencode"),
            session: "ses_1".into(),
            ts: None,
            agent: None,
            sidechain: false,
            body: RecordBody::Text {
                kind: TextKind::User,
                text: text.into(),
            },
            model: None,
            usage: None,
        }
    }

    fn rows(ids: &[&str], pending: bool) -> RowRecords {
        RowRecords {
            records: ids.iter().map(|id| rec(id, id)).collect(),
            pending,
            ..Default::default()
        }
    }

    /// A filtered page counts only the records its filter keeps: a tail the newest of them,
    /// however far back; a head up to its last kept record, where the next page continues.
    #[test]
    fn a_filtered_page_holds_limit_records_the_filter_keeps() {
        let now = jiff::Timestamp::UNIX_EPOCH.to_zoned_datetime(jiff::tz::TimeZone::UTC);
        let filter = RecordFilter::parse(&[], Some("^keep"), None, None, &now).unwrap();
        let ids = [
            "keep1", "x1", "x2", "keep2", "x3", "keep3", "x4", "x5", "x6",
        ];
        let tail = page_filtered(
            &ctx(),
            rows(&ids, false),
            &req(Mode::Tail, 2, false),
            &filter,
        )
        .unwrap();
        let got: Vec<&str> = tail.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got, ["keep2", "keep3"]);
        assert_eq!(tail.filtered, 4);
        assert!(tail.older && !tail.more);
        let head = page_filtered(
            &ctx(),
            rows(&ids, false),
            &req(Mode::Head, 2, false),
            &filter,
        )
        .unwrap();
        let got: Vec<&str> = head.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got, ["keep1", "keep2"]);
        assert_eq!(head.filtered, 2);
        assert!(head.more);
        let next = page_filtered(
            &ctx(),
            rows(&ids, false),
            &req(Mode::Since(head.cursor), 2, false),
            &filter,
        )
        .unwrap();
        let got: Vec<&str> = next.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got, ["keep3"]);
        assert_eq!(next.filtered, 4);
        assert!(!next.more);
    }

    /// Walking back from a tail page by its start cursors gives every record once, in order;
    /// from a tail of the newest rows only (a database's) too, its cursor anchored; a row
    /// changed before the cursor resets (refused under `--strict`).
    #[test]
    fn walking_back_by_row_index_gives_every_record() {
        let names = ["a", "b", "c", "d", "e", "f", "g"];
        for limit in 1..=3 {
            for newest_only in [false, true] {
                let first = if newest_only {
                    let n = names.len();
                    let mut newest = rows(&names[n - limit - 1..], false);
                    newest.older_omitted = true;
                    page(&ctx(), newest, &req(Mode::Tail, limit, true)).unwrap()
                } else {
                    page(&ctx(), rows(&names, false), &req(Mode::Tail, limit, true)).unwrap()
                };
                let mut walked = vec![ids(&first).join(",")];
                let mut start = first.start.clone();
                let mut older = first.older;
                while older {
                    let cursor = start.expect("a page with older records has a start");
                    let back = page(
                        &ctx(),
                        rows(&names, false),
                        &req(Mode::Before(cursor), limit, true),
                    )
                    .unwrap();
                    assert!(back.records.len() <= limit && !back.records.is_empty());
                    assert!(back.more && !back.reset);
                    walked.push(ids(&back).join(","));
                    start = back.start.clone();
                    older = back.older;
                }
                let walked: Vec<String> = walked.into_iter().rev().collect();
                assert_eq!(walked.join(","), names.join(","), "{limit} {newest_only}");
            }
        }
        let tail = page(&ctx(), rows(&names, false), &req(Mode::Tail, 2, true)).unwrap();
        let start = tail.start.unwrap();
        let changed = rows(&["a", "b", "x", "d", "e", "f", "g"], false);
        let reset = page(&ctx(), changed, &req(Mode::Before(start.clone()), 2, false)).unwrap();
        assert!(reset.reset);
        assert_eq!(ids(&reset)[1..], ["f", "g"]);
        let changed = rows(&["a", "b", "x", "d", "e", "f", "g"], false);
        assert!(matches!(
            page(&ctx(), changed, &req(Mode::Before(start), 2, true)),
            Err(PlanError::Stale { .. })
        ));
    }

    fn req(mode: Mode, limit: usize, strict: bool) -> PageRequest {
        PageRequest {
            mode,
            limit,
            strict,
            redact: false,
        }
    }

    fn ids(page: &Page) -> Vec<&str> {
        page.records.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn a_tail_of_the_newest_records_only_continues_like_a_tail_of_all() {
        let all = rows(&["a", "b", "c", "d"], false);
        let newest = RowRecords {
            older_omitted: true,
            ..rows(&["b", "c", "d"], false)
        };
        let full = page(&ctx(), all.clone(), &req(Mode::Tail, 2, false)).unwrap();
        let tail = page(&ctx(), newest, &req(Mode::Tail, 2, false)).unwrap();
        assert_eq!(ids(&tail), ids(&full));
        assert!(tail.older && !tail.more && !tail.pending_tail);
        let Cursor::Rows(anchored) = Cursor::decode(&tail.cursor.encode()).unwrap() else {
            panic!("not a row cursor");
        };
        assert!(anchored.anchored);
        // Nothing new, then new records: read whole, from just after the key.
        let since = |records: RowRecords| {
            page(
                &ctx(),
                records,
                &req(Mode::Since(Cursor::Rows(anchored.clone())), 10, false),
            )
            .unwrap()
        };
        let same = since(all.clone());
        assert!(same.records.is_empty() && !same.reset);
        assert_eq!(same.cursor, full.cursor);
        let grown = since(rows(&["a", "b", "c", "d", "e"], false));
        assert_eq!((ids(&grown), grown.reset), (vec!["e"], false));
        // A record of the page changed, or the key gone: reset.
        let mut edited = all.clone();
        edited.records[2] = rec("c", "changed");
        assert!(since(edited).reset);
        assert!(since(rows(&["a", "b", "c"], false)).reset);
        // A record before the page changed: not seen by an anchored cursor.
        let mut before = all;
        before.records[0] = rec("a", "changed");
        assert!(!since(before).reset);
    }

    #[test]
    fn since_an_anchored_cursor_the_newest_records_that_hold_it_give_the_next_page() {
        let newest = |ids: &[&str]| RowRecords {
            older_omitted: true,
            ..rows(ids, false)
        };
        let tail = page(&ctx(), newest(&["c", "d"]), &req(Mode::Tail, 2, false)).unwrap();
        let Cursor::Rows(anchored) = tail.cursor.clone() else {
            panic!("not a row cursor");
        };
        // Too few to hold the cursor's records, or a record of them changed.
        assert_eq!(anchored_fit(&newest(&["d", "e"]), &anchored), None);
        assert_eq!(
            anchored_fit(&newest(&["b", "c", "d", "e"]), &anchored),
            Some(true)
        );
        let mut edited = newest(&["c", "d", "e"]);
        edited.records[1] = rec("d", "changed");
        assert_eq!(anchored_fit(&edited, &anchored), Some(false));
        assert_eq!(
            anchored_fit(&rows(&["a", "b"], false), &anchored),
            Some(false)
        );
        let since = |records: RowRecords, limit: usize| {
            page(
                &ctx(),
                records,
                &req(Mode::Since(tail.cursor.clone()), limit, false),
            )
            .unwrap()
        };
        let none = since(newest(&["b", "c", "d"]), 5);
        assert!(none.records.is_empty() && !none.more && !none.reset);
        assert_eq!(none.cursor, tail.cursor);
        let first = since(newest(&["c", "d", "e", "f", "g"]), 2);
        assert_eq!(
            (ids(&first), first.more, first.older),
            (vec!["e", "f"], true, true)
        );
        // Its cursor goes on, from the newest records or from all of them alike.
        let after = |records: RowRecords| {
            page(
                &ctx(),
                records,
                &req(Mode::Since(first.cursor.clone()), 5, false),
            )
            .unwrap()
        };
        assert_eq!(ids(&after(newest(&["e", "f", "g"]))), ["g"]);
        let all = after(rows(&["a", "b", "c", "d", "e", "f", "g"], false));
        assert_eq!((ids(&all), all.reset), (vec!["g"], false));
    }

    #[test]
    fn tail_head_since_and_growth() {
        let all = rows(&["a", "b", "c", "d"], true);
        let tail = page(&ctx(), all.clone(), &req(Mode::Tail, 2, false)).unwrap();
        assert_eq!(ids(&tail), ["c", "d"]);
        assert!(tail.older && !tail.more && tail.pending_tail);
        let head = page(&ctx(), all.clone(), &req(Mode::Head, 3, false)).unwrap();
        assert_eq!(ids(&head), ["a", "b", "c"]);
        assert!(!head.older && head.more && !head.pending_tail);
        let next = page(&ctx(), all, &req(Mode::Since(head.cursor), 3, false)).unwrap();
        assert_eq!(ids(&next), ["d"]);
        assert!(next.older && !next.more && next.pending_tail);
        let grown = rows(&["a", "b", "c", "d", "e"], false);
        let after = page(
            &ctx(),
            grown,
            &req(Mode::Since(next.cursor.clone()), 3, false),
        )
        .unwrap();
        assert_eq!(ids(&after), ["e"]);
        assert!(!after.reset);
        let round = Cursor::decode(&after.cursor.encode()).unwrap();
        assert_eq!(round, after.cursor);
    }

    /// A source caught mid-write (pending) that gives no record gives nothing new and keeps
    /// the cursor; once whole again, the page after the cursor.
    #[test]
    fn a_pending_source_shorter_than_the_cursor_is_not_yet_readable_not_reset() {
        let head = page(
            &ctx(),
            rows(&["a", "b", "c"], false),
            &req(Mode::All, 50, false),
        )
        .unwrap();
        for strict in [false, true] {
            let p = page(
                &ctx(),
                rows(&[], true),
                &req(Mode::Since(head.cursor.clone()), 50, strict),
            )
            .unwrap();
            assert!(!p.reset && p.records.is_empty() && p.pending_tail, "{p:?}");
            assert_eq!(p.cursor, head.cursor);
        }
        let whole = page(
            &ctx(),
            rows(&["a", "b", "c", "d"], false),
            &req(Mode::Since(head.cursor.clone()), 50, true),
        )
        .unwrap();
        assert_eq!(whole.records.len(), 1);
        assert_eq!(whole.records[0].id, "d");
        // Shorter than the cursor with records, pending or not: cut, and resets.
        for pending in [false, true] {
            let shorter = page(
                &ctx(),
                rows(&["a"], pending),
                &req(Mode::Since(head.cursor.clone()), 50, false),
            )
            .unwrap();
            assert!(shorter.reset);
        }
    }

    #[test]
    fn a_changed_or_deleted_row_before_the_key_resets() {
        let head = page(
            &ctx(),
            rows(&["a", "b", "c"], false),
            &req(Mode::All, 50, false),
        )
        .unwrap();
        let mut changed = rows(&["a", "b", "c", "d"], false);
        changed.records[1] = rec("b", "edited");
        for source in [changed, rows(&["a", "c", "d"], false), rows(&["a"], false)] {
            let p = page(
                &ctx(),
                source.clone(),
                &req(Mode::Since(head.cursor.clone()), 50, false),
            )
            .unwrap();
            assert!(p.reset);
            assert_eq!(p.records[0].kind(), clankie_model::RecordKind::Notice);
            assert_eq!(p.records[1].id, "a");
            let strict = page(
                &ctx(),
                source,
                &req(Mode::Since(head.cursor.clone()), 50, true),
            );
            assert!(matches!(strict, Err(PlanError::Stale { .. })));
        }
    }

    #[test]
    fn millis_timestamps() {
        assert_eq!(
            rfc3339_millis(1_790_768_250_670),
            "2026-09-30T11:37:30.670Z"
        );
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
    }

    /// A page redacts its records when asked, after hashing them: the cursor is the same
    /// either way, so redaction never resets a reader.
    #[test]
    fn pages_are_redacted_and_cursors_do_not_depend_on_it() {
        let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let source = RowRecords {
            records: vec![rec("a", &format!("token {secret}"))],
            ..RowRecords::default()
        };
        let mut request = req(Mode::All, 10, false);
        let plain = page(&ctx(), source.clone(), &request).unwrap();
        request.redact = true;
        let redacted = page(&ctx(), source, &request).unwrap();
        let text = |p: &Page| match &p.records[0].body {
            RecordBody::Text { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        };
        assert!(text(&plain).contains(secret));
        assert!(!text(&redacted).contains(secret));
        assert!(text(&redacted).contains("[REDACTED:github]"));
        assert_eq!(plain.cursor, redacted.cursor);
    }
}
