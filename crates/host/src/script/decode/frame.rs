//! A reply's frame: the first `<nonce>:BEGIN` line and the last `<nonce>:END <rc>`, found
//! in whatever else the remote printed ([`parse_frame`]), and the typed lines between.

use super::fields::{find, rfind};
use crate::HostError;

/// Slack for rc-file noise around a frame, and for typed lines.
pub(super) const NOISE_SLACK: usize = 1024 * 1024;

/// The frame of a reply: what `uname -s` said, the script's exit code and the typed lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    pub uname: String,
    pub rc: i32,
    pub body: &'a [u8],
}

/// Finds the frame: the first `\n<nonce>:BEGIN ` line and the last `\n<nonce>:END <rc>`.
/// Missing markers mean the remote shell printed something else (a `ForceCommand`, `nologin`,
/// a broken rc file): [`HostError::ShellNotClean`] shows what came back.
pub fn parse_frame<'a>(host: &str, nonce: &str, stdout: &'a [u8]) -> Result<Frame<'a>, HostError> {
    let not_clean = || HostError::ShellNotClean {
        host: host.to_string(),
        first_bytes: first_bytes(stdout),
    };
    let begin = format!("\n{nonce}:BEGIN ").into_bytes();
    let end = format!("\n{nonce}:END ").into_bytes();
    // A reply that starts with the marker itself (no rc output, newline eaten) also counts.
    let begin_at = if stdout.starts_with(&begin[1..]) {
        Some(0)
    } else {
        find(stdout, &begin).map(|i| i + 1)
    }
    .ok_or_else(not_clean)?;
    let after_begin = begin_at + begin.len() - 1;
    let uname_len = stdout[after_begin..]
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(not_clean)?;
    let body_start = after_begin + uname_len + 1;
    let end_at = rfind(&stdout[body_start - 1..], &end)
        .map(|i| i + body_start - 1)
        .ok_or_else(not_clean)?;
    let rc_start = end_at + end.len();
    let rc_line = stdout[rc_start..]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let rc = std::str::from_utf8(rc_line)
        .ok()
        .and_then(|s| s.trim_end_matches('\r').parse::<i32>().ok())
        .ok_or_else(not_clean)?;
    // The END marker's leading newline belongs to the marker; the body keeps its own last one.
    let body = if end_at >= body_start {
        &stdout[body_start..end_at]
    } else {
        &[][..]
    };
    Ok(Frame {
        uname: String::from_utf8_lossy(&stdout[after_begin..after_begin + uname_len])
            .trim_end_matches('\r')
            .to_string(),
        rc,
        body,
    })
}

/// The non-empty lines of a frame body. A trailing `\r` is dropped: PowerShell ends lines in
/// CRLF, and no typed line of either dialect ends in one (a path holding a CR comes as `FX`).
pub(super) fn body_lines(body: &[u8]) -> std::iter::Peekable<impl Iterator<Item = &[u8]>> {
    body.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
        .peekable()
}

/// The first ~200 bytes of a reply, escaped so that nothing in them reaches a terminal raw.
fn first_bytes(stdout: &[u8]) -> String {
    let head = &stdout[..stdout.len().min(200)];
    let mut s = head.escape_ascii().to_string();
    if stdout.len() > 200 {
        s.push('…');
    }
    if s.is_empty() {
        s.push_str("(nothing)");
    }
    s
}
