//! The engine: pure and deterministic. Bytes in, records, pages, cursors and read requests
//! out — no file handles, no sockets, no clock, no randomness, no tokio, no SQLite. Depends on
//! `clankie_model` only among our crates; `tests/it/architecture.rs` holds that with `cargo tree`.
//!
//! - [`harness`]: one module per harness (its layout, sessions, parser, resume command) and the
//!   registry that lists them.
//! - [`lines`]: what a line gives, and the notices that stand in for a line that gives nothing.
//! - [`database`]: the queries a database harness runs, answered by the driver's copy;
//!   [`rows`]: paging over records read whole, with the row-class cursor.
//! - [`resume`]: quoting a resume command and reading a transcript's first lines for it.
//! - [`session`]: a session and its id; [`resolve`]: a user's session argument to a session.
//! - [`cursor`]: the versioned, validated cursor encoding.
//! - [`filter`]: `--kind`, `--grep` and `--after`/`--before` over the records of a page.
//! - [`redact`]: the secret rules and the redaction pass over records.
//! - [`search`]: `grep`'s matcher, the text of a record it searches, its raw-line prefilter.
//! - [`page`]: what a read asks for and what it gives back; [`plan`]: the sans-IO read planner
//!   (`next_read` / `feed`) behind `--tail`, `--head`, `--all` and `--since`.

#![forbid(unsafe_code)]

pub mod cursor;
pub mod database;
pub mod filter;
pub mod harness;
pub mod lines;
pub mod page;
pub mod plan;
pub(crate) mod records;
pub mod redact;
pub mod resolve;
pub mod resume;
pub mod rows;
pub mod search;
pub mod session;
pub mod wal;

use clankie_model::Harness;

/// What a parser needs to know about the source a line comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceCtx {
    /// The host name the user addressed (bound into cursors).
    pub host: String,
    pub harness: Harness,
    /// The session id records carry.
    pub session: String,
    /// Set when the whole file is a subagent's transcript.
    pub agent: Option<String>,
}

/// What the parsers' unit tests share: a source context and "parse this line or fail".
#[cfg(test)]
mod proptests;

#[cfg(test)]
pub(crate) mod test_support {
    use super::SourceCtx;
    use super::lines::LineOutcome;
    use clankie_model::{Harness, Record, RecordKind};

    /// The harness users call `name`.
    pub(crate) fn harness(name: &str) -> Harness {
        crate::harness::by_name(name).unwrap()
    }

    pub(crate) fn ctx(harness: Harness) -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness,
            session: "s".into(),
            agent: None,
        }
    }

    /// The records of one line that must parse, read at `offset`.
    pub(crate) fn records(harness: Harness, offset: u64, line: &str) -> Vec<Record> {
        match crate::harness::parse_line(&ctx(harness), offset, line.as_bytes()) {
            LineOutcome::Records(r) | LineOutcome::Unread(r, _) => r,
            LineOutcome::Malformed(e) => panic!("malformed: {e}"),
        }
    }

    /// (id, kind) of each record: what most parser tests compare.
    pub(crate) fn summary(records: &[Record]) -> Vec<(String, RecordKind)> {
        records.iter().map(|r| (r.id.clone(), r.kind())).collect()
    }
}
