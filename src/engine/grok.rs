//! grok (stub).

use super::SourceCtx;
use super::lines::LineOutcome;

pub(crate) fn parse_line(_ctx: &SourceCtx, _offset: u64, _line: &[u8]) -> LineOutcome {
    LineOutcome::Records(Vec::new())
}
