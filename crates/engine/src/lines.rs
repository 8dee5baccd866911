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
    /// Not valid JSON (a torn line): the parser's reason.
    Malformed(String),
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
