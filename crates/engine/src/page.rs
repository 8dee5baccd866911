//! Pages: what a reader asks for (a [`PageRequest`]: tail, head, all or since a cursor) and
//! what it gets back (a [`Page`] of records with the cursor to continue from), whichever way
//! the source is read — by byte ranges ([`crate::plan`]) or as whole records ([`crate::rows`]).

use super::cursor::Cursor;
use clankie_model::Record;

/// Which page to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The newest `limit` records.
    Tail,
    /// The first `limit` records.
    Head,
    /// Every record from the start (within the 64 MiB bound).
    All,
    /// The next `limit` records after a cursor.
    Since(Cursor),
    /// The `limit` records before a cursor (a backward read, docs/cursors.md): the page's
    /// cursor is then at its start, where the next backward read continues.
    Before(Cursor),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub mode: Mode,
    pub limit: usize,
    pub strict: bool,
    /// Replace secrets in the records with `[REDACTED:<rule>]` ([`super::redact`]); the
    /// driver applies it to each record before it is handed on.
    pub redact: bool,
}

/// One page of records, and where to continue.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub records: Vec<Record>,
    pub cursor: Cursor,
    /// A cursor at this page's start (before its first record), where a backward read of the
    /// records before the page continues ([`Mode::Before`]): set by tail and backward reads
    /// of an unfiltered page that holds a record, `None` otherwise.
    pub start: Option<Cursor>,
    /// Records exist before this page (a page that does not start at the source's start may
    /// say so conservatively).
    pub older: bool,
    /// Complete records exist after this page.
    pub more: bool,
    /// The source ends in an incomplete record, not returned.
    pub pending_tail: bool,
    /// The cursor given was stale; the page restarted from the start.
    pub reset: bool,
    /// One line per irregularity (malformed or oversized records), and the 64 MiB bound met
    /// before a filtered page was full, for stderr.
    pub warnings: Vec<String>,
    /// Records examined and left out by the read's filter (0 without one): a filtered page
    /// reads on until it holds its `limit` records the filter keeps, or the source ends, or
    /// the 64 MiB bound of one read stops it.
    pub filtered: usize,
    /// A terminal recording's current screen (its lines, wrapped rows joined, trailing blank
    /// ones left out): what the terminal shows now, not records yet. Empty for every other source, and on a page
    /// that does not reach the end.
    pub screen: Vec<String>,
    /// Entries, content blocks or fields of this page's part of the source that the harness's
    /// parser did not understand (a format newer than this version): `--strict` fails on any.
    pub unknown: u32,
    /// The whole of a non-empty source was read and gave no record: the page holds a notice
    /// saying so instead ([`crate::lines::no_records_notice`]); `--strict` fails on it.
    pub no_records: bool,
    /// The version of the CLI that wrote the session, where its transcript records it
    /// ([`crate::harness::writer_version`]).
    pub writer_version: Option<String>,
}

impl Page {
    /// What `--strict` refuses in a page that was read: entries it did not understand, or a
    /// non-empty source that gave no record.
    pub fn strict_check(&self) -> Result<(), PlanError> {
        if self.unknown > 0 {
            return Err(PlanError::Unread {
                count: self.unknown,
            });
        }
        if self.no_records {
            return Err(PlanError::NoRecords);
        }
        Ok(())
    }

    /// Marks a page that read the whole of a non-empty source (`source_bytes`) and found no
    /// record (none on it, `emitted` none streamed before it, none left out by a filter): a
    /// notice stands in for them.
    pub fn mark_no_records(&mut self, ctx: &crate::SourceCtx, source_bytes: u64, emitted: bool) {
        if source_bytes > 0
            && !emitted
            && self.records.is_empty()
            && !self.older
            && !self.more
            && !self.pending_tail
            && !self.reset
            && self.filtered == 0
        {
            self.records
                .push(crate::lines::no_records_notice(ctx, source_bytes));
            self.no_records = true;
        }
    }
}

/// Irregular sources under `--strict`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("cursor is stale: {reason}")]
    Stale { reason: &'static str },
    #[error("malformed record at byte {offset} ({len} bytes): {reason}")]
    Malformed {
        offset: u64,
        len: u64,
        reason: String,
    },
    #[error("malformed row {key}: {reason}")]
    MalformedRow { key: String, reason: String },
    #[error("record at byte {offset} is {len} bytes, over the 1 MiB limit")]
    Oversized { offset: u64, len: u64 },
    #[error("the host returned {got} bytes for a request of {want}")]
    ShortRead { got: u64, want: u64 },
    /// The page holds entries, content blocks or fields its harness's parser does not read.
    #[error("{count} entries of a kind this version does not read")]
    Unread { count: u32 },
    /// A non-empty source gave no record at all.
    #[error("the session is not empty but gave no record this version reads")]
    NoRecords,
    /// The file kept shrinking or moving under the read (now `size` bytes), past the retries.
    #[error("the file kept changing while it was read (now {size} bytes); try again")]
    Moving { size: u64 },
}
