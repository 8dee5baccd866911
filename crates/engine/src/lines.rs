//! Lines: transcripts in the line class are split on `\n` only (Node writers leave U+2028
//! unescaped, so no other separator is safe). This module holds the per-line outcome, the
//! bounds on a line, and the dispatch from a harness to its line parser.

use super::SourceCtx;
use clankie_model::{Harness, Record, RecordBody, TextKind};

/// What one complete line gave.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// Zero (metadata) or more records, in block order.
    Records(Vec<Record>),
    /// Not valid JSON (a torn line): the parser's reason.
    Malformed(String),
}

/// Parses one complete line (without its `\n`) starting at byte `offset` of the source.
pub fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    // A writer on Windows may end lines with CRLF.
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return LineOutcome::Records(Vec::new());
    }
    match ctx.harness {
        Harness::Claude => super::claude::parse_line(ctx, offset, line),
        Harness::Codex => super::codex::parse_line(ctx, offset, line),
        Harness::Pi => super::pi::parse_line(ctx, offset, line),
        Harness::Grok => super::grok::parse_line(ctx, offset, line),
        Harness::Gemini => super::gemini::parse_line(ctx, offset, line),
        // Row sources never reach the line planner (the driver reads them as rows).
        Harness::OpenCode | Harness::GrokCli => {
            LineOutcome::Malformed("a database is not read line by line".into())
        }
    }
}

/// The notice that stands in for a line that is not valid JSON.
pub fn malformed_notice(ctx: &SourceCtx, offset: u64, len: u64, reason: &str) -> Record {
    synthetic_notice(
        ctx,
        format!("@{offset}"),
        format!("malformed record at byte {offset} ({len} bytes) skipped: {reason}"),
    )
}

/// The notice that stands in for a line over [`MAX_RECORD_BYTES`].
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
            text,
        },
    }
}
