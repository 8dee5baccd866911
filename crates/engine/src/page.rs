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
    /// The file kept shrinking or moving under the read (now `size` bytes), past the retries.
    #[error("the file kept changing while it was read (now {size} bytes); try again")]
    Moving { size: u64 },
}
