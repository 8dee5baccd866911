//! NDJSON wire types: one JSON object per line with a `"type"`. Kept separate from the domain
//! types so field names stay stable when the model changes (docs/ndjson.md).

use std::io::{self, Write};

use serde::Serialize;

use super::PageInfo;
use crate::engine::plan::Page;
use crate::engine::session::SessionFile;
use crate::model::{Record, RecordBody, TextKind, display_path};

#[derive(Serialize)]
struct PageLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    cursor: String,
    older: bool,
    more: bool,
    pending_tail: bool,
    reset: bool,
}

#[derive(Serialize)]
struct SessionLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'static str,
    session: &'a str,
    path: String,
    size: u64,
    mtime: String,
}

fn line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// Writes one `record` line. Hand-written rather than derived: `--all --json` spends most of its
/// time writing strings, and [`write_str`] escapes 8 bytes at a time where serde_json goes byte
/// by byte. The output is byte-identical to serde_json's (a test holds that).
pub fn record(out: &mut impl Write, record: &Record) -> io::Result<()> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"{\"type\":\"record\",\"id\":");
    write_str(&mut buf, &record.id);
    buf.extend_from_slice(b",\"kind\":\"");
    buf.extend_from_slice(record.kind().name().as_bytes());
    buf.extend_from_slice(b"\",\"harness\":\"");
    buf.extend_from_slice(record.harness.name().as_bytes());
    buf.extend_from_slice(b"\",\"session\":");
    write_str(&mut buf, &record.session);
    buf.extend_from_slice(b",\"ts\":");
    match &record.ts {
        Some(ts) => write_str(&mut buf, ts),
        None => buf.extend_from_slice(b"null"),
    }
    if let Some(agent) = &record.agent {
        buf.extend_from_slice(b",\"agent\":");
        write_str(&mut buf, agent);
    }
    if record.sidechain {
        buf.extend_from_slice(b",\"sidechain\":true");
    }
    match &record.body {
        RecordBody::Text { kind, text } => {
            if *kind == TextKind::Thinking {
                buf.extend_from_slice(b",\"thinking\":true");
            }
            buf.extend_from_slice(b",\"text\":");
            write_str(&mut buf, text);
        }
        RecordBody::ToolCall {
            call_id,
            name,
            input,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(&mut buf, call_id);
            buf.extend_from_slice(b",\"name\":");
            write_str(&mut buf, name);
            buf.extend_from_slice(b",\"input\":");
            serde_json::to_writer(&mut buf, input).map_err(io::Error::other)?;
        }
        RecordBody::ToolResult {
            call_id,
            output,
            is_error,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(&mut buf, call_id);
            buf.extend_from_slice(b",\"output\":");
            write_str(&mut buf, output);
            buf.extend_from_slice(if *is_error {
                b",\"is_error\":true"
            } else {
                b",\"is_error\":false"
            });
        }
    }
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf)
}

/// Appends `s` as a JSON string, escaped exactly as serde_json escapes it.
fn write_str(buf: &mut Vec<u8>, s: &str) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Whether any byte of `w` is a control character, `"` or `\\` (may say yes wrongly,
    // never no wrongly: a yes only sends the bytes down the exact path below).
    let suspect = |w: u64| {
        let control = w.wrapping_sub(0x20 * LO) & !w & HI;
        let quote = (w ^ (b'"' as u64 * LO)).wrapping_sub(LO) & !(w ^ (b'"' as u64 * LO)) & HI;
        let backslash =
            (w ^ (b'\\' as u64 * LO)).wrapping_sub(LO) & !(w ^ (b'\\' as u64 * LO)) & HI;
        control | quote | backslash != 0
    };
    let bytes = s.as_bytes();
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        while i + 8 <= bytes.len() {
            let word = u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
            if suspect(word) {
                break;
            }
            i += 8;
        }
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => b"",
                _ => {
                    i += 1;
                    continue;
                }
            };
            buf.extend_from_slice(&bytes[start..i]);
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                buf.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 0xf) as usize],
                ]);
            } else {
                buf.extend_from_slice(escape);
            }
            i += 1;
            start = i;
        }
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

pub fn page(out: &mut impl Write, info: &PageInfo<'_>, page: &Page) -> io::Result<()> {
    line(
        out,
        &PageLine {
            ty: "page",
            host: info.host,
            harness: info.harness,
            session: info.session,
            cursor: page.cursor.encode(),
            older: page.older,
            more: page.more,
            pending_tail: page.pending_tail,
            reset: page.reset,
        },
    )
}

pub fn session(out: &mut impl Write, host: &str, session: &SessionFile) -> io::Result<()> {
    line(
        out,
        &SessionLine {
            ty: "session",
            host,
            harness: session.harness().name(),
            session: &session.id,
            path: display_path(&session.entry.full_path()),
            size: session.entry.size,
            mtime: super::rfc3339(session.entry.mtime),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Harness;

    #[test]
    fn strings_are_escaped_exactly_like_serde_json() {
        let mut cases: Vec<String> = (0u8..=0x7f)
            .map(|b| format!("ab{}cdefghij{}", b as char, b as char))
            .collect();
        cases.extend(
            [
                "",
                "\"",
                "\\",
                "plain ascii text that is long enough",
                "ünïcödé 日本 🎉\u{2028}",
                "\x7f\u{85}\u{202e}",
            ]
            .map(String::from),
        );
        cases.push("x\"y\\z\n".repeat(37));
        for s in cases {
            let mut buf = Vec::new();
            write_str(&mut buf, &s);
            assert_eq!(
                String::from_utf8(buf).unwrap(),
                serde_json::to_string(&s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn record_lines_parse_back() {
        let base = Record {
            id: "u#0".into(),
            harness: Harness::Claude,
            session: "s\"x".into(),
            ts: None,
            agent: Some("a1".into()),
            sidechain: true,
            body: RecordBody::ToolCall {
                call_id: "t".into(),
                name: "Bash".into(),
                input: serde_json::json!({"k": [1, "\u{1b}"]}),
            },
        };
        let mut out = Vec::new();
        record(&mut out, &base).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["session"], "s\"x");
        assert_eq!(v["input"]["k"][1], "\u{1b}");
        assert_eq!(v["sidechain"], true);
        assert_eq!(v["ts"], serde_json::Value::Null);
        assert_eq!(v["kind"], "tool_call");
    }
}
