//! The engine: pure and deterministic. Bytes in, records, pages, cursors and read requests
//! out — no file handles, no sockets, no clock, no randomness, no tokio. Imports `crate::model`
//! only; `tests/it/architecture.rs` fails the build if that slips.
//!
//! - [`lines`]: how a line becomes records (per harness), and the bounds on a line.
//! - [`claude`], [`codex`], [`pi`], [`grok`], [`gemini`]: one line parser per harness.
//! - [`opencode`], [`grokcli`]: rows of a database (as plain structs) to records; [`rows`]:
//!   paging over them with the row-class cursor.
//! - [`resume`]: each harness's resume command and where a session's directory is written.
//! - [`session`]: which listed files are sessions, and resolving a user's session argument.
//! - [`cursor`]: the versioned, validated cursor encoding.
//! - [`redact`]: the secret rules and the redaction pass over records.
//! - [`plan`]: the sans-IO read planner (`next_read` / `feed`) behind `--tail`, `--head`,
//!   `--all` and `--since`.

pub mod claude;
pub mod codex;
pub mod cursor;
pub mod gemini;
pub mod grok;
pub mod grokcli;
pub mod lines;
pub mod opencode;
pub mod pi;
pub mod plan;
pub(crate) mod records;
pub mod redact;
pub mod resume;
pub mod rows;
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
pub(crate) mod test_support {
    use super::SourceCtx;
    use super::lines::LineOutcome;
    use clankie_model::{Harness, Record, RecordKind};

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
        match super::lines::parse_line(&ctx(harness), offset, line.as_bytes()) {
            LineOutcome::Records(r) => r,
            LineOutcome::Malformed(e) => panic!("malformed: {e}"),
        }
    }

    /// (id, kind) of each record: what most parser tests compare.
    pub(crate) fn summary(records: &[Record]) -> Vec<(String, RecordKind)> {
        records.iter().map(|r| (r.id.clone(), r.kind())).collect()
    }
}
