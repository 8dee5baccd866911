//! Lines: transcripts in the line class are split on `\n` only (Node writers leave U+2028
//! unescaped, so no other separator is safe). This module holds what one line gives and the
//! notices that stand in for a line that gives no records; each harness parses its own lines
//! (`harness/<name>.rs`), and the line bound is `clankie_model::limits::MAX_RECORD_BYTES`.

use super::SourceCtx;
use clankie_model::{Record, RecordBody, TextKind};

/// What one complete line gave.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// Zero (metadata) or more records, in block order.
    Records(Vec<Record>),
    /// Records, and how many entries, content blocks or fields of the line the parser did not
    /// understand (never 0): a format that drifted, counted on the page ([`crate::page::Page::unknown`]).
    Unread(Vec<Record>, u32),
    /// Not valid JSON (a torn line): the parser's reason.
    Malformed(String),
}

impl LineOutcome {
    /// The outcome of a line that gave `records` and met `unknown` things it does not read.
    pub fn records(records: Vec<Record>, unknown: u32) -> LineOutcome {
        if unknown == 0 {
            LineOutcome::Records(records)
        } else {
            LineOutcome::Unread(records, unknown)
        }
    }

    /// The records and the count of what was not understood, or the reason the line is malformed.
    pub fn into_parts(self) -> Result<(Vec<Record>, u32), String> {
        match self {
            LineOutcome::Records(records) => Ok((records, 0)),
            LineOutcome::Unread(records, unknown) => Ok((records, unknown)),
            LineOutcome::Malformed(reason) => Err(reason),
        }
    }

    /// The records, when the line is not malformed (what was not understood is left uncounted).
    pub fn records_mut(&mut self) -> Option<&mut Vec<Record>> {
        match self {
            LineOutcome::Records(records) | LineOutcome::Unread(records, _) => Some(records),
            LineOutcome::Malformed(_) => None,
        }
    }
}

/// The notice that stands in for a non-empty source whose whole read gave no record: never a
/// silent empty success (a format this version does not read looks exactly like that).
pub fn no_records_notice(ctx: &SourceCtx, bytes: u64) -> Record {
    synthetic_notice(
        ctx,
        format!("empty@{bytes}"),
        format!(
            "this session's {bytes} bytes gave no record this version reads; \
             report it if the session is not empty"
        ),
    )
}

/// Whether `record` is the [`no_records_notice`]: the reader's word about a session, not what
/// the session holds, so a search never matches it.
pub fn is_no_records_notice(record: &Record) -> bool {
    record.kind() == clankie_model::RecordKind::Notice && record.id.starts_with("empty@")
}

/// The notice that stands in for a line that is not valid JSON.
pub fn malformed_notice(ctx: &SourceCtx, offset: u64, len: u64, reason: &str) -> Record {
    synthetic_notice(
        ctx,
        format!("@{offset}"),
        format!("malformed record at byte {offset} ({len} bytes) skipped: {reason}"),
    )
}

/// The notice that stands in for a line over the 1 MiB record bound.
pub fn oversized_notice(ctx: &SourceCtx, offset: u64, len: u64) -> Record {
    synthetic_notice(
        ctx,
        format!("@{offset}"),
        format!("record at byte {offset} is {len} bytes, over the 1 MiB limit; not parsed"),
    )
}

/// A notice made by the reader rather than read from the source.
pub fn synthetic_notice(ctx: &SourceCtx, id: String, text: String) -> Record {
    Record {
        id,
        harness: ctx.harness,
        session: ctx.session.clone(),
        ts: None,
        agent: ctx.agent.clone(),
        sidechain: ctx.agent.is_some(),
        body: RecordBody::Text {
            kind: TextKind::Notice,
            text: text.into(),
        },
        model: None,
        usage: None,
    }
}
